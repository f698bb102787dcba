import CohortCoordinator
import CohortJournal
import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import GRDB
import Logging
import Testing

/// The coordinator and its journal: what a client is told is already on disk.
@Suite struct JournalingTests {
    func withStateDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-coord-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await body(path)
    }

    /// Every SUBMITTED a client receives names a group the journal already holds, and
    /// every DISPATCH a worker receives an attempt the journal already holds.
    @Test func aGroupIDAndADispatchAreOnDiskBeforeTheyAreSent() async throws {
        try await withStateDirectory { path in
            try await withCoordinator(configure: { $0.stateDirectory = path }) { handle in
                let journalFile = path + "/journal.sqlite"
                let worker = try handle.worker("w1")
                let client = try handle.client()
                for index in 0..<5 {
                    guard
                        case .submitted(let receipt) = try client.submit(
                            "name: g\(index)\nchildren:\n  - { name: a, run: echo }\n")
                    else {
                        Issue.record("not submitted")
                        return
                    }
                    // Read by another connection, as a crash right now would leave it.
                    let journal = try Journal.openExisting(at: journalFile)
                    defer { journal.close() }
                    let contents = try journal.load()
                    #expect(contents.groups.contains { $0.id == receipt.id })
                    guard case .toWorker(.dispatch(let tasks))? = try worker.receive(timeout: Deadline.event) else {
                        Issue.record("no dispatch")
                        return
                    }
                    let group = try #require(try journal.load().groups.first { $0.id == receipt.id })
                    for task in tasks {
                        #expect(
                            group.children.contains { $0.attemptID.rawValue == task.ref.id && $0.state == .inFlight })
                    }
                }
            }
        }
    }

    /// While a commit cannot finish (another connection holds the journal's write lock), the
    /// turn's receipt and dispatch are held; they go out once it is done, and are then on disk.
    @Test func aTurnsMessagesWaitForItsCommit() async throws {
        try await withStateDirectory { path in
            try await withCoordinator(configure: { $0.stateDirectory = path }) { handle in
                let journalFile = path + "/journal.sqlite"
                let worker = try handle.worker("w1")
                let client = try handle.client()
                var settings = Configuration()
                settings.allowsUnsafeTransactions = true  // a transaction held across calls
                let blocker = try DatabaseQueue(path: journalFile, configuration: settings)
                try blocker.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
                let submission = Submission(
                    document: "name: held\nchildren:\n  - { name: a, run: echo }\n", format: .yaml)
                try client.send(.clientRequest(ClientRequest(requestID: 1, .submit(submission))))
                // Nothing can come before the commit, which waits for the lock.
                #expect(try client.receive(timeout: .milliseconds(300)) == nil)
                #expect(try worker.receive(timeout: .milliseconds(50)) == nil)
                try blocker.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
                try blocker.close()
                let receipt = try client.expect("SUBMITTED") { message -> SubmitReceipt? in
                    if case .coordinatorReply(let reply) = message, case .submitted(let receipt) = reply.kind {
                        return receipt
                    }
                    return nil
                }
                let tasks = try worker.dispatched()
                let journal = try Journal.openExisting(at: journalFile)
                defer { journal.close() }
                let group = try #require(try journal.load().groups.first { $0.id == receipt.id })
                #expect(
                    tasks.allSatisfy { task in
                        group.children.contains { $0.attemptID.rawValue == task.ref.id && $0.state == .inFlight }
                    })
            }
        }
    }

    /// With turns committed while the loop goes on (pipelined, group-committed), still nothing
    /// goes out before it is on disk: submissions sent back to back get receipts of groups the
    /// journal holds, dispatches name attempts it holds, and a status that reports a group
    /// finished comes after its outcome is on disk. Replies keep the order of the requests.
    @Test func pipelinedTurnsSendNothingBeforeItIsOnDisk() async throws {
        try await withStateDirectory { path in
            try await withCoordinator(configure: { $0.stateDirectory = path }) { handle in
                let journalFile = path + "/journal.sqlite"
                let worker = try handle.worker("w1")
                let client = try handle.client()
                let count = 30
                for index in 1...count {
                    let submission = Submission(
                        document: "name: p\(index)\nchildren:\n  - { name: a, run: echo }\n", format: .yaml,
                        sourceName: "p.yaml")
                    try client.send(.clientRequest(ClientRequest(requestID: UInt64(index), .submit(submission))))
                }
                let journal = try Journal.openExisting(at: journalFile)
                defer { journal.close() }
                var groups: [String] = []
                while groups.count < count {
                    let reply = try client.expect("SUBMITTED") { message -> CoordinatorReply? in
                        if case .coordinatorReply(let reply) = message { return reply }
                        return nil
                    }
                    guard case .submitted(let receipt) = reply.kind else {
                        Issue.record("not submitted: \(reply.kind)")
                        return
                    }
                    #expect(reply.requestID == UInt64(groups.count + 1))
                    #expect(try journal.load().groups.contains { $0.id == receipt.id })
                    groups.append(receipt.id)
                }
                // The worker has a few slots: it finishes what it got, back to back, to get more.
                var finished = 0
                while finished < count {
                    let batch = try worker.dispatched()
                    let onDisk = try journal.load().groups.flatMap(\.children)
                    for task in batch {
                        #expect(onDisk.contains { $0.attemptID.rawValue == task.ref.id && $0.state == .inFlight })
                    }
                    for task in batch { try worker.finish(task, .succeeded(output: Data("{}".utf8))) }
                    finished += batch.count
                }
                for group in groups {
                    _ = try client.waitForStatus(group) { $0.state == .succeeded }
                    #expect(try journal.load().groups.first { $0.id == group }?.outcome?.phase == .succeeded)
                }
            }
        }
    }

    /// The fencing counter of a category is on disk with the dispatch that carries its token.
    @Test func fencingCountersAreJournaledWithTheirDispatch() async throws {
        try await withStateDirectory { path in
            try await withCoordinator(configure: { $0.stateDirectory = path }) { handle in
                let worker = try handle.worker("w1")
                let client = try handle.client()
                _ = try client.submit("name: locked\nchildren:\n  - { name: a, run: echo, exclusive: [db] }\n")
                guard case .toWorker(.dispatch(let tasks))? = try worker.receive(timeout: Deadline.event) else {
                    Issue.record("no dispatch")
                    return
                }
                let token = try #require(tasks.first?.fencingTokens["db"])
                let journal = try Journal.openExisting(at: path + "/journal.sqlite")
                defer { journal.close() }
                #expect(try journal.load().lastTokens["db"] == token)
                #expect(token > journal.epoch << 32)
            }
        }
    }

    /// Two coordinators cannot share a state directory; the second one's run() throws at once.
    @Test func aSecondCoordinatorOnTheStateDirectoryFails() async throws {
        try await withStateDirectory { path in
            try await withCoordinator(configure: { $0.stateDirectory = path }) { _ in
                var configuration = CoordinatorConfiguration(endpoint: "tcp://127.0.0.1:*")
                configuration.stateDirectory = path
                let second = Coordinator(configuration: configuration, logger: Logger(label: "test.second"))
                let error = await #expect(throws: JournalError.self) { try await second.run() }
                #expect(error?.code == .locked)
            }
        }
    }
}
