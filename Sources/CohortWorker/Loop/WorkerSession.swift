import CohortWire

/// The worker's side of its connection to the coordinator, as a state machine without I/O:
/// handshake, heartbeats both ways, loss detection and reconnection with backoff.
///
/// The loop feeds it what it receives and the time, and carries out the actions it returns.
/// Every connection is a new session with a fresh id. A coordinator that says nothing for
/// `liveness` intervals is lost: the connection is closed, and a new one is tried after the
/// reconnect delay, which doubles after every failure (1 s, 2 s, … 32 s) and starts over
/// once a WELCOME arrives.
struct WorkerSession {
    typealias Instant = ContinuousClock.Instant

    enum Phase: Equatable {
        /// No connection; the next is tried at `retryAt`.
        case disconnected(retryAt: Instant)
        /// HELLO sent on a new connection at `since`; waiting for WELCOME.
        case handshaking(sessionID: String, since: Instant)
        /// Welcomed: the coordinator knows this session.
        case ready(sessionID: String, peerID: String)
        /// Stopped for good (stopping, or refused by the coordinator).
        case stopped
    }

    enum Action: Equatable {
        /// Open a new connection and send HELLO on it.
        case connect(sessionID: String)
        /// Welcomed: send READY (capacity, kinds, attempts still running), then what waited.
        case announce(sessionID: String, peerID: String)
        /// Nothing was sent for an interval: send a heartbeat.
        case heartbeat
        /// Close the connection; no new work starts until the next session.
        case disconnect(reason: String)
        /// The coordinator refused this worker for good (another protocol version): stop.
        case fail(HandshakeError)
    }

    /// What the loop received, as far as the session cares.
    enum Input {
        case welcome(Welcome)
        case refused(HandshakeError)
        case shutdown(ShutdownNotice)
        /// The coordinator no longer knows this session (`handshakeRequired`).
        case forgotten(String)
        /// Any other message: proof of life.
        case other
    }

    struct Settings {
        var heartbeatInterval: Duration
        var heartbeatLiveness: Int
        var reconnectDelay: Duration
        var maxReconnectDelay: Duration
    }

    private(set) var phase: Phase
    /// The interval in force: the configured one until a WELCOME names the coordinator's.
    private(set) var interval: Duration
    private(set) var liveness: Int
    /// The wait before the next reconnection attempt.
    private(set) var reconnectDelay: Duration
    private let settings: Settings
    private let makeSessionID: () -> String
    private var lastReceived: Instant
    private var lastSent: Instant

    /// A session that connects at the first ``tick(now:)``.
    init(settings: Settings, now: Instant, makeSessionID: @escaping () -> String) {
        self.settings = settings
        self.makeSessionID = makeSessionID
        phase = .disconnected(retryAt: now)
        interval = settings.heartbeatInterval
        liveness = settings.heartbeatLiveness
        reconnectDelay = settings.reconnectDelay
        lastReceived = now
        lastSent = now
    }

    var isReady: Bool {
        if case .ready = phase { return true }
        return false
    }

    /// The current session's id, while connected.
    var sessionID: String? {
        switch phase {
        case .handshaking(let id, _), .ready(let id, _): id
        case .disconnected, .stopped: nil
        }
    }

    /// How long silence lasts before the other side is lost.
    var silenceLimit: Duration { interval * liveness }

    /// When ``tick(now:)`` next has something to do; nil when stopped.
    var nextDeadline: Instant? {
        switch phase {
        case .disconnected(let retryAt): retryAt
        case .handshaking(_, let since): since + silenceLimit
        case .ready: min(lastSent + interval, lastReceived + silenceLimit)
        case .stopped: nil
        }
    }

    /// Connects when due, gives up on a handshake or a silent coordinator, heartbeats.
    mutating func tick(now: Instant) -> [Action] {
        switch phase {
        case .disconnected(let retryAt):
            guard now >= retryAt else { return [] }
            let sessionID = makeSessionID()
            phase = .handshaking(sessionID: sessionID, since: now)
            lastReceived = now
            lastSent = now
            return [.connect(sessionID: sessionID)]
        case .handshaking(_, let since):
            guard now - since >= silenceLimit else { return [] }
            return lose(now: now, reason: "no WELCOME from the coordinator within \(silenceLimit)")
        case .ready:
            if now - lastReceived >= silenceLimit {
                return lose(now: now, reason: "the coordinator was silent for \(silenceLimit)")
            }
            guard now - lastSent >= interval else { return [] }
            lastSent = now
            return [.heartbeat]
        case .stopped:
            return []
        }
    }

    /// Takes in a message from the coordinator.
    mutating func received(_ input: Input, now: Instant) -> [Action] {
        switch phase {
        case .disconnected, .stopped:
            return []
        case .handshaking(let sessionID, _):
            lastReceived = now
            switch input {
            case .welcome(let welcome):
                phase = .ready(sessionID: sessionID, peerID: welcome.peerID)
                interval = welcome.heartbeatInterval > .zero ? welcome.heartbeatInterval : settings.heartbeatInterval
                liveness = welcome.heartbeatLiveness > 0 ? Int(welcome.heartbeatLiveness) : settings.heartbeatLiveness
                reconnectDelay = settings.reconnectDelay
                lastSent = now
                return [.announce(sessionID: sessionID, peerID: welcome.peerID)]
            case .refused(let error):
                return refuse(error, now: now)
            case .shutdown(let notice):
                return lose(now: now, reason: "the coordinator is shutting down: \(notice.reason)")
            case .forgotten, .other:
                return []
            }
        case .ready:
            lastReceived = now
            switch input {
            case .refused(let error):
                return refuse(error, now: now)
            case .shutdown(let notice):
                return lose(now: now, reason: "the coordinator is shutting down: \(notice.reason)")
            case .forgotten(let message):
                // The coordinator lost track of this session (it restarted, or declared this
                // worker lost): a new session at once, no backoff.
                phase = .disconnected(retryAt: now)
                return [.disconnect(reason: "the coordinator no longer knows this session: \(message)")]
            case .welcome, .other:
                return []
            }
        }
    }

    /// Records that something was sent (any message counts as a heartbeat).
    mutating func didSend(now: Instant) {
        lastSent = now
    }

    /// Stops for good.
    mutating func stop() {
        phase = .stopped
    }

    private mutating func refuse(_ error: HandshakeError, now: Instant) -> [Action] {
        // Another protocol version, or a key or role the coordinator refuses: retrying cannot help.
        if error.code == .unsupportedVersion || error.code == .permissionDenied {
            phase = .stopped
            return [.disconnect(reason: "refused: \(error.message)"), .fail(error)]
        }
        return lose(now: now, reason: "refused: \(error.message)")
    }

    /// Closes the connection and schedules the next attempt after the current delay, doubled next time.
    private mutating func lose(now: Instant, reason: String) -> [Action] {
        phase = .disconnected(retryAt: now + reconnectDelay)
        reconnectDelay = min(reconnectDelay * 2, settings.maxReconnectDelay)
        return [.disconnect(reason: reason)]
    }
}
