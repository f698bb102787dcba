import CohortPeerSupport
import CohortSpec
import CohortTestSupport
import CohortWire
import Foundation
import Synchronization
import Testing

@testable import CohortWorker

/// A worker running in-process against a fake coordinator (``FakePeer``), welcomed and ready.
struct WorkerHarness: Sendable {
    let coordinator: FakePeer
    let ready: WorkerReady
    let configuration: WorkerConfiguration

    /// Starts a fake coordinator and a worker connected to it, waits for its READY, runs
    /// `body`, then stops both (also when `body` throws) and checks the worker stopped
    /// within `stopWithin`.
    static func run(
        slots: Int = 4, labels: [String] = ["linux"], killGrace: Duration = .seconds(2),
        registry: ProcedureRegistry = ProcedureRegistry(), stopWithin: Duration = .seconds(10),
        configure: (inout WorkerConfiguration) -> Void = { _ in },
        _ body: (WorkerHarness) async throws -> Void
    ) async throws {
        let coordinator = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { coordinator.stop() }
        var configuration = WorkerConfiguration(coordinator: coordinator.endpoint)
        configuration.name = "test-worker"
        configuration.slots = slots
        configuration.labels = labels
        configuration.killGrace = killGrace
        configure(&configuration)
        let worker = Worker(configuration: configuration, registry: registry)
        let running = Task { try await worker.run() }
        do {
            let ready = try await coordinator.ready()
            try await body(WorkerHarness(coordinator: coordinator, ready: ready, configuration: configuration))
        } catch {
            running.cancel()
            _ = await running.result
            throw error
        }
        running.cancel()
        try await within(stopWithin, "the worker to stop") { try await running.value }
    }

    /// Dispatches one attempt of `kind` with `input` (JSON text) and returns its task ref.
    @discardableResult
    func dispatch(
        _ kind: String, _ input: String, id: UInt64, path: String? = nil, attempt: UInt32 = 1,
        fencingTokens: [String: UInt64] = [:], timeout: Duration? = nil, holds: [String]? = nil,
        attemptToken: String? = nil
    ) -> WireAttemptRef {
        let task = WireAttemptRef(id: id, group: "g-1", path: path ?? "child-\(id)", attempt: attempt)
        coordinator.send(
            .dispatch([
                AttemptDispatch(
                    ref: task, kind: kind, input: Data(input.utf8), fencingTokens: fencingTokens, timeout: timeout,
                    holds: holds, attemptToken: attemptToken)
            ]))
        return task
    }

    /// The output of the succeeded attempt `id`, as JSON; fails the test otherwise.
    func output(_ id: UInt64, timeout: Duration = .seconds(10)) async throws -> JSONValue {
        let result = try await coordinator.result(id, timeout: timeout)
        guard case .succeeded(let output) = result.outcome else {
            throw HarnessError("task \(id) did not succeed: \(result.outcome)")
        }
        return try JSONValue(jsonData: output)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
