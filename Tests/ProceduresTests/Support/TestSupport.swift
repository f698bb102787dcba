import CohortTestSupport
import Dispatch
import Synchronization
import Testing

@testable import Procedures

// The Procedures tests' own fakes: test procedures, observers and exclusivity managers, and
// waits for a procedure or a queue. The generic ones (Locked, EventLog, Gauge, deadlines,
// `within`, `waitUntil`, the seeded generator) are in CohortTestSupport.

/// The error tests make procedures fail with.
struct TestError: Error, Equatable, CustomStringConvertible {
    let tag: String
    init(_ tag: String = "test") { self.tag = tag }
    var description: String { "TestError(\(tag))" }
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
        Issue.record(
            "\(procedure.name) did not finish within \(timeout) (state \(procedure.state))",
            sourceLocation: sourceLocation)
        throw DeadlineExceeded(what: "\(procedure.name) to finish", timeout: timeout)
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

    init(
        _ name: String = "TestProcedure", error: (any Error)? = nil, finishesItself: Bool = true,
        events: EventLog? = nil, gauge: Gauge? = nil
    ) {
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
    func will(finish procedure: Procedure, with outcome: ProcedureOutcome) {
        log.record("\(procedure.name).willFinish")
    }
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
    func calls(_ kind: Call.Kind, for name: String) -> [Call] {
        calls.filter { $0.kind == kind && $0.procedure == name }
    }
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
            state.calls.append(
                Call(kind: kind, procedure: procedure.name, state: procedure.state, categories: categories))
        }
    }
}

extension ProcedureOutcome {
    /// The error as `ProcedureError`, if it is one.
    var procedureError: ProcedureError? { error as? ProcedureError }
}
