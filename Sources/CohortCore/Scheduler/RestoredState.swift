import CohortSpec
import Foundation

/// One child's record in the coordinator's journal: an attempt that was dispatched, or the
/// child's outcome. The scheduler reports both in ``SchedulerAction/record(_:)`` actions
/// (``JournalRecord/dispatched(_:)``, ``JournalRecord/finished(_:)``).
public struct ChildRecord: Hashable, Sendable {
    /// Where the record stands.
    public enum State: Hashable, Sendable {
        /// Sent to a worker and not reported back: the attempt may still run.
        case inFlight
        /// The child finished with this phase (`succeeded`, `failed` or `cancelled`).
        case finished(ChildPhase)
    }

    public var group: String
    /// The child's path, `tests/unit`.
    public var path: String
    /// The attempt's number; 0 for a child that finished without ever getting one.
    public var attempt: UInt32
    /// The attempt's id (``AttemptRef/id``); 0 when there is none.
    public var attemptID: AttemptID
    public var state: State
    /// The output (UTF-8 JSON), once succeeded.
    public var output: Data?
    /// Whether the coordinator cut the output down to its `maxOutputBytes` (a marker shows where).
    public var outputTruncated: Bool
    /// The failure message or cancellation reason.
    public var error: String?
    /// Why a cancelled or skipped child ended, its code and its words (which `error` may
    /// extend: every attempt's error after several); nil otherwise, and in records of journals
    /// older than version 7, whose cancelled children come back `custom` (skipped ones
    /// `skipped`) with `error` as their words.
    public var cancelReason: CancellationReason?
    /// The name of the worker that ran (or runs) the attempt.
    public var worker: String?
    /// Category → fencing token of the locks the attempt runs under (its own and its groups').
    public var tokens: [String: UInt64]
    public var startedAt: Timestamp?
    public var finishedAt: Timestamp?
    /// Workers the child had lost (while an attempt ran there) when this attempt was sent:
    /// those attempts did not use up its retry budget.
    public var losses: UInt32
    /// Attempts that had used up the child's retry budget when this attempt was sent (those
    /// that ended on their own: not handed back, not lost); nil in records of journals older
    /// than version 4.
    public var counted: UInt32?

    public init(
        group: String, path: String, attempt: UInt32, attemptID: AttemptID, state: State, output: Data? = nil,
        outputTruncated: Bool = false, error: String? = nil, cancelReason: CancellationReason? = nil,
        worker: String? = nil, tokens: [String: UInt64] = [:], startedAt: Timestamp? = nil,
        finishedAt: Timestamp? = nil, losses: UInt32 = 0, counted: UInt32? = nil
    ) {
        self.group = group
        self.path = path
        self.attempt = attempt
        self.attemptID = attemptID
        self.state = state
        self.output = output
        self.outputTruncated = outputTruncated
        self.error = error
        self.cancelReason = cancelReason
        self.worker = worker
        self.tokens = tokens
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.losses = losses
        self.counted = counted
    }
}

/// A group as the journal kept it, for ``Scheduler/restore(_:lastTokens:grace:now:)``.
public struct RestoredGroup: Sendable {
    public var id: String
    public var spec: GroupSpec
    /// Submission order (the journal's order of acceptance).
    public var sequence: UInt64
    public var submittedAt: Timestamp
    /// The CURVE key (Z85) of the client that submitted it; nil without CURVE.
    public var owner: String?
    /// The outcome, if the group had finished.
    public var outcome: (phase: GroupPhase, reason: String?, finishedAt: Timestamp)?
    /// The code of the group's own cancel reason, if it finished cancelled with one (its
    /// words are the outcome's `reason`); nil otherwise and from journals older than version 7.
    public var outcomeCode: CancellationReason.Code?
    /// The latest record of each child that has one (children without one had not started).
    public var children: [ChildRecord]
    /// Cancels asked for (by a client), oldest first: path (`""` for the whole group), reason.
    public var cancels: [(path: String, reason: CancellationReason)]
    /// Worker-local grants not released, of attempts that may still be in flight.
    public var localLocks: [LocalLockRecord]
    /// Children added while it ran, oldest first: the nested group's path (`""` the top
    /// level) and the children (docs/spec.md, "Growing groups").
    public var additions: [(into: String, children: [ChildSpec])] = []

    public init(
        id: String, spec: GroupSpec, sequence: UInt64, submittedAt: Timestamp, owner: String? = nil,
        outcome: (phase: GroupPhase, reason: String?, finishedAt: Timestamp)? = nil, children: [ChildRecord] = [],
        cancels: [(path: String, reason: CancellationReason)] = [], localLocks: [LocalLockRecord] = [],
        outcomeCode: CancellationReason.Code? = nil
    ) {
        self.id = id
        self.spec = spec
        self.sequence = sequence
        self.submittedAt = submittedAt
        self.owner = owner
        self.outcome = outcome
        self.outcomeCode = outcomeCode
        self.children = children
        self.cancels = cancels
        self.localLocks = localLocks
    }
}

/// A grant the coordinator made to a procedure that a running attempt created on its worker
/// (`MutuallyExclusive` in a local group): journaled so that a restarted coordinator keeps it
/// for the attempt if its worker reports the attempt, and revokes it if nobody does.
public struct LocalLockRecord: Hashable, Sendable {
    public var group: String
    public var path: String
    public var attempt: UInt32
    /// The attempt's id (``AttemptRef/id``).
    public var attemptID: AttemptID
    /// The worker's request id (unique for the worker process, across its sessions).
    public var request: UInt64
    /// Category -> fencing token, one per category granted.
    public var tokens: [String: UInt64]

    public init(
        group: String, path: String, attempt: UInt32, attemptID: AttemptID, request: UInt64, tokens: [String: UInt64]
    ) {
        self.group = group
        self.path = path
        self.attempt = attempt
        self.attemptID = attemptID
        self.request = request
        self.tokens = tokens
    }
}

/// A change to the worker-local grants, for the journal.
public enum LocalLockChange: Hashable, Sendable {
    case granted(LocalLockRecord)
    /// Released or withdrawn by the worker: the attempt's id and the request id.
    case released(attemptID: AttemptID, request: UInt64)
}
