import Dispatch
import Synchronization
import Testing

@testable import Procedures

// What the ported tests share: ProcedureKit's testing vocabulary (TestProcedure, TestCondition,
// an event-concurrency tracker, a stress harness), written against Cohort's API. The waiting
// helpers wait for the event with a deadline, never a sleep.

enum Deadline {
    /// Generous: the machine is shared with builders; a passing test never waits this long.
    static let event: Duration = .seconds(30)
}

struct TestError: Error, Equatable, CustomStringConvertible {
    let tag: String
    init(_ tag: String = "test") { self.tag = tag }
    var description: String { "TestError(\(tag))" }
}

/// ProcedureKit's `FalseCondition` error: a condition that failed on purpose.
struct FalseConditionError: Error, Equatable {}

struct DeadlineExceeded: Error {}

/// A value shared with engine callbacks.
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

final class EventLog: Sendable {
    private let events = Mutex<[String]>([])
    func record(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
    var count: Int { events.withLock { $0.count } }
}

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

/// Waits until `procedure` has finished; fails the test after `timeout` (ProcedureKit's `wait(for:)`).
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
        Issue.record(
            "\(procedure.name) did not finish within \(timeout) (state \(procedure.state))",
            sourceLocation: sourceLocation)
        throw DeadlineExceeded()
    }
    return outcome
}

/// Adds `procedures` to a fresh queue and waits for all of them to finish.
@discardableResult
func run(
    _ procedures: Procedure..., within timeout: Duration = Deadline.event,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> ProcedureOutcome {
    let queue = makeQueue()
    queue.add(procedures)
    var last: ProcedureOutcome = .succeeded
    for procedure in procedures {
        last = try await finished(procedure, within: timeout, sourceLocation: sourceLocation)
    }
    return last
}

/// Polls `condition` until it holds, failing after `timeout`; for states with no event to wait on.
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

/// A one-shot signal a test can wait on with a deadline (ProcedureKit's expectations).
final class Signal: Sendable {
    private let state = Mutex<(fired: Bool, waiters: [OnceResumer<Bool>])>((false, []))

    func fire() {
        let waiters = state.withLock { state in
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(true) }
    }

    var isFired: Bool { state.withLock { $0.fired } }

    /// Waits until fired; records an issue and throws after `timeout`.
    func wait(
        _ what: String, within timeout: Duration = Deadline.event, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let fired: Bool = await withCheckedContinuation { continuation in
            let once = OnceResumer<Bool>(continuation)
            let now = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiters.append(once)
                return false
            }
            if now {
                once.resume(true)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatch) { once.resume(false) }
        }
        guard fired else {
            Issue.record("\(what) did not happen within \(timeout)", sourceLocation: sourceLocation)
            throw DeadlineExceeded()
        }
    }
}

extension Duration {
    var dispatch: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}

func makeQueue(_ name: String = "test", maxConcurrentCount: Int = ProcedureQueue.unlimited) -> ProcedureQueue {
    let queue = ProcedureQueue(name: name, maxConcurrentCount: maxConcurrentCount)
    queue.exclusivityManager = LocalExclusivityManager()
    return queue
}
