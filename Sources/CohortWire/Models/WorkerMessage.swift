/// Worker → coordinator, after a welcomed HELLO.
///
/// `started` and `results` are batches: a batch of N means exactly what N
/// messages of one each would, in the same order.
public enum WorkerMessage: Hashable, Sendable {
    /// The worker's capacity and what it still runs; the first message after WELCOME.
    case ready(WorkerReady)
    /// Sent every interval whatever else is sent, numbered from 1 in each session; the
    /// coordinator acknowledges each at once, and the worker's lease runs from the sending of
    /// the latest acknowledged one (docs/scheduling.md, "Leases"). 0 asks for no
    /// acknowledgement. Any message counts as proof of life.
    case heartbeat(sequence: UInt64)
    /// Attempts that started running.
    case started([AttemptStart])
    /// Attempts that finished.
    case results([AttemptResult])
    /// A running attempt asks for cluster-wide locks (a local `MutuallyExclusive`).
    case lockRequest(LockRequest)
    /// Give back the grant obtained by this lock request.
    case lockRelease(requestID: UInt64)
    /// Withdraw a lock request not granted yet (its waiter was cancelled).
    case lockWithdraw(requestID: UInt64)
    /// Send me no more work; I finish what I run.
    case draining(reason: String)
    /// The worker is leaving.
    case disconnect(reason: String)
    /// A running attempt cancels its own group (a custom kind's `context.cancelGroup`).
    case cancelGroup(WireAttemptRef, reason: String)
    /// A running attempt adds children to its own group (a custom kind's `context.group.add`).
    case addChildren(WireAttemptRef, ChildrenAddition)
    /// Lines running attempts wrote (docs/operations.md, "Logs"), each attempt's in the order
    /// written; sent before the attempt's result. Answered by `logStored` once stored.
    case logLines([AttemptLogLines])
}

/// What a worker offers, and what it still runs from an earlier session.
public struct WorkerReady: Hashable, Sendable {
    public var name: String
    public var host: String
    /// Fresh for every connection, so the coordinator can tell a reconnect from a duplicate.
    public var sessionID: String
    public var labels: [String]
    /// Its `ProcedureQueue`'s `maxConcurrentCount`.
    public var slots: UInt32
    /// Procedure kinds it can run (`shell`, `sleep`, `echo`, `fail`, registered ones).
    public var kinds: [String]
    /// Attempts still running since before this connection (empty on a first connection).
    public var running: [RunningAttempt]
    /// The worker is draining (it reconnected during a drain): the coordinator sends it no new
    /// work from this READY on, before the `draining` message that follows it arrives.
    public var draining: Bool

    public init(
        name: String, host: String, sessionID: String, labels: [String], slots: UInt32,
        kinds: [String], running: [RunningAttempt] = [], draining: Bool = false
    ) {
        self.name = name
        self.host = host
        self.sessionID = sessionID
        self.labels = labels
        self.slots = slots
        self.kinds = kinds
        self.running = running
        self.draining = draining
    }
}

/// An attempt a reconnecting worker still runs.
public struct RunningAttempt: Hashable, Sendable {
    public var ref: WireAttemptRef
    public var startedAt: WireTimestamp?

    public init(ref: WireAttemptRef, startedAt: WireTimestamp?) {
        self.ref = ref
        self.startedAt = startedAt
    }
}

/// An attempt started.
public struct AttemptStart: Hashable, Sendable {
    public var ref: WireAttemptRef
    public var startedAt: WireTimestamp

    public init(ref: WireAttemptRef, startedAt: WireTimestamp) {
        self.ref = ref
        self.startedAt = startedAt
    }
}

/// An attempt finished with an outcome.
public struct AttemptResult: Hashable, Sendable {
    public var ref: WireAttemptRef
    public var outcome: WireOutcome
    public var startedAt: WireTimestamp
    public var finishedAt: WireTimestamp

    public init(ref: WireAttemptRef, outcome: WireOutcome, startedAt: WireTimestamp, finishedAt: WireTimestamp) {
        self.ref = ref
        self.outcome = outcome
        self.startedAt = startedAt
        self.finishedAt = finishedAt
    }
}

/// A running attempt asks for all of `categories` at once.
public struct LockRequest: Hashable, Sendable {
    /// Chosen by the worker, unique in its session; names the grant later.
    public var requestID: UInt64
    /// The running attempt that asks (the lease is tied to it and to the worker's liveness).
    public var ref: WireAttemptRef
    public var categories: [String]

    public init(requestID: UInt64, ref: WireAttemptRef, categories: [String]) {
        self.requestID = requestID
        self.ref = ref
        self.categories = categories
    }
}
