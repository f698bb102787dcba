import CohortSpec
import CohortWire
import Foundation
import Synchronization
@testable import CohortWorker

/// A worker running in-process against a ``FakeCoordinator``, welcomed and ready.
struct WorkerHarness: Sendable {
    let coordinator: FakeCoordinator
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
        let coordinator = try FakeCoordinator()
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
        fencingTokens: [String: UInt64] = [:], timeout: Duration? = nil
    ) -> WireAttemptRef {
        let task = WireAttemptRef(id: id, group: "g-1", path: path ?? "child-\(id)", attempt: attempt)
        coordinator.send(.dispatch([
            AttemptDispatch(ref: task, kind: kind, input: Data(input.utf8), fencingTokens: fencingTokens, timeout: timeout),
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

/// Runs `body`, failing with a timeout naming `what` if it takes longer than `limit`.
///
/// `body` runs as a task of its own, so a body that ignores cancellation (awaiting another
/// task's value) cannot hold the test past the limit.
func within<T: Sendable>(_ limit: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let once = Locked<CheckedContinuation<T, any Error>?>(nil)
    return try await withCheckedThrowingContinuation { continuation in
        once.value = continuation
        @Sendable func resume(_ result: Result<T, any Error>) {
            let taken = once.mutate { slot in
                defer { slot = nil }
                return slot
            }
            taken?.resume(with: result)
        }
        Task {
            do { resume(.success(try await body())) } catch { resume(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: limit)
            resume(.failure(InboxTimeout(what: what, timeout: limit)))
        }
    }
}

/// Whether a process with `pid` still exists (a zombie counts as gone).
func processExists(_ pid: Int32) -> Bool {
    guard kill(pid, 0) == 0 || errno == EPERM else { return false }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")")
    else { return true }
    let state = stat[stat.index(close, offsetBy: 2)]
    return state != "Z" && state != "X"
}

/// Waits, up to `limit`, until `condition` holds; checks every 10 ms. Returns whether it did.
func eventually(_ limit: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
