/// A worker's state as the coordinator sees it.
public enum WorkerState: Hashable, Sendable, CaseIterable {
    /// Said HELLO, has not said READY yet.
    case joining
    /// Takes work.
    case ready
    /// Said DRAINING: finishes what it runs, takes nothing new.
    case draining
    /// Missed its heartbeats; its attempts were re-dispatched.
    case lost
}

/// One line of `cohort workers`.
public struct WorkerInfo: Hashable, Sendable {
    public var id: String
    public var name: String
    public var host: String
    public var labels: [String]
    public var slots: UInt32
    /// Attempts it runs now.
    public var running: UInt32
    public var state: WorkerState
    /// The procedure kinds it offers, sorted.
    public var kinds: [String]
    /// An operator drained it (`cohort drain`): it stays `draining` until `cohort undrain`.
    public var drained: Bool
    /// How long before the reply the coordinator last heard from it; nil when unknown (a
    /// coordinator older than the field does not say).
    public var lastHeardAgo: Duration?

    public init(
        id: String, name: String, host: String, labels: [String], slots: UInt32, running: UInt32, state: WorkerState,
        kinds: [String] = [], drained: Bool = false, lastHeardAgo: Duration? = nil
    ) {
        self.kinds = kinds
        self.drained = drained
        self.lastHeardAgo = lastHeardAgo
        self.id = id
        self.name = name
        self.host = host
        self.labels = labels
        self.slots = slots
        self.running = running
        self.state = state
    }
}

/// One category of the cluster-wide lock table (`cohort locks`).
public struct LockInfo: Hashable, Sendable {
    public var category: String
    /// The last fencing token granted for this category.
    public var token: UInt64
    /// How many holders it may have at once (1: an exclusive lock).
    public var limit: UInt32
    /// Every holder, first granted first.
    public var holders: [LockHolderStatus]
    /// Waiting requests, first in line first.
    public var waiters: [LockWaiter]

    /// The first holder.
    public var holder: LockHolderStatus? { holders.first }

    public init(
        category: String, token: UInt64, limit: UInt32 = 1, holders: [LockHolderStatus], waiters: [LockWaiter]
    ) {
        self.category = category
        self.token = token
        self.limit = limit
        self.holders = holders
        self.waiters = waiters
    }

    /// An exclusive lock (limit 1) with at most one holder.
    public init(category: String, token: UInt64, holder: LockHolderStatus?, waiters: [LockWaiter]) {
        self.init(category: category, token: token, limit: 1, holders: holder.map { [$0] } ?? [], waiters: waiters)
    }
}

/// The attempt that holds a lock.
public struct LockHolderStatus: Hashable, Sendable {
    public var group: String
    /// The child's path.
    public var child: String
    public var attempt: UInt32
    /// The worker the attempt was sent to; nil while it holds its lock but waits for a free
    /// slot (locks are granted before placement).
    public var worker: String?
    /// How long it had held the lock when the coordinator replied; nil if unknown.
    public var heldFor: Duration?
    /// Its fencing token for the category; nil if unknown (an older coordinator).
    public var token: UInt64?

    public init(
        group: String, child: String, attempt: UInt32, worker: String?, heldFor: Duration? = nil, token: UInt64? = nil
    ) {
        self.token = token
        self.group = group
        self.child = child
        self.attempt = attempt
        self.worker = worker
        self.heldFor = heldFor
    }
}

/// A child waiting for a lock.
public struct LockWaiter: Hashable, Sendable {
    public var group: String
    /// The child's path.
    public var child: String
    /// How long it had waited when the coordinator replied; nil if unknown.
    public var waitingFor: Duration?

    public init(group: String, child: String, waitingFor: Duration? = nil) {
        self.group = group
        self.child = child
        self.waitingFor = waitingFor
    }
}
