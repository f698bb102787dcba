import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import Testing

@testable import CohortWorker

/// `Worker.drain()` (SIGTERM to `cohort worker`): no new work, running attempts finish, or are
/// handed back after the drain timeout; the coordinator is told before the worker leaves.
@Suite struct DrainTests {
    private func start(_ configure: (inout WorkerConfiguration) -> Void = { _ in }) throws
        -> (FakePeer, Worker, Task<Void, any Error>)
    {
        let coordinator = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        var configuration = WorkerConfiguration(coordinator: coordinator.endpoint)
        configuration.name = "draining-worker"
        configuration.slots = 2
        configure(&configuration)
        let worker = Worker(configuration: configuration)
        return (coordinator, worker, Task { try await worker.run() })
    }

    private func nap(_ id: UInt64, seconds: Double) -> AttemptDispatch {
        AttemptDispatch(
            ref: WireAttemptRef(id: id, group: "g", path: "nap\(id)", attempt: 1), kind: "sleep",
            input: Data(#"{"seconds":\#(seconds)}"#.utf8))
    }

    @Test func aDrainingWorkerLetsItsAttemptFinishReportsItAndLeaves() async throws {
        let (coordinator, worker, running) = try start()
        defer { coordinator.stop() }
        _ = try await coordinator.ready()
        coordinator.send(.dispatch([nap(1, seconds: 0.5)]))
        _ = try await coordinator.workerMessage("started") { if case .started(let s) = $0 { s } else { nil } }
        worker.drain()
        let draining = try await coordinator.workerMessage("draining") {
            if case .draining(let r) = $0 { r } else { nil }
        }
        #expect(draining.contains("draining-worker"))
        let result = try await coordinator.result(1)
        guard case .succeeded = result.outcome else {
            Issue.record("the attempt did not finish on its own: \(result.outcome)")
            return
        }
        let goodbye = try await coordinator.workerMessage("disconnect") {
            if case .disconnect(let r) = $0 { r } else { nil }
        }
        #expect(!goodbye.contains("handed back"))
        try await within(.seconds(5), "run() to return after the drain") { try await running.value }
    }

    @Test func attemptsStillRunningAtTheDrainTimeoutAreCancelledAndHandedBack() async throws {
        let (coordinator, worker, running) = try start { $0.drainTimeout = .milliseconds(300) }
        defer { coordinator.stop() }
        _ = try await coordinator.ready()
        coordinator.send(.dispatch([nap(1, seconds: 60)]))
        _ = try await coordinator.workerMessage("started") { if case .started(let s) = $0 { s } else { nil } }
        let began = ContinuousClock.now
        worker.drain()
        let goodbye = try await coordinator.workerMessage("disconnect") {
            if case .disconnect(let r) = $0 { r } else { nil }
        }
        #expect(goodbye.contains("1 attempt handed back"))
        try await within(.seconds(5), "run() to return after the drain timeout") { try await running.value }
        #expect(ContinuousClock.now - began < .seconds(4))
        // Not reported: the coordinator runs it again elsewhere.
        #expect(!coordinator.sawResult(1))
    }

    @Test func cancellingRunDuringADrainStopsAtOnce() async throws {
        let (coordinator, worker, running) = try start { $0.drainTimeout = .seconds(600) }
        defer { coordinator.stop() }
        _ = try await coordinator.ready()
        coordinator.send(.dispatch([nap(1, seconds: 60)]))
        _ = try await coordinator.workerMessage("started") { if case .started(let s) = $0 { s } else { nil } }
        worker.drain()
        _ = try await coordinator.workerMessage("draining") { if case .draining(let r) = $0 { r } else { nil } }
        running.cancel()
        try await within(.seconds(5), "run() to return after a second stop") { try await running.value }
        let goodbye = try await coordinator.workerMessage("disconnect") {
            if case .disconnect(let r) = $0 { r } else { nil }
        }
        #expect(goodbye.contains("1 attempt handed back"))
    }

    @Test func drainBeforeRunDrainsAtOnce() async throws {
        let coordinator = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { coordinator.stop() }
        let worker = Worker(configuration: WorkerConfiguration(coordinator: coordinator.endpoint))
        worker.drain()
        try await within(.seconds(10), "run() of a drained worker to return") { try await worker.run() }
    }
}
