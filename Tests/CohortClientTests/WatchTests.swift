import CohortClient
import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import Testing

/// The end of a watch: its sequence finishes after the group's end, and ends (throwing
/// `closed`) when the client closes; an unknown group ends it with `notFound`.
@Suite struct WatchTests {
    /// Collects a watch's events until the sequence ends (returns them) or throws (returns
    /// them with the error).
    static func collect(_ events: GroupEvents, into log: Locked<[GroupEvent]>) async -> (any Error)? {
        do {
            for try await event in events { log.mutate { $0.append(event) } }
            return nil
        } catch {
            return error
        }
    }

    @Test func aWatchFinishesAfterTheGroupsEnd() async throws {
        try await withCoordinator { coordinator in
            let worker = try coordinator.worker("w1")
            try await CohortClient.withClient(configuration(coordinator.endpoint)) { client in
                let group = try await client.submit(specText: pendingSpec)
                let log = Locked<[GroupEvent]>([])
                let watching = Task { await Self.collect(client.watch(group.id), into: log) }
                try await waitUntil("the snapshot") { !log.value.isEmpty }
                let attempt = try #require(try worker.dispatched().first)
                try worker.finish(attempt, .succeeded(output: Data(#"{"text":"hi"}"#.utf8)))
                // The sequence ends by itself (the loop returns), without an error.
                let ending = try await within(Deadline.event, "the watch to end") { await watching.value }
                #expect(ending == nil, "the watch ended with \(String(describing: ending))")
                let events = log.value
                guard case .snapshot(let snapshot)? = events.first else {
                    Issue.record("no snapshot first: \(events)")
                    return
                }
                #expect(snapshot.id == group.id)
                guard case .finished(let state, _, _)? = events.last else {
                    Issue.record("no end last: \(events)")
                    return
                }
                #expect(state == .succeeded)
                #expect(
                    events.contains {
                        if case .child(let child, _) = $0 {
                            child.path == "a" && child.state == .succeeded
                        } else {
                            false
                        }
                    })

                // Watching a finished group yields its snapshot and its end, then finishes.
                let again = Locked<[GroupEvent]>([])
                let second = try await within(Deadline.event, "the second watch to end") {
                    await Self.collect(client.watch(group.id), into: again)
                }
                #expect(second == nil)
                #expect(again.value.count == 2)
                if case .snapshot(let detail)? = again.value.first {
                    #expect(detail.state == .succeeded)
                } else {
                    Issue.record("\(again.value)")
                }
                if case .finished(.succeeded, _, _)? = again.value.last {} else { Issue.record("\(again.value)") }
                // And `wait` returns the final status.
                #expect(try await client.wait(group.id).state == .succeeded)
            }
        }
    }

    @Test func aWatchEndsWithClosedWhenTheClientCloses() async throws {
        try await withCoordinator { coordinator in
            let client = try await CohortClient.connect(configuration(coordinator.endpoint))
            let group = try await client.submit(specText: pendingSpec)
            let log = Locked<[GroupEvent]>([])
            let watching = Task { await Self.collect(client.watch(group.id), into: log) }
            try await waitUntil("the snapshot") { !log.value.isEmpty }
            await client.close()
            let ending = try await within(Deadline.event, "the watch to end") { await watching.value }
            #expect((ending as? ClientError)?.code == .closed, "ended with \(String(describing: ending))")
            #expect(log.value.count == 1, "only the snapshot: \(log.value)")
            // A watch started after the close ends at once, the same way.
            let late = await Self.collect(client.watch(group.id), into: Locked([]))
            #expect((late as? ClientError)?.code == .closed)
        }
    }

    @Test func aWatchOfAnUnknownGroupEndsWithNotFound() async throws {
        try await withCoordinator { coordinator in
            try await CohortClient.withClient(configuration(coordinator.endpoint)) { client in
                let log = Locked<[GroupEvent]>([])
                let ending = try await within(Deadline.event, "the watch to end") {
                    await Self.collect(client.watch("g-nope"), into: log)
                }
                #expect((ending as? ClientError)?.code == .notFound)
                #expect(log.value.isEmpty)
            }
        }
    }

    /// Stopping the iteration early unwatches: the coordinator is told.
    @Test func breakingOutOfAWatchUnwatches() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { fake.stop() }
        let client = try await CohortClient.connect(configuration(fake.endpoint))
        let watching = Task {
            for try await _ in client.watch("g-1") { break }
        }
        let (request, from) = try await fake.awaitRequest("WATCH") { $0 == .watch(group: "g-1") }
        try fake.reply(request.requestID, .group(groupDetail("g-1")), to: from)
        try await within(Deadline.event, "the loop to break") { try await watching.value }
        _ = try await fake.awaitRequest("UNWATCH") { $0 == .unwatch(group: "g-1") }
        await client.close()
    }
}
