/// Who holds (or waits for) locks in the cluster-wide ``LockTable``.
public enum LockHolder: Hashable, Sendable, CustomStringConvertible {
    /// An attempt's own `exclusive` categories, requested before it is dispatched. The value
    /// is the attempt's id (``AttemptRef/id``), so a later attempt is a different holder.
    case attempt(AttemptID)
    /// A nested (or top-level) group's `exclusive` categories, held from its first child's
    /// start until it finishes: `run` is the index of the group run, `group` the
    /// index in its `FlatSpec.groups`.
    case group(run: Int, group: Int)
    /// A request a running attempt's worker made for a procedure it created locally
    /// (`MutuallyExclusive` in a local group): the attempt's id and the worker's request id.
    /// Neither depends on the worker's session, so the grant stays the attempt's when its
    /// worker reconnects (or a restarted coordinator restores it) and reports the attempt.
    case local(attempt: AttemptID, request: UInt64)

    public var description: String {
        switch self {
        case .attempt(let id): "attempt \(id)"
        case .group(let run, let group): "group \(run).\(group)"
        case .local(let attempt, let request): "attempt \(attempt) request \(request)"
        }
    }
}

/// Which table a category is requested from.
///
/// Mirrors `GroupProcedure`: a category that an enclosing holder (a group, or for a worker's
/// local request the attempt itself) already holds is granted from that holder's own table, so
/// that the holder's descendants never queue behind the holder (no group-and-child deadlock,
/// ProcedureKit #47/#486) while siblings inside still exclude each other. Every other category
/// comes from the cluster table.
public enum LockScope: Hashable, Sendable {
    case cluster
    /// The table of categories held by a group, for its descendants.
    case group(run: Int, group: Int)
    /// The table of categories held by an attempt, for the procedures it creates locally.
    case attempt(AttemptID)

    /// The holder whose grant this scope's table subdivides (nil for the cluster table).
    var owner: LockHolder? {
        switch self {
        case .cluster: nil
        case .group(let run, let group): .group(run: run, group: group)
        case .attempt(let id): .attempt(id)
        }
    }
}

/// Some categories, requested from one table.
public struct LockLevel: Hashable, Sendable {
    public var scope: LockScope
    public var categories: Set<String>

    public init(scope: LockScope, categories: Set<String>) {
        self.scope = scope
        self.categories = categories
    }
}

/// What `cohort locks` says about a holder or a waiter.
public struct LockOwner: Hashable, Sendable {
    /// The group's id.
    public var group: String
    /// The child's path (a nested group's path for a group hold; `""` for the top level).
    public var child: String
    /// The attempt (0 for a group hold).
    public var attempt: UInt32
    /// The worker running the attempt, once dispatched.
    public var worker: SessionID?

    public init(group: String, child: String, attempt: UInt32 = 0, worker: SessionID? = nil) {
        self.group = group
        self.child = child
        self.attempt = attempt
        self.worker = worker
    }
}

/// One holder of a category, for `cohort locks`.
public struct LockHolding: Hashable, Sendable {
    public var owner: LockOwner
    /// The holder's fencing token for the category.
    public var token: UInt64
    /// When the grant was made; nil if unknown.
    public var since: Timestamp?

    public init(owner: LockOwner, token: UInt64, since: Timestamp? = nil) {
        self.owner = owner
        self.token = token
        self.since = since
    }
}

/// One category of the cluster table, for `cohort locks`.
public struct LockSnapshot: Hashable, Sendable {
    public var category: String
    /// The last fencing token granted for the category.
    public var token: UInt64
    /// How many holders it may have at once (1: an exclusive lock).
    public var limit: Int
    /// Its holders, first granted first.
    public var holders: [LockHolding]
    /// First in line first.
    public var waiters: [LockOwner]
    /// When each waiter's request was made, in the order of ``waiters``; nil if unknown.
    public var waitingSince: [Timestamp?]

    /// The first of ``holders``.
    public var holder: LockOwner? { holders.first?.owner }
    /// When the first holder's grant was made; nil if unknown.
    public var heldSince: Timestamp? { holders.first?.since }

    public init(
        category: String, token: UInt64, limit: Int = 1, holders: [LockHolding], waiters: [LockOwner],
        waitingSince: [Timestamp?] = []
    ) {
        self.category = category
        self.token = token
        self.limit = limit
        self.holders = holders
        self.waiters = waiters
        self.waitingSince = waitingSince
    }
}
