import CohortCoordinator
import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import Testing

/// `cohort status` lists from the journal, `cohort undrain`, and the ages of `cohort workers`
/// and `cohort locks`, against an in-process coordinator.
@Suite struct HistoryAndAgesTests {
    func withStateDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-hist-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await body(path)
    }

    private func list(_ client: FakePeer, _ filter: GroupFilter) throws -> [GroupSummary] {
        let reply = try client.request(.status(group: nil, filter: filter))
        guard case .groups(let groups) = reply else { throw UnexpectedReply(reply: reply) }
        return groups
    }

    private func runToEnd(_ client: FakePeer, _ worker: FakePeer, name: String, id: String, fail: Bool = false) throws {
        guard case .submitted = try client.submit("name: \(name)\nchildren:\n  - { name: a, run: echo }\n", id: id)
        else { throw UnexpectedReply(reply: .acknowledged) }
        let attempt = try #require(try worker.dispatched().first)
        try worker.finish(attempt, fail ? .failed(error: "boom") : .succeeded(output: Data("{}".utf8)))
    }

    /// Finished groups the scheduler no longer holds (finishedGroupRetention 0) are listed
    /// from the journal, filtered there, newest first.
    @Test func finishedGroupsTheSchedulerForgotAreListedFromTheJournal() async throws {
        try await withStateDirectory { path in
            try await withCoordinator(configure: {
                $0.stateDirectory = path
                $0.finishedGroupRetention = 0
            }) { handle in
                let worker = try handle.worker("w1")
                let client = try handle.client()
                try runToEnd(client, worker, name: "release-1", id: "r1")
                try runToEnd(client, worker, name: "nightly-1", id: "n1", fail: true)
                try runToEnd(client, worker, name: "release-2", id: "r2")
                // Forgotten by the scheduler once finished (and journaled).
                let forgotten = try eventuallyBlocking {
                    if case .error(let error) = try client.request(.status(group: "r2")) {
                        return error.code == .notFound
                    }
                    return false
                }
                #expect(forgotten)
                let all = try list(client, GroupFilter(limit: 0))
                #expect(all.map(\.id) == ["r2", "n1", "r1"])
                #expect(all.allSatisfy { $0.finishedAt != nil })
                #expect(try list(client, GroupFilter(states: [.succeeded])).map(\.id) == ["r2", "r1"])
                #expect(try list(client, GroupFilter(nameGlob: "nightly-*")).map(\.id) == ["n1"])
                #expect(try list(client, GroupFilter(limit: 1)).map(\.id) == ["r2"])
                // The running group comes from the scheduler, before the finished ones.
                guard
                    case .submitted = try client.submit("name: long\nchildren:\n  - { name: a, run: echo }\n", id: "l1")
                else { return }
                _ = try worker.dispatched()
                #expect(try list(client, GroupFilter(limit: 2)).map(\.id) == ["l1", "r2"])
                #expect(try list(client, GroupFilter(states: [.running, .pending])).map(\.id) == ["l1"])
            }
        }
    }

    @Test func withoutAJournalTheListIsWhatTheSchedulerHolds() async throws {
        try await withCoordinator { handle in
            let worker = try handle.worker("w1")
            let client = try handle.client()
            try runToEnd(client, worker, name: "one", id: "g1")
            try runToEnd(client, worker, name: "two", id: "g2", fail: true)
            try client.waitForStatus("g2") { $0.state == .failed }
            #expect(try list(client, GroupFilter()).map(\.id) == ["g2", "g1"])
            #expect(try list(client, GroupFilter(states: [.failed])).map(\.id) == ["g2"])
        }
    }

    @Test func aGlobWithoutItsClosingBracketIsRefused() async throws {
        try await withCoordinator { handle in
            let client = try handle.client()
            guard case .error(let error) = try client.request(.status(group: nil, filter: GroupFilter(nameGlob: "a[b")))
            else {
                Issue.record("a bad glob was accepted")
                return
            }
            #expect(error.code == .invalidRequest && error.message.contains("a[b"))
        }
    }

    @Test func anUndrainedWorkerGetsTheWorkThatWaited() async throws {
        try await withCoordinator { handle in
            let worker = try handle.worker("w1")
            let client = try handle.client()
            #expect(try client.request(.drain(worker: "w1")) == .acknowledged)
            guard case .workers(let workers) = try client.request(.workers) else { return }
            #expect(workers.first { $0.name == "w1" }.map { $0.state == .draining && $0.drained } == true)
            guard case .submitted = try client.submit("name: g\nchildren:\n  - { name: a, run: echo }\n", id: "g")
            else { return }
            try client.waitForStatus("g") { $0.children.first?.state == .waiting }
            #expect(try client.request(.undrain(worker: "w1")) == .acknowledged)
            let attempt = try #require(try worker.dispatched().first)
            #expect(attempt.ref.group == "g")
            guard case .workers(let after) = try client.request(.workers) else { return }
            #expect(after.first { $0.name == "w1" }.map { $0.state == .ready && !$0.drained } == true)
        }
    }

    @Test func undrainingAnUnknownOrUndrainedWorkerIsAnError() async throws {
        try await withCoordinator { handle in
            _ = try handle.worker("w1")
            let client = try handle.client()
            guard case .error(let unknown) = try client.request(.undrain(worker: "nobody")) else {
                Issue.record("undrain of an unknown worker was accepted")
                return
            }
            #expect(unknown.code == .notFound && unknown.message.contains("nobody"))
            guard case .error(let notDrained) = try client.request(.undrain(worker: "w1")) else {
                Issue.record("undrain of a worker not drained was accepted")
                return
            }
            #expect(notDrained.code == .invalidRequest && notDrained.message == "worker \"w1\" is not drained")
        }
    }

    /// A lock's holder and waiter show how long they held and waited, growing; a worker how
    /// long ago it was heard.
    @Test func locksAndWorkersShowTheirAges() async throws {
        try await withCoordinator { handle in
            let worker = try handle.worker("w1", slots: 4)
            let client = try handle.client()
            guard
                case .submitted = try client.submit(
                    """
                    name: g
                    children:
                      - { name: first, run: echo, exclusive: [db] }
                      - { name: second, run: echo, exclusive: [db] }
                    """, id: "g")
            else { return }
            _ = try worker.dispatched()
            func lock() throws -> LockInfo? {
                guard case .locks(let locks) = try client.request(.locks) else { return nil }
                return locks.first { $0.category == "db" }
            }
            let early = try #require(try lock())
            let held = try #require(early.holder?.heldFor)
            let waiting = try #require(early.waiters.first?.waitingFor)
            let grew = try eventuallyBlocking {
                guard let later = try lock() else { return false }
                return (later.holder?.heldFor ?? .zero) > held && (later.waiters.first?.waitingFor ?? .zero) > waiting
            }
            #expect(grew)
            guard case .workers(let workers) = try client.request(.workers) else { return }
            let age = try #require(workers.first { $0.name == "w1" }?.lastHeardAgo)
            #expect(age >= .zero && age < .seconds(60))
        }
    }
}
