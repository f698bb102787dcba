/// Something the scheduler saw happen, for metrics (issue 15): reported only while
/// ``Scheduler/observes`` is on, and read with ``Scheduler/drainObservations(_:)``.
///
/// Observations change nothing the scheduler decides; they are its events as numbers, so that
/// the coordinator can count them without looking anything up again.
public enum SchedulerObservation: Hashable, Sendable {
    /// A procedure child finished for good (after its last attempt, or without any: cancelled
    /// before it ran). `kind` is its procedure kind (`shell`, `echo`…).
    case childFinished(kind: String, ChildPhase)
    /// An attempt reported its start, `waited` after its dispatch.
    case attemptStarted(waited: Duration)
    /// An attempt reported its result, `ran` after it started (its worker's times when it
    /// gave them).
    case attemptFinished(ran: Duration)
    /// An attempt's worker was lost (or stopped it when its lease ended) and the child gets a
    /// new attempt.
    case attemptRerunAfterWorkerLoss
    /// A lock request was granted, `waited` after it was made (zero when granted at once),
    /// once for each of its categories.
    case lockGranted(category: String, waited: Duration)
    /// A granted lock was given back, `held` after it was granted, once per category.
    case lockReleased(category: String, held: Duration)
}

/// When a lock request was made and granted, for ``SchedulerObservation/lockGranted(category:waited:)``
/// and ``SchedulerObservation/lockReleased(category:held:)``.
struct LockTiming: Sendable {
    var requestedAt: Timestamp
    var grantedAt: Timestamp?
    var categories: [String]
}

/// The state the scheduler is in, counted: what the coordinator's gauges show. Built by
/// ``Scheduler/summary()``, which walks the unfinished groups' children, so call it at most
/// about once a second, not per event.
public struct SchedulerSummary: Hashable, Sendable {
    /// Why a child that cannot run yet waits.
    public enum WaitReason: String, Hashable, Sendable, CaseIterable {
        /// For children or groups it depends on (`after`, `inject`, sequence order).
        case dependencies
        /// For a lock: its own `exclusive` categories or an enclosing group's hold.
        case lock
        /// For a worker that offers its kind and `requires` labels (none is connected).
        case label
        /// For its retry's backoff (or a new attempt after its worker was lost).
        case retry
    }

    /// Groups the scheduler knows (unfinished and retained finished ones), by state.
    public var groups: [GroupPhase: Int] = [:]
    /// Children of unfinished groups waiting, by reason.
    public var waiting: [WaitReason: Int] = [:]
    /// Children whose attempt may run now and waits for a free worker slot.
    public var ready = 0
    /// Attempts sent to a worker that has not reported their start.
    public var dispatched = 0
    /// Attempts running on a worker.
    public var running = 0
    /// Lock requests granted (holders), every scope.
    public var lockHolders = 0
    /// Lock requests waiting (waiters), every scope.
    public var lockWaiters = 0
    /// Connected workers, by state (`ready`, `draining`).
    public var workers: [WorkerPhase: Int] = [:]
    /// The connected workers' slots.
    public var slots = 0
    /// Slots running or holding an attempt (at most `slots` per worker; the prefetched
    /// attempts beyond them are not counted).
    public var slotsInUse = 0

    public init() {}
}
