import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// Drives a `Scheduler` with a manual clock and records what it asks for, the way the
/// coordinator's loop would: dispatched attempts are "on" their worker until the test
/// reports them started or finished.
struct SchedulerHarness {
    var scheduler: Scheduler
    var now = Timestamp.zero
    /// Every action, in order.
    var log: [SchedulerAction] = []
    /// Attempts dispatched and not reported finished, by attempt id.
    var running: [AttemptID: (worker: SessionID, order: DispatchOrder)] = [:]
    /// Every dispatch, in order.
    var dispatches: [(worker: SessionID, order: DispatchOrder)] = []
    /// Cancels received, by attempt id.
    var cancels: [AttemptID: String] = [:]
    var finished: [String: (phase: GroupPhase, reason: String?)] = [:]

    static let builtins = ["shell", "sleep", "echo", "fail"]

    init(prefetch: Int = 2, configure: (inout SchedulerConfiguration) -> Void = { _ in }) {
        var configuration = SchedulerConfiguration()
        configuration.prefetch = prefetch
        configure(&configuration)
        scheduler = Scheduler(configuration: configuration)
    }

    mutating func record(_ actions: [SchedulerAction]) {
        log += actions
        for action in actions {
            switch action {
            case .dispatch(let worker, let order):
                precondition(running[order.ref.id] == nil, "attempt \(order.ref) dispatched twice")
                running[order.ref.id] = (worker, order)
                dispatches.append((worker, order))
            case .cancel(_, let ref, let reason):
                cancels[ref.id] = reason.text
            case .groupFinished(let group, let phase, let reason):
                precondition(finished[group] == nil, "group \(group) finished twice")
                finished[group] = (phase, reason)
            default:
                break
            }
        }
    }

    @discardableResult
    mutating func addWorker(
        _ number: UInt64, slots: Int = 2, labels: [String] = [], kinds: [String] = SchedulerHarness.builtins
    ) -> SessionID {
        let id = SessionID(number)
        record(
            scheduler.workerReady(
                id, name: "worker-\(number)", host: "host", labels: labels, slots: slots, kinds: kinds, now: now))
        return id
    }

    @discardableResult
    mutating func submit(_ spec: GroupSpec, id: String? = nil) throws -> Acceptance {
        let receipt = try scheduler.submit(spec, id: id, now: now)
        record(receipt.actions)
        return receipt
    }

    @discardableResult
    mutating func submit(yaml: String, id: String? = nil) throws -> Acceptance {
        try submit(SpecParser.parse(text: yaml, sourceName: "test.yaml"), id: id)
    }

    /// The running attempt of the child at `path` (any group unless given).
    func attempt(_ path: String, group: String? = nil) -> DispatchOrder? {
        running.values.map(\.order).filter { $0.ref.path == path && (group == nil || $0.ref.group == group) }
            .max { $0.ref.attempt < $1.ref.attempt }
    }

    /// Paths of the attempts on workers, sorted.
    var runningPaths: [String] { running.values.map(\.order.ref.path).sorted() }

    mutating func start(_ order: DispatchOrder) throws {
        let worker = running[order.ref.id]!.worker
        record(try scheduler.attemptStarted(order.ref, worker: worker, now: now))
    }

    mutating func finish(_ order: DispatchOrder, _ outcome: AttemptOutcome) throws {
        let worker = running.removeValue(forKey: order.ref.id)!.worker
        record(try scheduler.attemptFinished(order.ref, outcome: outcome, worker: worker, now: now))
    }

    mutating func succeed(_ path: String, output: JSONValue = ["ok": true], group: String? = nil) throws {
        let order = try #require(attempt(path, group: group), "\(path) is not running; running: \(runningPaths)")
        try finish(order, .succeeded(output: output.jsonData()))
    }

    mutating func fail(_ path: String, error: String = "boom", group: String? = nil) throws {
        let order = try #require(attempt(path, group: group), "\(path) is not running; running: \(runningPaths)")
        try finish(order, .failed(error: error))
    }

    /// Reports every cancelled attempt back as cancelled, as a worker would.
    mutating func acknowledgeCancels() throws {
        for (id, reason) in cancels.sorted(by: { $0.key < $1.key }) {
            cancels[id] = nil
            guard let entry = running[id] else { continue }
            try finish(entry.order, .cancelled(reason: .custom(reason)))
        }
    }

    /// Moves the clock; connected workers keep heartbeating unless `silent`.
    mutating func advance(_ duration: Duration, silent: Bool = false) {
        now = now + duration
        if !silent {
            for worker in scheduler.membership.workers.keys { scheduler.workerHeard(worker, now: now) }
        }
        record(scheduler.tick(now: now))
    }

    func child(_ group: String, _ path: String) throws -> ChildSnapshot {
        try scheduler.childSnapshot(group, path: path)
    }

    func input(of path: String) throws -> JSONValue {
        let order = try #require(attempt(path))
        return try JSONValue(jsonData: order.input)
    }
}

/// A procedure child, tersely.
func leaf(
    _ name: String, _ kind: String = "echo", with input: JSONValue = .emptyObject, after: [String] = [],
    exclusive: [String] = [], requires: [String] = [], retry: RetryPolicy? = nil,
    onWorkerLoss: WorkerLossPolicy = .retry, inject: [Injection] = []
) -> ChildSpec {
    ChildSpec(
        name, run: kind, with: input, after: after, exclusive: exclusive, requires: requires, retry: retry,
        onWorkerLoss: onWorkerLoss, inject: inject)
}
