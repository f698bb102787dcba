/// What the coordinator knows about one worker session.
public struct WorkerRecord: Hashable, Sendable {
    /// The session's id (`w-3`).
    public var id: SessionID
    /// The worker's name (`COHORT_WORKER`, `cohort workers`).
    public var name: String
    public var host: String
    /// Labels as the worker sent them.
    public var labels: [String]
    /// The procedure kinds it runs.
    public var kinds: Set<String>
    /// Its queue's `maxConcurrentCount`.
    public var slots: Int
    public var state: WorkerPhase
    /// When the worker last said anything.
    public var lastHeard: Timestamp
    /// When its session began.
    public var joinedAt: Timestamp
    /// Attempts sent to it that have not finished (running or in its prefetch window).
    public var inFlight: Int = 0
    /// Attempts it has finished in this session.
    public var completed: UInt64 = 0
    /// How long its attempts ran lately (a moving average, each new run weighing 1/8), from
    /// the start and finish times it reports; nil before its first finished run.
    public internal(set) var recentRunTime: Duration?
    /// The worker said it is draining itself (SIGTERM, `Worker.drain()`): it stops once it
    /// runs nothing, and an operator's undrain cannot bring it back.
    public var stopping = false

    let labelSet: Set<String>

    public init(
        id: SessionID, name: String, host: String, labels: [String], kinds: Set<String>, slots: Int,
        state: WorkerPhase = .ready, now: Timestamp
    ) {
        self.id = id
        self.name = name
        self.host = host
        self.labels = labels
        self.kinds = kinds
        self.slots = max(slots, 0)
        self.state = state
        self.lastHeard = now
        self.joinedAt = now
        self.labelSet = Set(labels)
    }

    /// How many attempts it may hold beyond its slots: `prefetch`, or twice its slots while
    /// its attempts lately ran shorter than `shortAttempt` (``SchedulerConfiguration/shortAttempt``).
    func window(prefetch: Int, shortAttempt: Duration) -> Int {
        guard let recentRunTime, recentRunTime < shortAttempt else { return prefetch }
        return max(prefetch, 2 * slots)
    }

    /// Counts one more run of `ran` in ``recentRunTime``.
    mutating func noteRun(_ ran: Duration) {
        let ran = max(ran, .zero)
        guard let recent = recentRunTime else {
            recentRunTime = ran
            return
        }
        recentRunTime = recent + (ran - recent) / 8
    }

    /// Whether the worker may run a procedure of `kind` that requires `labels`.
    public func offers(kind: String, labels required: [String]) -> Bool {
        kinds.contains(kind) && required.allSatisfy(labelSet.contains)
    }
}

/// A worker session's state (`cohort workers`).
public enum WorkerPhase: String, Hashable, Sendable, CaseIterable {
    /// Takes work.
    case ready
    /// Finishes what it runs; takes nothing new.
    case draining
    /// Missed its heartbeats or left; its attempts were re-dispatched or failed.
    case lost
}
