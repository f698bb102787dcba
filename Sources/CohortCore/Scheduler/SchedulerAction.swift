import CohortSpec
import Foundation

/// What the scheduler asks its shell to do; the coordinator's loop carries these out
/// (batching dispatches and cancels per worker per loop turn).
public enum SchedulerAction: Hashable, Sendable {
    /// Send this attempt to the worker.
    case dispatch(SessionID, DispatchOrder)
    /// Tell the worker to stop this attempt (it never touches another attempt of the child).
    case cancel(SessionID, AttemptRef, reason: CancellationReason)
    /// A worker-local lock request is granted, every category at once.
    case grant(SessionID, request: UInt64, tokens: [String: UInt64])
    /// A worker-local lock request is refused, cancelled, or its grant revoked.
    case deny(SessionID, request: UInt64, LockRefusal, reason: String)
    /// A child (procedure or nested group) of a watched group changed; its new status.
    case childChanged(group: String, ChildSnapshot)
    /// The group finished: every child has finished. Reported for every group.
    case groupFinished(group: String, GroupPhase, reason: String?)
    /// Write this down in the journal (only while ``Scheduler/emitsRecords`` is on). The shell
    /// commits a turn's records before it sends the turn's messages.
    case record(JournalRecord)
    /// A worker session ended (its attempts have been dealt with); `loss` says how.
    case sessionLost(SessionID, WorkerLoss)
}

/// How a worker session ended.
public enum WorkerLoss: Hashable, Sendable {
    /// It missed its heartbeats: the shell forgets its connection.
    case silent
    /// A new session of the same worker replaced it.
    case replaced
    /// It said goodbye, or the shell found its connection gone (the shell already knows).
    case left
}

/// One attempt to run, with everything the worker needs.
public struct DispatchOrder: Hashable, Sendable {
    public var ref: AttemptRef
    /// The procedure kind (`shell`, …).
    public var kind: String
    /// The final input as UTF-8 JSON, injections applied.
    public var input: Data
    /// Category → fencing token of every lock the attempt runs under (its own and those its
    /// enclosing groups hold for it).
    public var tokens: [String: UInt64]
    /// The attempt's timeout (the worker cancels it, ``CancellationReason/timedOut``); nil for none.
    public var timeout: Duration?
    /// The categories of `tokens` the attempt holds itself (its `exclusive`); the others it
    /// runs under its groups' holds.
    public var holds: [String]

    public init(
        ref: AttemptRef, kind: String, input: Data, tokens: [String: UInt64], timeout: Duration?,
        holds: [String]? = nil
    ) {
        self.ref = ref
        self.kind = kind
        self.input = input
        self.tokens = tokens
        self.timeout = timeout
        self.holds = holds ?? tokens.keys.sorted()
    }
}

/// Why a worker-local lock request ends without (or loses) its grant.
public enum LockRefusal: Hashable, Sendable, CaseIterable {
    /// Never granted: the attempt is not running on that worker, the id is in use, …
    case denied
    /// Its attempt is being cancelled; the request was withdrawn for it.
    case cancelled
    /// A granted lease was taken back.
    case revoked
}

/// The answer to a submission.
public struct Acceptance: Hashable, Sendable {
    /// The group's id (chosen by the client or the scheduler).
    public var id: String
    public var name: String
    /// Things worth knowing that do not stop the group (`no connected worker offers kind "resize"`).
    public var warnings: [String]
    /// The id was already known with the same spec: nothing new was accepted.
    public var alreadySubmitted: Bool
    /// What to do now (dispatches of the children that can start at once…).
    public var actions: [SchedulerAction]
    /// Procedures that start succeeded with an earlier run's output (``Scheduler/submit(_:id:flat:owner:reusing:now:)``).
    public var reused: Int = 0
}

/// Tunables of the scheduler.
public struct SchedulerConfiguration: Hashable, Sendable {
    /// Attempts a worker may hold beyond its slots (the prefetch window). Attempts with
    /// their own `exclusive` categories go only to a worker with a free slot, so a granted
    /// lock never waits in a worker's queue behind other attempts.
    public var prefetch: Int = 4
    /// A worker whose attempts lately ran shorter than this, on average, may hold up to twice
    /// its slots beyond them instead of `prefetch` (whichever is more): short work then goes
    /// out in batches large enough to amortise a journal commit and a round trip, while an
    /// attempt in a window still waits for at most about two of these. Zero (the default
    /// here; the coordinator's is 2 ms): the window is always `prefetch`.
    public var shortAttempt: Duration = .zero
    /// How often peers say something.
    public var heartbeatInterval: Duration = .seconds(1)
    /// Silent intervals before a worker is lost.
    public var liveness: Int = 3
    /// Workers a procedure may lose (its running attempt's worker killed, silent or cut off)
    /// and still run again elsewhere; the next loss fails it. Separate from `retry.attempts`:
    /// a loss is the cluster's failure, not the procedure's. A child with
    /// `onWorkerLoss: fail` fails at its first loss.
    public var maxWorkerLosses: Int = 3
    /// Finished groups kept for `status` and `result` (the oldest are forgotten first).
    public var finishedGroupRetention: Int = 10_000
    /// Every fencing token is larger than this (the coordinator's epoch goes here).
    public var tokenFloor: UInt64 = 0
    /// Counting locks the coordinator's configuration sets: category → how many holders it
    /// may have at once. They apply whatever a spec's `limits` say.
    public var lockLimits: [String: Int] = [:]
    /// How long a waiting child takes to gain one priority level: a child's place among
    /// waiters (for a lock or a slot) is its time of asking minus `priority × priorityAging`,
    /// so a child waits behind later higher-priority ones at most `difference × priorityAging`.
    public var priorityAging: Duration = .seconds(10)
    /// The most procedures one `map` may make (its list's length); a longer list fails the
    /// map. The coordinator sets it to its `specLimits.maxChildrenPerGroup`.
    public var maxMapItems: Int = SpecLimits.default.maxChildrenPerGroup
    /// The most procedures a group may have once its maps have fanned out. The coordinator
    /// sets it to its `specLimits.maxTotalChildren`.
    public var maxProcedures: Int = SpecLimits.default.maxTotalChildren
    /// Seeds the random numbers of retry jitter, so runs are reproducible.
    public var randomSeed: UInt64 = 0x5EED_C0FF_EE00_0001
    #if DELIBERATE_BUGS
        /// Deliberate bugs switched on, for the simulation's tests only (none by default; only
        /// builds with `DELIBERATE_BUGS` have the field).
        public var mutations: Set<SchedulerMutation> = []
    #endif

    public init() {}
}
