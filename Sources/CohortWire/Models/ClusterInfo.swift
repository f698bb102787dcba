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
    /// When the worker last said anything (a heartbeat at the latest); `nil` from a coordinator
    /// that does not say.
    public var lastHeardAt: WireTimestamp?

    public init(
        id: String, name: String, host: String, labels: [String], slots: UInt32, running: UInt32, state: WorkerState,
        kinds: [String] = [], lastHeardAt: WireTimestamp? = nil
    ) {
        self.kinds = kinds
        self.lastHeardAt = lastHeardAt
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
    public var holder: LockHolderStatus?
    /// Waiting requests, first in line first.
    public var waiters: [LockWaiter]

    public init(category: String, token: UInt64, holder: LockHolderStatus?, waiters: [LockWaiter]) {
        self.category = category
        self.token = token
        self.holder = holder
        self.waiters = waiters
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

    public init(group: String, child: String, attempt: UInt32, worker: String?) {
        self.group = group
        self.child = child
        self.attempt = attempt
        self.worker = worker
    }
}

/// A child waiting for a lock.
public struct LockWaiter: Hashable, Sendable {
    public var group: String
    /// The child's path.
    public var child: String

    public init(group: String, child: String) {
        self.group = group
        self.child = child
    }
}
