import Dispatch
import Synchronization
import Testing

@testable import Procedures

/// ProcedureKit's `TestProcedure`: records that it executed, then finishes (after `delay`,
/// from another thread, if one is given) with `error`, producing `produced` first if given.
final class TestProcedure: Procedure, @unchecked Sendable {
    // @unchecked Sendable: every stored property is a `let` of a Sendable type.
    let delay: Duration?
    let failure: (any Error)?
    let produced: Procedure?
    let executions = Locked(0)
    let didFinishSignal = Signal()

    init(name: String = "TestProcedure", delay: Duration? = nil, error: (any Error)? = nil, produced: Procedure? = nil)
    {
        self.delay = delay
        failure = error
        self.produced = produced
        super.init()
        self.name = name
    }

    let didCancelCalled = Locked(false)
    let willFinishCalled = Locked(false)
    let didFinishCalled = Locked(false)

    var didExecute: Bool { executions.value > 0 }
    var procedureDidCancelCalled: Bool { didCancelCalled.value }
    var procedureWillFinishCalled: Bool { willFinishCalled.value }
    var procedureDidFinishCalled: Bool { didFinishCalled.value }

    override func procedureDidCancel(with reason: (any Error)?) { didCancelCalled.value = true }
    override func procedureWillFinish(with outcome: ProcedureOutcome) { willFinishCalled.value = true }

    override func execute() {
        executions.mutate { $0 += 1 }
        if let produced { produce(produced) }
        guard let delay, delay > .zero else {
            finish(with: failure)
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.dispatch) { self.finish(with: self.failure) }
    }

    override func procedureDidFinish(with outcome: ProcedureOutcome) {
        didFinishCalled.value = true
        didFinishSignal.fire()
    }
}

/// ProcedureKit's `TestCondition`: decided by a closure.
final class TestCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds only an immutable `@Sendable` closure.
    let block: @Sendable () async -> ConditionResult

    init(name: String = "TestCondition", _ block: @escaping @Sendable () async -> ConditionResult) {
        self.block = block
        super.init()
        self.name = name
    }

    override func evaluate(for procedure: Procedure) async -> ConditionResult { await block() }

    /// A satisfied test condition (like Cohort's `TrueCondition`, with a name and a closure).
    static func satisfied(_ name: String = "TrueCondition") -> TestCondition {
        TestCondition(name: name) { .satisfied }
    }
    /// A failing test condition, with `FalseConditionError` (Cohort's `FalseCondition` fails
    /// with a `conditionFailed` ProcedureError).
    static func failing(_ name: String = "FalseCondition") -> TestCondition {
        TestCondition(name: name) { .failed(FalseConditionError()) }
    }
    /// ProcedureKit's `IgnoredCondition(FalseCondition())`: Cohort's `.ignored` result.
    static func ignored(_ name: String = "IgnoredCondition") -> TestCondition { TestCondition(name: name) { .ignored } }
}

// MARK: Event concurrency tracking (ProcedureKit's EventConcurrencyTrackingRegistrar)

/// Records every event of one procedure as it begins and ends, and any event that began
/// while another was running.
final class EventConcurrencyTracker: Sendable {
    private struct State {
        var running: [String] = []
        var overlaps: [String] = []
        var history: [String] = []
    }
    private let state = Mutex(State())

    func run<T>(_ event: String, _ body: () -> T) -> T {
        state.withLock { state in
            if !state.running.isEmpty, state.overlaps.count < 20 {
                state.overlaps.append("\(event) began during \(state.running)")
            }
            state.running.append(event)
            state.history.append(event)
        }
        defer { state.withLock { state in state.running.removeAll { $0 == event } } }
        return body()
    }

    var overlaps: [String] { state.withLock { $0.overlaps } }
    var history: [String] { state.withLock { $0.history } }
}

/// Records the observer events into a tracker.
struct ConcurrencyTrackingObserver: ProcedureObserver {
    let tracker: EventConcurrencyTracker
    var onEvent: (@Sendable (String) -> Void)?

    private func track(_ event: String) {
        tracker.run(event) { onEvent?(event) }
    }

    func didAttach(to procedure: Procedure) { track("observer_didAttach") }
    func will(execute procedure: Procedure) { track("observer_willExecute") }
    func did(execute procedure: Procedure) { track("observer_didExecute") }
    func did(cancel procedure: Procedure, with error: (any Error)?) { track("observer_didCancel") }
    func procedure(_ procedure: Procedure, willAdd newProcedure: Procedure) { track("observer_procedureWillAdd") }
    func procedure(_ procedure: Procedure, didAdd newProcedure: Procedure) { track("observer_procedureDidAdd") }
    func will(finish procedure: Procedure, with outcome: ProcedureOutcome) { track("observer_willFinish") }
    func did(finish procedure: Procedure, with outcome: ProcedureOutcome) { track("observer_didFinish") }
}

/// ProcedureKit's `EventConcurrencyTrackingProcedure`: every override and observer event tracked.
final class EventConcurrencyTrackingProcedure: Procedure, @unchecked Sendable {
    // @unchecked Sendable: every stored property is a `let` of a Sendable type.
    let tracker = EventConcurrencyTracker()
    let block: @Sendable (EventConcurrencyTrackingProcedure) -> Void

    init(
        name: String = "EventConcurrencyTrackingProcedure",
        execute block: @escaping @Sendable (EventConcurrencyTrackingProcedure) -> Void = { $0.finish() }
    ) {
        self.block = block
        super.init()
        self.name = name
        addObserver(ConcurrencyTrackingObserver(tracker: tracker))
    }

    override func execute() { tracker.run("do_Execute") { block(self) } }
    override func procedureDidCancel(with reason: (any Error)?) { tracker.run("override_procedureDidCancel") {} }
    override func procedureWillFinish(with outcome: ProcedureOutcome) { tracker.run("override_procedureWillFinish") {} }
    override func procedureDidFinish(with outcome: ProcedureOutcome) { tracker.run("override_procedureDidFinish") {} }
}

/// ProcedureKit's `EventConcurrencyTrackingGroupProcedure`: the group's overrides, its
/// observer events and its child-will-finish hook tracked.
final class EventConcurrencyTrackingGroupProcedure: GroupProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds only a `let` tracker (Sendable).
    let tracker = EventConcurrencyTracker()

    init(children: [Procedure], baseObserver: ConcurrencyTrackingObserver? = nil) {
        super.init(children: children)
        name = "EventConcurrencyTrackingGroupProcedure"
        addObserver(
            baseObserver.map { ConcurrencyTrackingObserver(tracker: tracker, onEvent: $0.onEvent) }
                ?? ConcurrencyTrackingObserver(tracker: tracker))
    }

    override func execute() { tracker.run("do_Execute") { super.execute() } }
    override func procedureDidCancel(with reason: (any Error)?) {
        tracker.run("override_procedureDidCancel") { super.procedureDidCancel(with: reason) }
    }
    override func procedureWillFinish(with outcome: ProcedureOutcome) { tracker.run("override_procedureWillFinish") {} }
    override func procedureDidFinish(with outcome: ProcedureOutcome) { tracker.run("override_procedureDidFinish") {} }
    override func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
        tracker.run("override_groupWillFinishChild") { super.child(child, willFinishWithError: error) }
    }
    override func groupDidFinishChildren(with errors: [GroupError.ChildError]) {
        tracker.run("override_groupDidFinishChildren") { super.groupDidFinishChildren(with: errors) }
    }
}

/// ProcedureKit's `PKAssertProcedureNoConcurrentEvents`.
func expectNoConcurrentEvents(_ tracker: EventConcurrencyTracker, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(tracker.overlaps == [], sourceLocation: sourceLocation)
}

// MARK: Stress (ProcedureKit's StressTestCase)

/// One batch of a stress test: a queue, named counters, and a count of iterations still
/// to report (ProcedureKit's `batch.dispatchGroup`).
final class StressBatch: Sendable {
    let queue: ProcedureQueue
    let size: Int
    private let counters = Mutex<[String: Int]>([:])
    private let outstanding = Mutex<(count: Int, waiter: OnceResumer<Bool>?)>((0, nil))

    init(size: Int) {
        self.size = size
        queue = makeQueue("stress")
    }

    func enter() { outstanding.withLock { $0.count += 1 } }

    func leave() {
        let waiter = outstanding.withLock { state -> OnceResumer<Bool>? in
            state.count -= 1
            return state.count == 0 ? state.waiter : nil
        }
        waiter?.resume(true)
    }

    var left: Int { outstanding.withLock { $0.count } }

    func incrementCounter(named name: String) { counters.withLock { $0[name, default: 0] += 1 } }
    func counter(named name: String) -> Int { counters.withLock { $0[name, default: 0] } }

    /// Waits until every `enter()` has been matched by a `leave()`.
    func waitForAll(within timeout: Duration, sourceLocation: SourceLocation) async throws {
        let done: Bool = await withCheckedContinuation { continuation in
            let once = OnceResumer<Bool>(continuation)
            let now = outstanding.withLock { state -> Bool in
                if state.count == 0 { return true }
                state.waiter = once
                return false
            }
            if now {
                once.resume(true)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatch) { once.resume(false) }
        }
        guard done else {
            Issue.record(
                "\(left) of \(size) iterations did not finish within \(timeout)", sourceLocation: sourceLocation)
            throw DeadlineExceeded()
        }
    }
}

/// ProcedureKit's `stress(level:)`: `batches` batches of `batchSize` iterations each (its
/// default level, `.low`, is 2 × 10,000); after each batch, `ended` checks its counters.
func stress(
    batches: Int = 2, batchSize: Int = 10_000, within timeout: Duration = .seconds(120),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ iteration: @escaping @Sendable (StressBatch, Int) -> Void,
    ended: (StressBatch) -> Void = { _ in }
) async throws {
    for _ in 0..<batches {
        let batch = StressBatch(size: batchSize)
        // The iterations run on a Dispatch thread, not on one of the (two, on a 2-core
        // machine) threads of the concurrency pool, which the other tests' deadlines need.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                for index in 0..<batchSize { iteration(batch, index) }
                continuation.resume()
            }
        }
        try await batch.waitForAll(within: timeout, sourceLocation: sourceLocation)
        ended(batch)
    }
}
