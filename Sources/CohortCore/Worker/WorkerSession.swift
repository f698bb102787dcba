/// The worker's side of its connection to the coordinator, as a state machine without I/O:
/// handshake, heartbeats both ways, loss detection, reconnection with backoff, and the lease.
///
/// **The lease.** The coordinator declares the worker lost `interval × liveness` after it
/// last heard from it, and may then grant its categories to others. The worker cannot see
/// that clock, but it knows a time the coordinator had heard it by: the sending of a
/// heartbeat the coordinator acknowledged (or of the HELLO a WELCOME answered). Its lease
/// ends one interval earlier than the coordinator could declare it lost counting from there:
/// at `sent + interval × (liveness − 1)` (half an interval with a liveness of 1). When it
/// ends, the loop stops every attempt that holds a cluster-wide category, so they have
/// stopped before anyone else can be granted those categories (docs/scheduling.md, "Leases").
///
/// ``WorkerMachine`` feeds it what the worker receives and the time, and carries out the
/// actions it returns; it speaks no wire types (the shell maps them), so the simulation
/// drives the same code.
/// Every connection is a new session with a fresh id. A coordinator that says nothing for
/// `liveness` intervals is lost: the connection is closed, and a new one is tried after the
/// reconnect delay, which doubles after every failure (1 s, 2 s, … 32 s) and starts over
/// once a WELCOME arrives.
public struct WorkerSession: Sendable {
    public typealias Instant = Timestamp

    public enum Phase: Equatable, Sendable {
        /// No connection; the next is tried at `retryAt`.
        case disconnected(retryAt: Instant)
        /// HELLO sent on a new connection at `since`; waiting for WELCOME.
        case handshaking(sessionID: String, since: Instant)
        /// Welcomed: the coordinator knows this session.
        case ready(sessionID: String, peerID: String)
        /// Stopped for good (stopping, or refused by the coordinator).
        case stopped
    }

    public enum Action: Equatable, Sendable {
        /// Open a new connection and send HELLO on it.
        case connect(sessionID: String)
        /// Welcomed: send READY (capacity, kinds, attempts still running), then what waited.
        case announce(sessionID: String, peerID: String)
        /// An interval has passed since the last heartbeat: send this numbered one.
        case heartbeat(sequence: UInt64)
        /// The lease ended without an acknowledged heartbeat: stop what holds cluster locks,
        /// and start nothing new.
        case leaseEnded(reason: String)
        /// The worker holds a lease again, or for the first time (a WELCOME, an
        /// acknowledgement): work may start.
        case leaseRenewed
        /// Close the connection; no new work starts until the next session.
        case disconnect(reason: String)
        /// The coordinator refused this worker for good (another protocol version): stop.
        case fail(WorkerRefusal)
    }

    /// What the loop received, as far as the session cares.
    public enum Input: Sendable {
        case welcome(WorkerWelcome)
        case refused(WorkerRefusal)
        /// The coordinator is shutting down, for this reason.
        case shutdown(String)
        /// The coordinator no longer knows this session (`handshakeRequired`).
        case forgotten(String)
        /// A heartbeat of the coordinator's acknowledging the worker's heartbeat number `n` (0: none).
        case heartbeat(acknowledged: UInt64)
        /// Any other message: proof of life.
        case other
    }

    public struct Settings: Sendable {
        public var heartbeatInterval: Duration
        public var heartbeatLiveness: Int
        public var reconnectDelay: Duration
        public var maxReconnectDelay: Duration

        public init(
            heartbeatInterval: Duration, heartbeatLiveness: Int, reconnectDelay: Duration, maxReconnectDelay: Duration
        ) {
            self.heartbeatInterval = heartbeatInterval
            self.heartbeatLiveness = heartbeatLiveness
            self.reconnectDelay = reconnectDelay
            self.maxReconnectDelay = maxReconnectDelay
        }
    }

    public private(set) var phase: Phase
    /// The interval in force: the configured one until a WELCOME names the coordinator's.
    public private(set) var interval: Duration
    public private(set) var liveness: Int
    /// The wait before the next reconnection attempt.
    public private(set) var reconnectDelay: Duration
    private let settings: Settings
    private let makeSessionID: @Sendable () -> String
    private var lastReceived: Instant
    /// When the last numbered heartbeat went out.
    private var lastHeartbeat: Instant
    /// The last heartbeat number of this session (0 before the first).
    public private(set) var heartbeatSequence: UInt64 = 0
    /// Heartbeats sent and not acknowledged yet: number → when sent (oldest first).
    private var unacknowledged: [(sequence: UInt64, sentAt: Instant)] = []
    /// When the lease ends; nil before the first WELCOME.
    public private(set) var leaseEnd: Instant?
    /// The lease ended and ``Action/leaseEnded(reason:)`` was given; cleared by a renewal.
    public private(set) var leaseLapsed = false
    /// The coordinator acknowledges heartbeats (its WELCOME says so): the lease is kept and
    /// enforced. One that does not leaves the worker without lease enforcement.
    public private(set) var leaseEnforced = true

    /// A session that connects at the first ``tick(now:)``.
    public init(settings: Settings, now: Instant, makeSessionID: @escaping @Sendable () -> String) {
        self.settings = settings
        self.makeSessionID = makeSessionID
        phase = .disconnected(retryAt: now)
        interval = settings.heartbeatInterval
        liveness = settings.heartbeatLiveness
        reconnectDelay = settings.reconnectDelay
        lastReceived = now
        lastHeartbeat = now
    }

    public var isReady: Bool {
        if case .ready = phase { return true }
        return false
    }

    /// The current session's id, while connected.
    public var sessionID: String? {
        switch phase {
        case .handshaking(let id, _), .ready(let id, _): id
        case .disconnected, .stopped: nil
        }
    }

    /// How long silence lasts before the other side is lost.
    public var silenceLimit: Duration { interval * liveness }

    /// How long a lease lasts from the sending of an acknowledged heartbeat: one interval
    /// less than the coordinator waits before it declares the worker lost (half an interval
    /// with a liveness of 1).
    public var leaseDuration: Duration { liveness >= 2 ? interval * (liveness - 1) : interval / 2 }

    /// Whether the worker holds a lease now: renewed at least once and not lapsed since, or
    /// welcomed by a coordinator that keeps no leases. Work starts only while it does.
    public var holdsLease: Bool { !leaseEnforced || (leaseEnd != nil && !leaseLapsed) }

    /// Whether the lease still runs at `now`, whether or not ``tick(now:)`` has seen it end.
    public func holdsLease(at now: Instant) -> Bool {
        !leaseEnforced || (!leaseLapsed && leaseEnd.map { now < $0 } == true)
    }

    /// When ``tick(now:)`` next has something to do; nil when stopped.
    public var nextDeadline: Instant? {
        let connection: Instant? =
            switch phase {
            case .disconnected(let retryAt): retryAt
            case .handshaking(_, let since): since + silenceLimit
            case .ready: min(lastHeartbeat + interval, lastReceived + silenceLimit)
            case .stopped: nil
            }
        guard let connection else { return nil }
        guard let leaseEnd, !leaseLapsed else { return connection }
        return min(connection, leaseEnd)
    }

    /// Connects when due, gives up on a handshake or a silent coordinator, heartbeats, and
    /// says when the lease ends.
    public mutating func tick(now: Instant) -> [Action] {
        var actions: [Action] = []
        if leaseEnforced, let leaseEnd, !leaseLapsed, now >= leaseEnd {
            leaseLapsed = true
            actions.append(.leaseEnded(reason: "no heartbeat acknowledged by the coordinator for \(leaseDuration)"))
        }
        return actions + connectionTick(now: now)
    }

    private mutating func connectionTick(now: Instant) -> [Action] {
        switch phase {
        case .disconnected(let retryAt):
            guard now >= retryAt else { return [] }
            let sessionID = makeSessionID()
            phase = .handshaking(sessionID: sessionID, since: now)
            lastReceived = now
            heartbeatSequence = 0
            unacknowledged = []
            return [.connect(sessionID: sessionID)]
        case .handshaking(_, let since):
            guard now - since >= silenceLimit else { return [] }
            return lose(now: now, reason: "no WELCOME from the coordinator within \(silenceLimit)")
        case .ready:
            if now - lastReceived >= silenceLimit {
                return lose(now: now, reason: "the coordinator was silent for \(silenceLimit)")
            }
            // Numbered heartbeats go out every interval whatever else is sent: the lease runs
            // on their acknowledgements.
            guard now - lastHeartbeat >= interval else { return [] }
            lastHeartbeat = now
            heartbeatSequence += 1
            unacknowledged.append((heartbeatSequence, now))
            // Older than the lease, an unacknowledged heartbeat can extend nothing.
            let limit = silenceLimit
            unacknowledged.removeAll { now - $0.sentAt > limit }
            return [.heartbeat(sequence: heartbeatSequence)]
        case .stopped:
            return []
        }
    }

    /// Takes in a message from the coordinator.
    public mutating func received(_ input: Input, now: Instant) -> [Action] {
        let held = holdsLease
        let actions = receivedInSession(input, now: now)
        return !held && holdsLease ? actions + [.leaseRenewed] : actions
    }

    private mutating func receivedInSession(_ input: Input, now: Instant) -> [Action] {
        switch phase {
        case .disconnected, .stopped:
            return []
        case .handshaking(let sessionID, let since):
            lastReceived = now
            switch input {
            case .welcome(let welcome):
                phase = .ready(sessionID: sessionID, peerID: welcome.peerID)
                interval = welcome.heartbeatInterval > .zero ? welcome.heartbeatInterval : settings.heartbeatInterval
                liveness = welcome.heartbeatLiveness > 0 ? welcome.heartbeatLiveness : settings.heartbeatLiveness
                reconnectDelay = settings.reconnectDelay
                lastHeartbeat = now
                // The coordinator had heard the HELLO, sent at the handshake's start, by then.
                leaseEnforced = welcome.acknowledgesHeartbeats
                renewLease(sentAt: since, now: now)
                return [.announce(sessionID: sessionID, peerID: welcome.peerID)]
            case .refused(let error):
                return refuse(error, now: now)
            case .shutdown(let reason):
                return lose(now: now, reason: "the coordinator is shutting down: \(reason)")
            case .forgotten, .heartbeat, .other:
                return []
            }
        case .ready:
            lastReceived = now
            switch input {
            case .refused(let error):
                return refuse(error, now: now)
            case .shutdown(let reason):
                return lose(now: now, reason: "the coordinator is shutting down: \(reason)")
            case .forgotten(let message):
                // The coordinator lost track of this session (it restarted, or declared this
                // worker lost): a new session at once, no backoff.
                phase = .disconnected(retryAt: now)
                return [.disconnect(reason: "the coordinator no longer knows this session: \(message)")]
            case .heartbeat(let acknowledged):
                guard acknowledged != 0, let index = unacknowledged.firstIndex(where: { $0.sequence == acknowledged })
                else { return [] }
                renewLease(sentAt: unacknowledged[index].sentAt, now: now)
                unacknowledged.removeFirst(index + 1)
                return []
            case .welcome, .other:
                return []
            }
        }
    }

    /// The coordinator had heard from this worker by `sentAt`: the lease runs from there.
    private mutating func renewLease(sentAt: Instant, now: Instant) {
        let end = sentAt + leaseDuration
        guard end > now, leaseEnd.map({ $0 < end }) ?? true else { return }
        leaseEnd = end
        leaseLapsed = false
    }

    /// Stops for good.
    public mutating func stop() {
        phase = .stopped
    }

    /// The connection failed under the session (a send or a receive failed): closed, and a
    /// new one tried after the reconnect delay, as for a silent coordinator.
    public mutating func connectionFailed(now: Instant, reason: String) -> [Action] {
        switch phase {
        case .handshaking, .ready: lose(now: now, reason: reason)
        case .disconnected, .stopped: []
        }
    }

    private mutating func refuse(_ refusal: WorkerRefusal, now: Instant) -> [Action] {
        // Another protocol version, or a key or role the coordinator refuses: retrying cannot help.
        if refusal.isPermanent {
            phase = .stopped
            return [.disconnect(reason: "refused: \(refusal.message)"), .fail(refusal)]
        }
        if refusal.kind == .notLeader {
            // Redirected, not failed: the leader it names at once (a tenth of the first
            // delay), else the next coordinator after the first delay; the backoff stays.
            let delay = refusal.leader == nil ? settings.reconnectDelay : settings.reconnectDelay / 10
            phase = .disconnected(retryAt: now + delay)
            return [.disconnect(reason: "refused: \(refusal.message)")]
        }
        return lose(now: now, reason: "refused: \(refusal.message)")
    }

    /// Closes the connection and schedules the next attempt after the current delay, doubled next time.
    private mutating func lose(now: Instant, reason: String) -> [Action] {
        phase = .disconnected(retryAt: now + reconnectDelay)
        reconnectDelay = min(reconnectDelay * 2, settings.maxReconnectDelay)
        return [.disconnect(reason: reason)]
    }
}

/// What a coordinator's WELCOME tells a worker.
public struct WorkerWelcome: Equatable, Sendable {
    /// The id the coordinator knows the worker by.
    public var peerID: String
    /// The coordinator's heartbeat interval (zero: keep the configured one).
    public var heartbeatInterval: Duration
    /// The coordinator's liveness (0: keep the configured one).
    public var heartbeatLiveness: Int
    /// Whether it acknowledges numbered heartbeats (the lease is kept only then).
    public var acknowledgesHeartbeats: Bool

    public init(peerID: String, heartbeatInterval: Duration, heartbeatLiveness: Int, acknowledgesHeartbeats: Bool) {
        self.peerID = peerID
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatLiveness = heartbeatLiveness
        self.acknowledgesHeartbeats = acknowledgesHeartbeats
    }
}

/// A coordinator's refusal of a worker's handshake.
public struct WorkerRefusal: Error, Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// Worth another try later (the coordinator is busy, starting, …).
        case retry
        /// Another protocol version: retrying cannot help.
        case unsupportedVersion
        /// A key or role the coordinator refuses: retrying cannot help.
        case permissionDenied
        /// A standby coordinator (NOT_LEADER): try the leader it names (``WorkerRefusal/leader``)
        /// soon, or the next coordinator; the backoff does not grow.
        case notLeader
    }

    public var kind: Kind
    public var message: String
    /// With ``Kind/notLeader``: the leader's endpoint, if one leads.
    public var leader: String?

    public init(_ kind: Kind, _ message: String, leader: String? = nil) {
        self.kind = kind
        self.message = message
        self.leader = leader
    }

    public var isPermanent: Bool { kind == .unsupportedVersion || kind == .permissionDenied }
}
