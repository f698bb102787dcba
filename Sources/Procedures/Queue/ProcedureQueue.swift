import DequeModule
import Dispatch
import Synchronization

/// Hooks into a queue's life, ProcedureKit's `ProcedureQueueDelegate`. Called on the thread
/// where the event happens; each method has an empty default.
public protocol ProcedureQueueDelegate: AnyObject, Sendable {
    func procedureQueue(_ queue: ProcedureQueue, willAdd procedure: Procedure)
    func procedureQueue(_ queue: ProcedureQueue, didAdd procedure: Procedure)
    func procedureQueue(_ queue: ProcedureQueue, willFinish procedure: Procedure, with outcome: ProcedureOutcome)
    func procedureQueue(_ queue: ProcedureQueue, didFinish procedure: Procedure, with outcome: ProcedureOutcome)
}

extension ProcedureQueueDelegate {
    public func procedureQueue(_ queue: ProcedureQueue, willAdd procedure: Procedure) {}
    public func procedureQueue(_ queue: ProcedureQueue, didAdd procedure: Procedure) {}
    public func procedureQueue(_ queue: ProcedureQueue, willFinish procedure: Procedure, with outcome: ProcedureOutcome)
    {}
    public func procedureQueue(_ queue: ProcedureQueue, didFinish procedure: Procedure, with outcome: ProcedureOutcome)
    {}
}

/// Runs procedures: ProcedureKit's `ProcedureQueue`, built on a lock and Dispatch rather
/// than on Foundation's `OperationQueue`.
///
/// A procedure added here moves through its pipeline (dependencies, conditions, locks) and,
/// once ready, waits for a slot: at most `maxConcurrentCount` procedures execute at once.
/// Ready procedures start in the order they became ready. Runners are Dispatch work items
/// that start ready procedures one after another, so a procedure that finishes inside
/// `execute()` costs no thread hop.
///
/// While `isSuspended`, nothing starts, no condition is evaluated and no lock is requested.
///
/// Thread-safety: every member may be called from any thread.
public final class ProcedureQueue: @unchecked Sendable {
    // @unchecked Sendable: mutable state is in `state` (a Mutex) and `suspended` (an atomic
    // flag read without the lock; every decision that must not race re-checks it under the lock).

    /// The default for `maxConcurrentCount`: no limit beyond the runners' own cap.
    public static let unlimited = Int.max

    struct State {
        var maxConcurrentCount: Int
        var members = Members()
        var ready = Deque<Procedure>()
        var executing = 0
        var runners = 0
        var busyRunners = 0
        var deferred: [Procedure] = []
        /// While positive, a `cancelAll` is under way: no procedure starts.
        var cancelling = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var exclusivityManager: any ExclusivityManager = LocalExclusivityManager.shared
    }

    let state: Mutex<State>
    private let suspended: Atomic<Bool>
    private let runnerQueue: DispatchQueue
    /// At most this many runner work items at once, however large `maxConcurrentCount` is.
    private static let runnerCap = 64

    /// A name for logs.
    public let name: String

    public init(
        name: String = "ProcedureQueue", maxConcurrentCount: Int = ProcedureQueue.unlimited, isSuspended: Bool = false,
        qos: DispatchQoS.QoSClass = .default
    ) {
        precondition(maxConcurrentCount > 0, "maxConcurrentCount must be at least 1")
        self.name = name
        state = Mutex(State(maxConcurrentCount: maxConcurrentCount))
        suspended = Atomic(isSuspended)
        runnerQueue = DispatchQueue.global(qos: qos)
    }

    // MARK: Settings

    /// How many procedures may execute at once. Raising it starts waiting procedures.
    public var maxConcurrentCount: Int {
        get { state.withLock { $0.maxConcurrentCount } }
        set {
            precondition(newValue > 0, "maxConcurrentCount must be at least 1")
            state.withLock { $0.maxConcurrentCount = newValue }
            scheduleRunners()
        }
    }

    /// While true, nothing starts, no condition is evaluated and no lock is requested.
    public var isSuspended: Bool {
        get { suspended.load(ordering: .acquiring) }
        set {
            if let deferred = setSuspended(newValue) { finishResuming(deferred) }
        }
    }

    /// Sets the flag, and on resuming returns the procedures held back, for
    /// `finishResuming(_:)`. A group calls it under its own lock, so that its decision and
    /// the flag cannot be torn apart by a racing call; the procedures move on after.
    func setSuspended(_ newValue: Bool) -> [Procedure]? {
        state.withLock { state in
            suspended.store(newValue, ordering: .releasing)
            guard !newValue else { return nil }
            defer { state.deferred = [] }
            return state.deferred
        }
    }

    /// Moves on what a resume (`setSuspended(false)`) released.
    func finishResuming(_ deferred: [Procedure]) {
        for procedure in deferred { procedure.advance() }
        scheduleRunners()
    }

    /// Hooks into the queue's life. Set it before adding procedures: it is read without a
    /// lock on the hot path.
    public weak var delegate: (any ProcedureQueueDelegate)? {
        get { delegateStorage }
        set { delegateStorage = newValue }
    }

    // nonisolated(unsafe): written once, before procedures are added (the documented rule
    // for `delegate`); every later read happens after that write through the queue's lock
    // or the procedure's, which order it.
    private nonisolated(unsafe) weak var delegateStorage: (any ProcedureQueueDelegate)?

    /// Grants mutual exclusion to this queue's procedures. Defaults to
    /// `LocalExclusivityManager.shared`; a Cohort worker sets its cluster-wide manager.
    public var exclusivityManager: any ExclusivityManager {
        get { state.withLock { $0.exclusivityManager } }
        set { state.withLock { $0.exclusivityManager = newValue } }
    }

    /// How many procedures are on the queue and not finished.
    public var count: Int { state.withLock { $0.members.count } }

    /// The procedures on the queue that have not finished.
    public var procedures: [Procedure] { state.withLock { $0.members.all } }

    // MARK: Adding

    /// Adds a procedure. A procedure can be added to one queue, once.
    public func add(_ procedure: Procedure) {
        let delegate = delegateStorage
        delegate?.procedureQueue(self, willAdd: procedure)
        // The fast path: a procedure with nothing to wait for is ready as it is attached,
        // and joins the ready list in the same critical section that records it.
        let readyNow = procedure.attach(to: self)
        let spawn = state.withLock { state in
            state.members.insert(procedure)
            guard readyNow else { return false }
            state.ready.append(procedure)
            return needsRunner(&state)
        }
        if spawn { spawnRunner() }
        if !readyNow { procedure.advance() }
        delegate?.procedureQueue(self, didAdd: procedure)
    }

    /// Adds several procedures.
    public func add(_ procedures: some Sequence<Procedure>) {
        for procedure in procedures { add(procedure) }
    }

    /// Adds a procedure and returns its output once it has succeeded.
    /// - Throws: the procedure's error if it failed, `CancellationError` (or the
    ///   cancellation's reason) if it was cancelled.
    public func run<P: OutputProcedure>(_ procedure: P) async throws -> P.Output {
        add(procedure)
        switch await procedure.waitUntilFinished() {
        case .succeeded:
            guard let result = procedure.output.value else {
                throw ProcedureError(.requirementNotSatisfied, "\(procedure.name) succeeded without an output")
            }
            return try result.get()
        case .failed(let error):
            throw error
        case .cancelled(let reason):
            throw reason ?? CancellationError()
        }
    }

    /// Adds a procedure and waits for its outcome, throwing if it failed or was cancelled.
    // Disfavoured, so that `let value = try await queue.run(outputProcedure)` picks the
    // overload that returns the output rather than this one, which returns Void.
    @_disfavoredOverload
    public func run(_ procedure: Procedure) async throws {
        add(procedure)
        switch await procedure.waitUntilFinished() {
        case .succeeded: return
        case .failed(let error): throw error
        case .cancelled(let reason): throw reason ?? CancellationError()
        }
    }

    /// Cancels every procedure on the queue. No procedure starts while it does, so one
    /// freed by another's cancellation (a slot, a lock) cannot start executing before its
    /// own cancel reaches it.
    public func cancelAll(with reason: (any Error)? = nil) {
        let procedures = state.withLock { state in
            state.cancelling += 1
            return state.members.all
        }
        for procedure in procedures { procedure.cancel(with: reason) }
        state.withLock { $0.cancelling -= 1 }
        scheduleRunners()
    }

    /// Suspends until every procedure on the queue has finished (at once if none is there).
    public func waitUntilAllFinished() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state -> Bool in
                if state.members.isEmpty { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    // MARK: Engine

    /// Holds a procedure back until the queue resumes. Returns false if the queue is not
    /// suspended any more, so the caller should carry on.
    func deferUntilResumed(_ procedure: Procedure) -> Bool {
        state.withLock { state in
            guard suspended.load(ordering: .acquiring) else { return false }
            state.deferred.append(procedure)
            return true
        }
    }

    func procedureIsReady(_ procedure: Procedure) {
        let spawn = state.withLock { state in
            state.ready.append(procedure)
            return needsRunner(&state)
        }
        if spawn { spawnRunner() }
    }

    func procedureWillFinish(_ procedure: Procedure, with outcome: ProcedureOutcome) {
        delegateStorage?.procedureQueue(self, willFinish: procedure, with: outcome)
    }

    func procedureDidFinish(_ procedure: Procedure, with outcome: ProcedureOutcome) {
        let (spawn, waiters) = state.withLock { state in
            state.members.remove(procedure)
            state.executing -= 1
            var waiters: [CheckedContinuation<Void, Never>] = []
            if state.members.isEmpty {
                waiters = state.idleWaiters
                state.idleWaiters = []
            }
            return (needsRunner(&state), waiters)
        }
        delegateStorage?.procedureQueue(self, didFinish: procedure, with: outcome)
        if spawn { spawnRunner() }
        for waiter in waiters { waiter.resume() }
    }

    private func scheduleRunners() {
        if state.withLock({ needsRunner(&$0) }) { spawnRunner() }
    }

    /// Whether to start one more runner: a ready procedure could start now and every runner
    /// is busy inside an `execute()` (or there is none). A runner that starts a procedure
    /// asks the same question, so a long `execute()` never holds up the procedures behind
    /// it while slots are free, and a flood of short ones needs only a runner or two.
    private func needsRunner(_ state: inout State) -> Bool {
        guard !suspended.load(ordering: .relaxed), state.cancelling == 0,
            !state.ready.isEmpty,
            state.executing < state.maxConcurrentCount,
            state.runners == state.busyRunners,
            state.runners < min(state.maxConcurrentCount, Self.runnerCap)
        else { return false }
        state.runners += 1
        return true
    }

    private func spawnRunner() {
        runnerQueue.async { self.runReadyProcedures() }
    }

    /// A runner: starts ready procedures one after another while slots are free.
    private func runReadyProcedures() {
        var wasBusy = false
        while true {
            let (next, spawn) = state.withLock { state -> (Procedure?, Bool) in
                if wasBusy { state.busyRunners -= 1 }
                guard !suspended.load(ordering: .relaxed), state.cancelling == 0,
                    state.executing < state.maxConcurrentCount, let procedure = state.ready.popFirst()
                else {
                    state.runners -= 1
                    return (nil, false)
                }
                state.executing += 1
                state.busyRunners += 1
                return (procedure, needsRunner(&state))
            }
            guard let next else { return }
            if spawn { spawnRunner() }
            wasBusy = true
            next.start()
        }
    }

    /// Starts a procedure whose slot was reserved while it took its categories.
    func startInReservedSlot(_ procedure: Procedure) {
        runnerQueue.async { procedure.start() }
    }
}

/// A queue's unfinished procedures, each in a slot whose index the procedure keeps
/// (`Procedure.queueSlot`): adding and removing one costs no hashing, which a dictionary
/// keyed by identity spent on every procedure of the hot path. Only the queue's lock guards
/// it, and the slot index.
struct Members {
    private var slots: [Procedure?] = []
    private var free: [Int] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The procedures, in no particular order.
    var all: [Procedure] { slots.compactMap { $0 } }

    mutating func insert(_ procedure: Procedure) {
        let index: Int
        if let reused = free.popLast() {
            index = reused
            slots[index] = procedure
        } else {
            index = slots.count
            slots.append(procedure)
        }
        procedure.queueSlot = index
        count += 1
    }

    mutating func remove(_ procedure: Procedure) {
        let index = procedure.queueSlot
        guard index >= 0, index < slots.count, slots[index] === procedure else { return }
        slots[index] = nil
        free.append(index)
        procedure.queueSlot = -1
        count -= 1
    }
}
