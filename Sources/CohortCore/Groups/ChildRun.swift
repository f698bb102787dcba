import CohortSpec
import DequeModule
import Foundation

/// The scheduler's record of one procedure child (a leaf of the flattened spec) of a group
/// run. Kept small: the coordinator holds one per queued procedure.
struct ChildRun: Sendable {
    /// Where the child is in its pipeline; `phase` is what users see.
    enum Stage: UInt8, Sendable {
        /// Waits for dependencies (`remaining > 0`).
        case blocked
        /// Waits for an enclosing group's hold of its `exclusive` categories.
        case awaitingHold
        /// No connected worker offers its kind (and labels): waits for one to join.
        case parked
        /// Waits for its own lock request.
        case locking
        /// Locks held (if any); queued for a worker.
        case queued
        /// Sent to a worker that has not reported it started.
        case dispatched
        /// Running on a worker.
        case started
        /// Failed; waits for its retry's backoff.
        case retryWait
        /// A map's procedure that waits for a place among the map's `maxParallel`.
        case throttled
        /// Finished.
        case done
    }

    var stage: Stage = .blocked
    var phase: ChildPhase = .pending
    /// Dependencies (leaves or groups) not finished yet.
    var remaining: Int32
    /// The latest attempt's number; 0 before the first.
    var attempt: UInt32 = 0
    /// The latest attempt sent to a worker (the one `worker` names); 0 before the first
    /// dispatch. Status shows this one: an attempt that waits for a lock or a slot, or was
    /// cancelled before it reached a worker, never started.
    var sentAttempt: UInt32 = 0
    /// Attempts that count against the retry budget (those that started and ended on their
    /// worker: a lost worker's attempts count as ``losses`` instead).
    var counted: UInt32 = 0
    /// Workers lost while one of its attempts ran there (the worker-loss budget,
    /// `maxWorkerLosses`).
    var losses: UInt8 = 0
    /// The current attempt's id; 0 when there is none.
    var attemptID = AttemptID(0)
    /// The worker of the latest attempt.
    var worker: SessionID?
    /// The input after injection (nil: the spec's `with` as written).
    var input: JSONValue?
    /// Injections applied (so a retry or re-dispatch does not redo them).
    var injected = false
    /// Its `if:`/`require:` and those of its enclosing groups were evaluated and let it run
    /// (only looked at in a run with conditions).
    var conditionsChecked = false
    /// It waits to run again (`repeat:`), not to retry a failure.
    var repeatWait = false
    /// A map's procedure that has one of the map's `maxParallel` places (until it finishes).
    var admitted = false
    /// Its successful runs that `repeat.until` found false (each ran again after it).
    var repeatedRuns: UInt32 = 0
    /// Failure message or cancellation reason, once finished (or of the last failed attempt).
    var error: String?
    /// The output, once succeeded.
    var output: Data?
    /// The coordinator cut the output down to its size limit (a marker shows where).
    var outputTruncated = false
    /// The reason of a cancel sent to the current attempt, which has not reported back yet.
    var cancelling: CancellationReason?
    /// Why it was cancelled before it could finish on its own (group cancel, dependency).
    var cancelCause: CancelCause?
    /// Why it ended cancelled, once it has (its `error` is the reason's text).
    var cancelReason: CancellationReason?
    var startedAt: Timestamp?
    var finishedAt: Timestamp?
    /// When the current attempt was sent to its worker (for the dispatch-to-start metric).
    var dispatchedAt: Timestamp?
    /// When a retry waiting for its backoff may go.
    var retryAt: Timestamp?
    /// The errors of its earlier attempts that ended in error, `attempt 1: exit code 2`; the
    /// final error names them all. Empty (no allocation) for a child that never retried.
    var attemptErrors: [String] = []
    /// Its earlier attempts that reached a worker, oldest first (the last
    /// ``EndedAttempt/kept``); nil (no allocation) for a child that never ran again.
    var earlier: [EndedAttempt]?

    var isDone: Bool { stage == .done }

    init(remaining: Int32) {
        self.remaining = remaining
    }
}

/// Why a child was cancelled, which decides what its cancellation does next.
enum CancelCause: Sendable, Equatable {
    /// The group (or an enclosing nested group) was cancelled or timed out: everything in it is
    /// being cancelled anyway, so no failure policy applies.
    case group
    /// The child itself was cancelled by a client (`cohort cancel --child`).
    case explicit
    /// A consequence of another child's failure (its dependency, its producer, the
    /// `cancel-group` policy).
    case propagated
}

/// The scheduler's record of a group of a run: the top level (index 0) or a nested group.
struct NestedRun: Sendable {
    /// Procedures inside (all levels) not finished yet.
    var unfinished: Int
    var failed = 0
    var cancelled = 0
    /// Procedures inside that ended `skipped`.
    var skipped = 0
    /// It finished with every procedure inside skipped: it reads as `skipped` (its own `if:`
    /// was false, or nothing in it ran because of skips); `phase` is then `succeeded`.
    var wasSkipped = false
    /// Its `if:`/`require:` was evaluated (when its first procedure was about to start).
    var conditionChecked = false
    var phase: GroupPhase = .pending
    /// Whether it holds locks (has `exclusive` categories) and how far its request got.
    var hold: Hold
    /// Nodes outside the group that its leaves wait for and that have not finished: its hold
    /// is requested only at 0.
    var holdWaitsFor: Int32 = 0
    /// Leaves waiting for the hold to be granted.
    var waitingForHold: [Int32] = []
    /// A map group still to be expanded: the nodes it waits for that have not finished.
    var mapWaitsFor: Int32 = 0
    /// A map group with `maxParallel`: its procedures holding a place, and those waiting for
    /// one, in order.
    var mapRunning: Int32 = 0
    var mapQueue: Deque<Int32> = []
    /// During a restore: the journal has how this map ended without procedures, which the
    /// replay applies in its place; until then it does not decide for itself.
    var mapEndJournaled = false
    /// Maps inside (itself included) that ended without procedures, and those of them that
    /// ended skipped: a group whose every procedure and every such map was skipped reads as
    /// skipped.
    var emptyMaps: Int32 = 0
    var skippedMaps: Int32 = 0
    /// Why a map ended skipped or cancelled without procedures when nothing cancelled its group
    /// (for status).
    var endReason: String?
    /// Fencing tokens of the hold.
    var tokens: [String: UInt64] = [:]
    /// Set when the group was cancelled (by a client, or its timeout): the reason.
    var cancelReason: CancellationReason?
    /// Set when a failure inside cancelled everything in it (`onChildFailure: cancel-group`).
    var cancelledByPolicy: CancellationReason?
    /// The first failure inside, `"build" failed: exit code 2`.
    var firstFailure: String?
    var startedAt: Timestamp?
    var finishedAt: Timestamp?

    enum Hold: Sendable, Equatable {
        case none, notRequested, requested, granted, released
    }
}
