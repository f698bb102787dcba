import CohortClient
import Foundation
import Synchronization
import Testing

/// A planned restart (SIGTERM, then start again) of a coordinator that keeps a journal: its
/// stop notice says it is restarting, so waiting clients wait for it and carry on, as after a
/// crash (docs/operations.md, "Restarting"). Without a journal they exit 69 at once
/// (FailureTests.swift).
extension EndToEnd {
    @Suite struct CoordinatorRestart {
        /// A child that sleeps, then fails: the group's outcome (exit 1) can only come from a
        /// client that followed the group across the restart.
        static let slowFailure = """
            name: slow-failure
            children:
              - name: nap-then-fail
                run: shell
                with: { command: ["sh", "-c", "sleep 3; exit 3"] }

            """

        /// `cohort submit --wait` survives SIGTERM and restart of the coordinator: it says on
        /// stderr that it waits for the restarting coordinator, then exits with the group's
        /// outcome (1, failed).
        @Test func aWaitingSubmitSurvivesAPlannedRestartAndExitsWithTheGroupsOutcome() throws {
            let cluster = try Cluster(heartbeat: "200ms", liveness: 5)
            defer { cluster.stop() }
            try cluster.addWorker(name: "steady", slots: 2)
            let file = try Scratch.write(Self.slowFailure, name: "slow-failure.yaml")
            let client = try Subprocess(
                Binaries.cohort, ["submit", file, "--wait", "--json", "--coordinator", cluster.endpoint],
                name: "waiting client")
            defer { client.stop() }
            let group = try cluster.waitForStatusOfOnlyGroup()
            try cluster.waitForStatus(group) { $0.child("nap-then-fail")?.state == "running" }

            kill(cluster.coordinator.pid, SIGTERM)
            #expect(try cluster.coordinator.wait(timeout: .seconds(10)) == 0, "the coordinator exits cleanly")
            try EndToEnd.Failures.waitUntil("the client to say it waits", timeout: .seconds(10)) {
                client.stderr.contains("is restarting; waiting up to 30 s")
            }
            #expect(client.isRunning, "the client waits for the coordinator: \(client.stderr)")

            try cluster.restartCoordinator()
            #expect(try client.wait(timeout: .seconds(60)) == 1, "the group failed: \(client.stdout)\n\(client.stderr)")
            #expect(client.stderr.contains("is back"), "\(client.stderr)")
            let final = try JSON.object(client.stdout)
            #expect(final["id"] as? String == group)
            #expect(final.state == "failed", "\(final)")
        }

        /// The Swift client: a watch open across a planned restart is told `.waiting(restarting:
        /// true)`, then `.reconnected`, and reaches the group's end (failed); one whose
        /// coordinator does not come back within `reconnectTimeout` fails with `connectionLost`
        /// (exit 69) saying so.
        @Test func theSwiftClientWaitsForARestartingCoordinatorAndGivesUpAfterItsTimeout() async throws {
            let cluster = try Cluster(heartbeat: "200ms", liveness: 5)
            defer { cluster.stop() }
            try cluster.addWorker(name: "steady", slots: 2)
            let changes = Mutex<[ConnectionChange]>([])
            var configuration = ClientConfiguration(coordinator: cluster.endpoint)
            configuration.reconnectTimeout = .seconds(20)
            configuration.onConnectionChange = { change in changes.withLock { $0.append(change) } }

            let client = try await CohortClient.connect(configuration)
            let receipt = try await client.submit(specText: Self.slowFailure)
            try cluster.waitForStatus(receipt.id) { $0.child("nap-then-fail")?.state == "running" }
            // The watch is open (its snapshot is here) before the coordinator stops.
            var events = client.watch(receipt.id).makeAsyncIterator()
            guard case .snapshot? = try await events.next() else { throw TestFailure("no snapshot") }
            kill(cluster.coordinator.pid, SIGTERM)
            #expect(try cluster.coordinator.wait(timeout: .seconds(10)) == 0)
            try EndToEnd.Failures.waitUntil("the client to be told", timeout: .seconds(10)) {
                !changes.withLock { $0 }.isEmpty
            }
            guard case .waiting(_, restarting: true, timeout: .seconds(20))? = changes.withLock({ $0.first }) else {
                Issue.record("expected .waiting(restarting: true), got \(changes.withLock { $0 })")
                return
            }
            try cluster.restartCoordinator()
            var end: GroupState?
            while let event = try await events.next() {
                if case .finished(let state, _, _) = event { end = state }
            }
            #expect(end == .failed)
            #expect(changes.withLock { $0 }.contains { if case .reconnected = $0 { true } else { false } })
            await client.close()

            // Stopped again, and not started: the next watch gives up after reconnectTimeout.
            var impatient = configuration
            impatient.reconnectTimeout = .seconds(1)
            impatient.onConnectionChange = nil
            let second = try await CohortClient.connect(impatient)
            defer { Task { await second.close() } }
            let another = try await second.submit(specText: Self.slowFailure)
            try cluster.waitForStatus(another.id) { $0.child("nap-then-fail")?.state == "running" }
            var abandoned = second.watch(another.id).makeAsyncIterator()
            guard case .snapshot? = try await abandoned.next() else { throw TestFailure("no snapshot") }
            kill(cluster.coordinator.pid, SIGTERM)
            #expect(try cluster.coordinator.wait(timeout: .seconds(10)) == 0)
            do {
                while try await abandoned.next() != nil {}
                Issue.record("the watch ended without an error")
            } catch let error as ClientError {
                #expect(error.code == .connectionLost && error.exitCode == 69, "\(error)")
                #expect(error.message.contains("said it was restarting but was not back within 1 s"), "\(error)")
            }
        }

        /// Without a journal the Swift client is told the coordinator is shutting down, at once.
        @Test func withoutAJournalTheSwiftClientFailsAtOnceWithShuttingDown() async throws {
            let cluster = try Cluster(coordinatorArguments: ["--no-journal"], heartbeat: "200ms", liveness: 5)
            defer { cluster.stop() }
            try cluster.addWorker(name: "steady", slots: 2)
            let changes = Mutex<[ConnectionChange]>([])
            var configuration = ClientConfiguration(coordinator: cluster.endpoint)
            configuration.onConnectionChange = { change in changes.withLock { $0.append(change) } }
            let client = try await CohortClient.connect(configuration)
            defer { Task { await client.close() } }
            let receipt = try await client.submit(specText: Self.slowFailure)
            try cluster.waitForStatus(receipt.id) { $0.child("nap-then-fail")?.state == "running" }
            var events = client.watch(receipt.id).makeAsyncIterator()
            guard case .snapshot? = try await events.next() else { throw TestFailure("no snapshot") }
            let stoppedAt = ContinuousClock.now
            kill(cluster.coordinator.pid, SIGTERM)
            do {
                while try await events.next() != nil {}
                Issue.record("the watch ended without an error")
            } catch let error as ClientError {
                #expect(error.code == .shuttingDown && error.exitCode == 69, "\(error)")
            }
            #expect(ContinuousClock.now - stoppedAt < .seconds(10), "not after a reconnect timeout")
            // (A dropped connection seen a moment before the notice may be reported; a restart never.)
            let told = changes.withLock { $0 }
            #expect(!told.contains { if case .waiting(_, restarting: true, _) = $0 { true } else { false } }, "\(told)")
        }
    }
}
