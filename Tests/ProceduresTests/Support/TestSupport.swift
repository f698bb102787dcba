import Dispatch
import Synchronization
import Testing
@testable import Procedures

// Shared fakes for the Procedures tests: test procedures, an event log, a concurrency gauge,
// and helpers that wait for an event with a deadline (never a sleep "to let things settle").

/// How long a test waits for something that should happen. Generous: the machine is shared
/// with builders, and a passing test never waits this long.
enum Deadline {
    static let event: Duration = .seconds(20)
}

/// The error tests make procedures fail with.
struct TestError: Error, Equatable, CustomStringConvertible {
    let tag: String
    init(_ tag: String = "test") { self.tag = tag }
    var description: String { "TestError(\(tag))" }
}

/// Thrown by the waiting helpers when the deadline passes; the test has already recorded an issue.
struct DeadlineExceeded: Error {}

/// A value shared with engine callbacks (escaping closures cannot capture a `Mutex` itself).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    var value: Value {
        get { mutex.withLock { $0 } }
        set { mutex.withLock { $0 = newValue } }
    }
    @discardableResult
    func mutate<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// An ordered record of what happened, written from any thread.
final class EventLog: Sendable {
    private let events = Mutex<[String]>([])
    func record(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
    var count: Int { events.withLock { $0.count } }
    func count(of event: String) -> Int { events.withLock { $0.filter { $0 == event }.count } }
    /// The position of the first `event`, or nil.
    func index(of event: String) -> Int? { events.withLock { $0.firstIndex(of: event) } }
}

/// Counts how many holders are inside at once, and the most there ever were.
final class Gauge: Sendable {
    private let state = Mutex<(current: Int, max: Int, total: Int)>((0, 0, 0))
    func enter() { state.withLock { $0.current += 1; $0.max = Swift.max($0.max, $0.current); $0.total += 1 } }
    func leave() { state.withLock { $0.current -= 1 } }
    var max: Int { state.withLock { $0.max } }
    var current: Int { state.withLock { $0.current } }
    var total: Int { state.withLock { $0.total } }
}

/// Resumes a continuation once, from whichever of several racing callbacks comes first.
final class OnceResumer<Value: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<Value, Never>?>(nil)
    init(_ continuation: CheckedContinuation<Value, Never>) { self.continuation.withLock { $0 = continuation } }
    func resume(_ value: Value) {
        let taken = continuation.withLock { slot in
            defer { slot = nil }
            return slot
        }
        taken?.resume(returning: value)
    }
}

/// Runs `operation` and returns its result, or records an issue and throws if it takes
/// longer than `timeout`. (The operation may not be cancellable, e.g. a continuation
/// waiting on the engine; on timeout it is left behind, which only happens when the test fails.)
func within<T: Sendable>(
    _ timeout: Duration = Deadline.event, _ what: @autoclosure () -> String = "the operation",
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async -> T
) async throws -> T {
    let result: T? = await withCheckedContinuation { continuation in
        let once = OnceResumer<T?>(continuation)
        Task { once.resume(await operation()) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatch) { once.resume(nil) }
    }
    guard let result else {
        Issue.record("\(what()) did not complete within \(timeout)", sourceLocation: sourceLocation)
        throw DeadlineExceeded()
    }
    return result
}

/// Waits until `procedure` has finished and returns its outcome, failing the test after `timeout`.
@discardableResult
func finished(
    _ procedure: Procedure, within timeout: Duration = Deadline.event,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> ProcedureOutcome {
    let outcome: ProcedureOutcome? = await withCheckedContinuation { continuation in
        let once = OnceResumer<ProcedureOutcome?>(continuation)
        procedure.whenFinished { once.resume($0) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatch) { once.resume(nil) }
    }
    guard let outcome else {
        Issue.record("\(procedure.name) did not finish within \(timeout) (state \(procedure.state))",
                     sourceLocation: sourceLocation)
        throw DeadlineExceeded()
    }
    return outcome
}

/// Waits until every procedure on `queue` has finished, failing the test after `timeout`.
func allFinished(
    _ queue: ProcedureQueue, within timeout: Duration = Deadline.event,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    try await within(timeout, "queue \(queue.name) (\(queue.count) left)", sourceLocation: sourceLocation) {
        await queue.waitUntilAllFinished()
    }
}

/// Polls `condition` until it holds, failing the test after `timeout`. For state changes
/// that have no event to wait on (e.g. "is executing now", "was deallocated").
func waitUntil(
    _ what: @autoclosure () -> String = "the condition", within timeout: Duration = Deadline.event,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("\(what()) did not hold within \(timeout)", sourceLocation: sourceLocation)
            throw DeadlineExceeded()
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}

extension Duration {
    var dispatch: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }

    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// Measures how long `body` takes.
func elapsed(_ body: () async throws -> Void) async rethrows -> Duration {
    let start = ContinuousClock.now
    try await body()
    return ContinuousClock.now - start
}

/// A queue for one test, with its own exclusivity manager so tests never share locks.
func makeQueue(
    _ name: String = "test", maxConcurrentCount: Int = ProcedureQueue.unlimited, isSuspended: Bool = false
) -> ProcedureQueue {
    let queue = ProcedureQueue(name: name, maxConcurrentCount: maxConcurrentCount, isSuspended: isSuspended)
    queue.exclusivityManager = LocalExclusivityManager()
    return queue
}

/// A procedure whose work the test controls: it records that it executed (in `events`, if
/// given, as "<name>.execute"), and either finishes at once (with `error`, if set) or waits
/// for the test to call `finish`/`cancel` (`finishesItself: false`).
final class TestProcedure: Procedure, @unchecked Sendable {
    // @unchecked Sendable: every stored property is a `let` of a Sendable type.
    let executions = Locked(0)
    let failure: (any Error)?
    let finishesItself: Bool
    let events: EventLog?
    let gauge: Gauge?

    init(_ name: String = "TestProcedure", error: (any Error)? = nil, finishesItself: Bool = true,
         events: EventLog? = nil, gauge: Gauge? = nil) {
        failure = error
        self.finishesItself = finishesItself
        self.events = events
        self.gauge = gauge
        super.init()
        self.name = name
    }

    var didExecute: Bool { executions.value > 0 }

    override func execute() {
        executions.mutate { $0 += 1 }
        gauge?.enter()
        events?.record("\(name).execute")
        guard finishesItself else { return }
        gauge?.leave()
        finish(with: failure)
    }

    /// Finishes a procedure made with `finishesItself: false`.
    func complete(with error: (any Error)? = nil) {
        gauge?.leave()
        finish(with: error)
    }
}

/// An observer that records every event as "<procedure>.<event>".
struct RecordingObserver: ProcedureObserver {
    let log: EventLog
    var delivery: ObserverDelivery = .immediate

    func didAttach(to procedure: Procedure) { log.record("\(procedure.name).didAttach") }
    func will(execute procedure: Procedure) { log.record("\(procedure.name).willExecute") }
    func did(execute procedure: Procedure) { log.record("\(procedure.name).didExecute") }
    func did(cancel procedure: Procedure, with error: (any Error)?) { log.record("\(procedure.name).didCancel") }
    func procedure(_ procedure: Procedure, willAdd newProcedure: Procedure) {
        log.record("\(procedure.name).willAdd.\(newProcedure.name)")
    }
    func procedure(_ procedure: Procedure, didAdd newProcedure: Procedure) {
        log.record("\(procedure.name).didAdd.\(newProcedure.name)")
    }
    func will(finish procedure: Procedure, with outcome: ProcedureOutcome) { log.record("\(procedure.name).willFinish") }
    func did(finish procedure: Procedure, with outcome: ProcedureOutcome) { log.record("\(procedure.name).didFinish") }
}

/// An exclusivity manager that forwards to a `LocalExclusivityManager` and records each
/// call with the state of the procedure at that moment.
final class RecordingExclusivityManager: ExclusivityManager {
    struct Call: Sendable {
        enum Kind: Sendable { case request, withdraw, release }
        let kind: Kind
        let procedure: String
        let state: Procedure.State
        let categories: Set<String>
    }

    private let inner = LocalExclusivityManager()
    private let state = Mutex<(calls: [Call], owners: [ExclusivityRequestID: (Procedure, Set<String>)])>(([], [:]))

    var calls: [Call] { state.withLock { $0.calls } }
    func calls(_ kind: Call.Kind, for name: String) -> [Call] { calls.filter { $0.kind == kind && $0.procedure == name } }
    func snapshot() -> [String: (holder: ExclusivityRequestID?, waiters: [ExclusivityRequestID])] { inner.snapshot() }

    func request(
        _ categories: Set<String>, for procedure: Procedure,
        completion: @escaping @Sendable (ExclusivityGrant?) -> Void
    ) -> ExclusivityRequestID {
        let call = Call(kind: .request, procedure: procedure.name, state: procedure.state, categories: categories)
        state.withLock { $0.calls.append(call) }
        let id = inner.request(categories, for: procedure, completion: completion)
        state.withLock { $0.owners[id] = (procedure, categories) }
        return id
    }

    func withdraw(_ request: ExclusivityRequestID) {
        record(.withdraw, request)
        inner.withdraw(request)
    }

    func release(_ request: ExclusivityRequestID) {
        record(.release, request)
        inner.release(request)
    }

    private func record(_ kind: Call.Kind, _ request: ExclusivityRequestID) {
        state.withLock { state in
            guard let (procedure, categories) = state.owners[request] else { return }
            state.calls.append(Call(kind: kind, procedure: procedure.name, state: procedure.state, categories: categories))
        }
    }
}

/// A small deterministic generator (SplitMix64), so randomised tests reproduce from their seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension ProcedureOutcome {
    /// The error as `ProcedureError`, if it is one.
    var procedureError: ProcedureError? { error as? ProcedureError }
}
