/// The worker registry with heartbeat liveness: who is connected, what each offers, and who
/// has gone silent for too long.
///
/// A pure state machine: ``heard(_:now:)`` records that a worker said something (any message
/// counts as a heartbeat), ``expired(now:)`` names the workers silent for `liveness`
/// intervals. The scheduler owns one and decides what a loss means for attempts and grants.
///
/// Invariants: a session is in `workers` from its join until it is removed (then it moves to
/// `departed`, the most recent kept); `inFlight` counts the attempts the scheduler placed on
/// it and has not seen end.
public struct Membership: Sendable {
    /// How often peers are expected to say something.
    public var heartbeatInterval: Duration
    /// How many silent intervals make a worker lost.
    public var liveness: Int

    /// Connected sessions (ready or draining).
    public private(set) var workers: [SessionID: WorkerRecord] = [:]
    /// Recently lost or departed sessions, newest last, for `cohort workers` (bounded).
    public private(set) var departed: [WorkerRecord] = []
    /// How many departed sessions are remembered.
    public var departedRetention = 64
    /// Names of the workers an operator drained (`cohort drain`): every session of such a name
    /// is `draining` (a reconnect or a restart of its process included) until it is undrained.
    public private(set) var operatorDrains: Set<String> = []

    public init(heartbeatInterval: Duration = .seconds(1), liveness: Int = 3) {
        self.heartbeatInterval = heartbeatInterval
        self.liveness = max(liveness, 1)
    }

    /// How long a worker may stay silent.
    public var silenceLimit: Duration { heartbeatInterval * liveness }

    /// Registers a session; a second READY of the same session updates what it offers and
    /// keeps its count of attempts in flight. A session of a worker an operator drained is
    /// `draining` from the start.
    public mutating func join(_ record: WorkerRecord) {
        var record = record
        if let existing = workers[record.id] {
            record.inFlight = existing.inFlight
            record.completed = existing.completed
            record.joinedAt = existing.joinedAt
            record.stopping = existing.stopping
            if existing.stopping { record.state = .draining }
        }
        if operatorDrains.contains(record.name) { record.state = .draining }
        workers[record.id] = record
    }

    /// An operator drained the worker `name`: its sessions take no new work until
    /// ``operatorUndrain(_:)``.
    public mutating func operatorDrain(_ name: String) {
        operatorDrains.insert(name)
        for (id, record) in workers where record.name == name { workers[id]?.state = .draining }
    }

    /// An operator gives the worker `name` work again: its session is `ready` again unless it
    /// is stopping itself. Returns whether `name` was drained.
    @discardableResult
    public mutating func operatorUndrain(_ name: String) -> Bool {
        guard operatorDrains.remove(name) != nil else { return false }
        for (id, record) in workers where record.name == name && !record.stopping {
            workers[id]?.state = .ready
        }
        return true
    }

    /// Records that `worker` said something at `now`. Unknown workers are ignored.
    public mutating func heard(_ worker: SessionID, now: Timestamp) {
        if let lastHeard = workers[worker]?.lastHeard, lastHeard < now { workers[worker]?.lastHeard = now }
    }

    /// The sessions silent for longer than ``silenceLimit`` at `now`, in id order.
    public func expired(now: Timestamp) -> [SessionID] {
        let limit = silenceLimit
        return workers.values.filter { now - $0.lastHeard > limit }.map(\.id).sorted()
    }

    /// The earliest time a connected worker may expire (for the shell's poll timeout).
    public func nextExpiry() -> Timestamp? {
        workers.values.map(\.lastHeard).min().map { $0 + silenceLimit }
    }

    /// Removes a session, remembering it as `lost` for `cohort workers`.
    @discardableResult
    public mutating func remove(_ worker: SessionID) -> WorkerRecord? {
        guard var record = workers.removeValue(forKey: worker) else { return nil }
        record.state = .lost
        record.inFlight = 0
        departed.append(record)
        if departed.count > departedRetention { departed.removeFirst(departed.count - departedRetention) }
        return record
    }

    /// Changes a connected worker's state (e.g. to `draining`).
    public mutating func setState(_ state: WorkerPhase, of worker: SessionID) {
        workers[worker]?.state = state
    }

    /// The worker says it drains itself (it is stopping): `draining` until it leaves.
    public mutating func setStopping(_ worker: SessionID) {
        workers[worker]?.stopping = true
        workers[worker]?.state = .draining
    }

    /// Adjusts a worker's count of attempts in flight.
    mutating func addInFlight(_ delta: Int, to worker: SessionID) {
        guard workers[worker] != nil else { return }
        workers[worker]?.inFlight += delta
        if delta < 0 { workers[worker]?.completed += UInt64(-delta) }
    }

    /// One of the worker's attempts ran for `ran` (its own start to its own finish).
    mutating func noteRun(_ ran: Duration, on worker: SessionID) {
        workers[worker]?.noteRun(ran)
    }

    /// The connected session of the worker named `name`, if any.
    public func session(named name: String) -> SessionID? {
        workers.values.first { $0.name == name }?.id
    }
}
