import CohortClient
import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import Testing

/// A coordinator that goes away and comes back on the same endpoint: open calls and watches
/// wait for it (``ClientConfiguration/reconnectTimeout``), say HELLO again and are sent again.
@Suite struct ReconnectionTests {
    /// A crash (the connection drops, nothing said): the open request is answered by the
    /// coordinator that comes back, and the client says it waited and reconnected.
    @Test func anOpenRequestIsAnsweredByTheCoordinatorThatComesBack() async throws {
        let first = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*", behaviour: .init(epoch: 1))
        let changes = Locked<[ConnectionChange]>([])
        let client = try await CohortClient.connect(configuration(first.endpoint, changes: changes))
        let call = Task { try await client.status("g-1") }
        let (asked, _) = try await first.awaitRequest("STATUS") { $0 == .status(group: "g-1") }
        first.stop()
        try await waitUntil("the client to notice") { !changes.value.isEmpty }
        guard case .waiting(_, let restarting, let timeout)? = changes.value.first else {
            Issue.record("no waiting change: \(changes.value)")
            return
        }
        #expect(!restarting, "a dropped connection is not an announced restart")
        #expect(timeout == .seconds(20))

        let second = try FakePeer(coordinatorAt: first.endpoint, behaviour: .init(epoch: 2))
        defer { second.stop() }
        let hello = try await second.hello()
        #expect(hello.role == .client)
        let (again, from) = try await second.awaitRequest("STATUS sent again") { $0 == .status(group: "g-1") }
        #expect(again.requestID == asked.requestID, "sent again under its id")
        try second.reply(again.requestID, .group(groupDetail("g-1", state: .running)), to: from)
        let detail = try await within(Deadline.event, "the answer") { try await call.value }
        #expect(detail.id == "g-1")
        #expect(detail.state == .running)
        #expect(changes.value.last == .reconnected(epoch: 2))
        await client.close()
    }

    /// A coordinator that does not come back: open watches fail `connectionLost` once the
    /// reconnect timeout has passed, saying it went away.
    @Test func aCoordinatorThatDoesNotComeBackIsConnectionLostAfterTheReconnectTimeout() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        let changes = Locked<[ConnectionChange]>([])
        let client = try await CohortClient.connect(
            configuration(fake.endpoint, changes: changes) { $0.reconnectTimeout = .milliseconds(500) })
        let log = Locked<[GroupEvent]>([])
        let watching = Task { await WatchTests.collect(client.watch("g-1"), into: log) }
        let (request, from) = try await fake.awaitRequest("WATCH") { $0 == .watch(group: "g-1") }
        try fake.reply(request.requestID, .group(groupDetail("g-1")), to: from)
        try await waitUntil("the snapshot") { !log.value.isEmpty }
        let start = ContinuousClock.now
        fake.stop()
        let ending = try await within(Deadline.event, "the watch to end") { await watching.value }
        let error = ending as? ClientError
        #expect(error?.code == .connectionLost, "ended with \(String(describing: ending))")
        #expect(error?.message.contains("went away and was not back within 500 ms") == true, "\(error?.message ?? "")")
        #expect(ContinuousClock.now - start >= .milliseconds(500))
        await client.close()
    }

    /// A real coordinator with a journal stopped as SIGTERM stops it: its notice says it is
    /// restarting, the open watch waits, and once a coordinator is back on the same endpoint
    /// and state directory the watch starts over with a fresh snapshot and goes on to the end.
    @Test func aRestartingCoordinatorsWatchesWaitAndGoOn() async throws {
        let state = try temporaryStateDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let first = try await CoordinatorHandle.start { $0.stateDirectory = state }
        let endpoint = first.endpoint
        let changes = Locked<[ConnectionChange]>([])
        let client = try await CohortClient.connect(configuration(endpoint, changes: changes))
        let group = try await client.submit(specText: pendingSpec)
        let log = Locked<[GroupEvent]>([])
        let watching = Task { await WatchTests.collect(client.watch(group.id), into: log) }
        try await waitUntil("the snapshot") { !log.value.isEmpty }

        try await first.stop()
        try await waitUntil("the client to notice") { !changes.value.isEmpty }
        guard case .waiting(let reason, let restarting, _)? = changes.value.first else {
            Issue.record("no waiting change: \(changes.value)")
            return
        }
        #expect(restarting, "the notice said it restarts: \(reason)")

        let second = try await CoordinatorHandle.start {
            $0.endpoint = endpoint
            $0.stateDirectory = state
        }
        do {
            try await waitUntil("the client to reconnect") { changes.value.count >= 2 }
            guard case .reconnected? = changes.value.last else {
                Issue.record("not reconnected: \(changes.value)")
                try await second.stop()
                return
            }
            // The watch started over: a second snapshot of the same group, restored from the journal.
            try await waitUntil("a fresh snapshot") {
                log.value.filter { if case .snapshot(let detail) = $0 { detail.id == group.id } else { false } }.count
                    == 2
            }
            try await client.cancel(group.id)
            let ending = try await within(Deadline.event, "the watch to end") { await watching.value }
            #expect(ending == nil, "the watch ended with \(String(describing: ending))")
            if case .finished(.cancelled, _, _)? = log.value.last {
            } else {
                Issue.record("no cancelled end: \(log.value)")
            }
        } catch {
            await client.close()
            try? await second.stop()
            throw error
        }
        await client.close()
        try await second.stop()
    }

    /// A coordinator without a journal stops for good: what is open fails at once with
    /// `shuttingDown` (no waiting for a reconnection).
    @Test func aCoordinatorWithoutAJournalThatStopsFailsOpenWatchesShuttingDown() async throws {
        let coordinator = try await CoordinatorHandle.start()
        let changes = Locked<[ConnectionChange]>([])
        let client = try await CohortClient.connect(configuration(coordinator.endpoint, changes: changes))
        let group = try await client.submit(specText: pendingSpec)
        let log = Locked<[GroupEvent]>([])
        let watching = Task { await WatchTests.collect(client.watch(group.id), into: log) }
        try await waitUntil("the snapshot") { !log.value.isEmpty }
        let start = ContinuousClock.now
        try await coordinator.stop()
        let ending = try await within(Deadline.event, "the watch to end") { await watching.value }
        let error = ending as? ClientError
        #expect(error?.code == .shuttingDown, "ended with \(String(describing: ending))")
        #expect(ContinuousClock.now - start < .seconds(10), "at once, not after the reconnect timeout")
        #expect(changes.value.isEmpty, "no wait for a coordinator that said it stops: \(changes.value)")
        #expect(await clientError { try await client.status() }?.code == .shuttingDown)
        await client.close()
    }
}
