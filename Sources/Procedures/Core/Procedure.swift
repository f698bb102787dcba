import Logging
import Synchronization

/// A unit of work with a life cycle, ProcedureKit's `Procedure` without Foundation's
/// `Operation` underneath.
///
/// Subclass and override `execute()`, then call `finish()` or `finish(with:)` exactly when
/// the work is done, from any thread, now or later. Add the procedure to a
/// `ProcedureQueue` to run it.
///
/// The states run pending → evaluatingConditions → ready → executing → finishing →
/// finished. A procedure waits in `pending` until it is on a queue, its dependencies have
/// finished and its queue is not suspended; it then runs the injection hooks and conditions
/// and becomes ready for a slot. A procedure with exclusivity categories waits for its slot
/// still `evaluatingConditions`, takes its categories once it holds the slot, and only then
/// is `ready`: a lock holder never waits for a slot, so a group occupying the last slot can
/// always get the locks its children need.
///
/// Thread-safety: every public member may be called from any thread. Of concurrent
/// `finish`/`cancel` calls only the first finish counts. Every finished procedure has
/// exactly one `outcome`.
///
/// A subclass must restate the conformance, `final class Fetch: Procedure, @unchecked
/// Sendable`, and keep its own mutable state behind a lock (`Mutex`, `Protected`): Swift
/// does not inherit `@unchecked Sendable`.
open class Procedure: @unchecked Sendable, Hashable, CustomStringConvertible {
    // @unchecked Sendable: the engine's mutable state is `core`, behind a Mutex, and
    // callbacks are always made with that lock released.

    public enum State: Int, Sendable, Comparable, CustomStringConvertible {
        case pending, evaluatingConditions, ready, executing, finishing, finished

        public static func < (lhs: State, rhs: State) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .pending: "pending"
            case .evaluatingConditions: "evaluatingConditions"
            case .ready: "ready"
            case .executing: "executing"
            case .finishing: "finishing"
            case .finished: "finished"
            }
        }
    }

    struct Core {
        var state: State = .pending
        var name: String?
        var isCancelled = false
        var cancellationReason: (any Error)?
        var outcome: ProcedureOutcome?
        var isAutomaticFinishingDisabled = false
        var dependencyRequirements: DependencyRequirements = []

        var queue: ProcedureQueue?
        var pipelineStarted = false
        var unfinishedDependencies = 0
        var dependencies: [Procedure] = []
        var dependents: [Procedure] = []

        var observers: [any ProcedureObserver] = []
        var finishHandlers: [@Sendable (ProcedureOutcome) -> Void] = []
        var conditions: [Condition] = []
        var readinessHooks: [@Sendable (Procedure) -> Void] = []
        var preparation: Task<Void, Never>?
        var producedDependencies: [Procedure] = []
        /// Whether the conditions' outcome is settled: by their evaluation, or by a cancel
        /// that made the procedure ready without waiting for it.
        var conditionsDecided = false
        var exclusivity: ExclusivityHold?
        /// Categories to take when the queue gives the procedure a slot.
        var pendingCategories: Set<String>?
        var fencingTokens: [String: UInt64] = [:]
        var failureBeforeExecution: (any Error)?
        var logger: Logger?
        weak var parent: GroupProcedure?
        /// The serialiser of this procedure's events (Procedure+Events.swift).
        var events = EventQueue()
        /// Holds on the execute and finish events (PendingEvent.swift).
        var holds = EventHolds()
        /// The number of `identity`, given when first read (0: not yet).
        var identityNumber: UInt64 = 0
    }

    let core = Mutex(Core())

    /// The procedure's slot in its queue's `Members`; -1 when on none. Guarded by that
    /// queue's lock, not by `core` (a procedure joins one queue, once).
    nonisolated(unsafe) var queueSlot = -1

    public init() {}

    // MARK: Identity

    /// A name for logs, errors and status. Defaults to the type's name.
    public var name: String {
        get { core.withLock { $0.name } ?? String(describing: type(of: self)) }
        set { core.withLock { $0.name = newValue } }
    }

    public var description: String { name }

    public static func == (lhs: Procedure, rhs: Procedure) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// A swift-log logger carrying the procedure's name as `procedure.name`.
    public var log: Logger {
        get {
            if let logger = core.withLock({ $0.logger }) { return logger }
            var logger = Procedure.baseLogger
            logger[metadataKey: "procedure.name"] = "\(name)"
            return logger
        }
        set { core.withLock { $0.logger = newValue } }
    }

    static let baseLogger = Logger(label: "cohort.procedures")

    // MARK: State

    public var state: State { core.withLock { $0.state } }
    public var isPending: Bool { state == .pending }
    public var isExecuting: Bool { state == .executing }
    public var isFinished: Bool { state == .finished }

    /// Whether `cancel` was called. Running work should check it and stop.
    public var isCancelled: Bool { core.withLock { $0.isCancelled } }

    /// The first cancellation's reason, if one was given.
    public var cancellationReason: (any Error)? { core.withLock { $0.cancellationReason } }

    /// How the procedure ended; nil until it is finished (set as it starts finishing).
    public var outcome: ProcedureOutcome? { core.withLock { $0.outcome } }

    /// The error of a failed procedure, or the reason of a cancelled one.
    public var error: (any Error)? { outcome?.error }

    /// The group this procedure is a child of, if any. A child may cancel it.
    public var parent: GroupProcedure? { core.withLock { $0.parent } }

    /// The fencing token of each exclusivity category this procedure holds, once granted.
    public var fencingTokens: [String: UInt64] { core.withLock { $0.fencingTokens } }

    /// When true, cancelling an executing procedure does not finish it: the procedure must
    /// call `finish` itself (after stopping its work). Groups and async procedures set it.
    public var isAutomaticFinishingDisabled: Bool {
        get { core.withLock { $0.isAutomaticFinishingDisabled } }
        set { core.withLock { $0.isAutomaticFinishingDisabled = newValue } }
    }

    // MARK: Subclass hooks

    /// The work. Call `finish()` or `finish(with:)` when it is done; the default finishes at once.
    /// It is not called for a procedure that was cancelled, or whose conditions failed, before it started.
    open func execute() { finish() }

    /// Called once, when the procedure is first cancelled, before did-cancel observers.
    open func procedureDidCancel(with reason: (any Error)?) {}

    /// Called as the procedure starts finishing, before will-finish observers.
    open func procedureWillFinish(with outcome: ProcedureOutcome) {}

    /// Called once the procedure has finished, before did-finish observers.
    open func procedureDidFinish(with outcome: ProcedureOutcome) {}

    /// Whether `execute()` runs even when the procedure was cancelled before it started.
    /// Groups say yes, so they can finish their children and clean up.
    open var executesWhenCancelledBeforeStart: Bool { false }

    /// Called as the procedure is added to a queue, before its pipeline starts.
    func willEnqueue(on queue: ProcedureQueue) {}
}
