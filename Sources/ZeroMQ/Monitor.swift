import CZeroMQ
import Synchronization

/// Something that happened to a monitored socket's connections.
///
/// Thread-safety: a plain `Sendable` value.
public struct MonitorEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened (`ZMQ_EVENT_*`).
    public enum Kind: Sendable, Hashable {
        /// A connect finished its TCP connection (`value`: the descriptor).
        case connected
        /// A connect is in progress (`value`: errno).
        case connectDelayed
        /// A reconnect was scheduled (`value`: the interval in ms).
        case connectRetried
        /// A bind is listening (`value`: the descriptor).
        case listening
        /// A bind failed (`value`: errno).
        case bindFailed
        /// A listener accepted a connection (`value`: the descriptor).
        case accepted
        /// A listener failed to accept (`value`: errno).
        case acceptFailed
        /// A connection was closed (`value`: the descriptor).
        case closed
        /// Closing a connection failed (`value`: errno).
        case closeFailed
        /// A session broke: the peer went away, or broke the protocol (e.g.
        /// exceeded `MAXMSGSIZE`) (`value`: the descriptor).
        case disconnected
        /// Monitoring stopped; the last event.
        case monitorStopped
        /// The ZMTP handshake failed for a reason without a code, e.g. no ZAP
        /// handler while `ZAP_ENFORCE_DOMAIN` is set (`value`: errno).
        case handshakeFailedNoDetail
        /// The ZMTP handshake, including authentication, succeeded.
        case handshakeSucceeded
        /// The peer broke the handshake protocol, e.g. a wrong CURVE server key
        /// (`value`: a `ZMQ_PROTOCOL_ERROR_*` code).
        case handshakeFailedProtocol
        /// The ZAP handler refused the peer (`value`: the ZAP status code, e.g. 400).
        case handshakeFailedAuth
        /// An event this binding does not know.
        case unknown(UInt16)

        init(rawValue: UInt16) {
            switch Int32(rawValue) {
            case ZMQ_EVENT_CONNECTED: self = .connected
            case ZMQ_EVENT_CONNECT_DELAYED: self = .connectDelayed
            case ZMQ_EVENT_CONNECT_RETRIED: self = .connectRetried
            case ZMQ_EVENT_LISTENING: self = .listening
            case ZMQ_EVENT_BIND_FAILED: self = .bindFailed
            case ZMQ_EVENT_ACCEPTED: self = .accepted
            case ZMQ_EVENT_ACCEPT_FAILED: self = .acceptFailed
            case ZMQ_EVENT_CLOSED: self = .closed
            case ZMQ_EVENT_CLOSE_FAILED: self = .closeFailed
            case ZMQ_EVENT_DISCONNECTED: self = .disconnected
            case ZMQ_EVENT_MONITOR_STOPPED: self = .monitorStopped
            case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: self = .handshakeFailedNoDetail
            case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: self = .handshakeSucceeded
            case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: self = .handshakeFailedProtocol
            case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: self = .handshakeFailedAuth
            default: self = .unknown(rawValue)
            }
        }
    }

    /// What happened.
    public var kind: Kind
    /// The event's value: a descriptor, errno, interval, ZAP status or protocol error code (see ``Kind``).
    public var value: UInt32
    /// The endpoint concerned, e.g. `"tcp://127.0.0.1:41234"`.
    public var endpoint: String

    /// Makes an event; mostly for tests and fakes.
    public init(kind: Kind, value: UInt32, endpoint: String) {
        self.kind = kind
        self.value = value
        self.endpoint = endpoint
    }

    /// Whether the handshake failed (no detail, protocol or authentication).
    public var isHandshakeFailure: Bool {
        switch kind {
        case .handshakeFailedNoDetail, .handshakeFailedProtocol, .handshakeFailedAuth: true
        default: false
        }
    }

    /// `"handshakeFailedAuth(400) tcp://127.0.0.1:41234"`.
    public var description: String { "\(kind)(\(value)) \(endpoint)" }
}

/// Which events a ``Monitor`` reports (`ZMQ_EVENT_*` bits).
///
/// Thread-safety: a plain `Sendable` value.
public struct MonitorEvents: OptionSet, Sendable, Hashable {
    /// The raw `ZMQ_EVENT_*` bits.
    public let rawValue: Int32
    /// Makes a set from `ZMQ_EVENT_*` bits.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Every event.
    public static let all = MonitorEvents(rawValue: ZMQ_EVENT_ALL)
    /// Connections made and accepted.
    public static let connections = MonitorEvents(rawValue: ZMQ_EVENT_CONNECTED | ZMQ_EVENT_ACCEPTED)
    /// Connections lost or closed.
    public static let disconnections = MonitorEvents(rawValue: ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED)
    /// A connect's TCP connection made, or a new attempt scheduled after one failed (refused,
    /// say): together they tell "nothing listens there" from "not answered yet".
    public static let connectAttempts = MonitorEvents(rawValue: ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED)
    /// Handshake outcomes, including authentication failures.
    public static let handshakes = MonitorEvents(
        rawValue: ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
            | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
    )
}

/// Events of one socket, read from the inproc PAIR socket that libzmq reports them on.
///
/// Create it with ``Socket/monitor(_:)`` before the socket binds or connects.
/// Register ``socket`` with a ``Poller`` to wait for events alongside others.
///
/// Thread-safety: `Sendable` for hand-off only, like ``Socket``: it belongs to
/// the thread that owns the monitored socket.
public final class Monitor: Sendable {
    /// The PAIR socket the events arrive on.
    public let socket: Socket
    /// The monitored socket.
    public let target: Socket

    init(target: Socket, events: MonitorEvents) throws(ZeroMQError) {
        let handle = try target.liveHandle()
        let endpoint = "inproc://cohort.monitor.\(monitorCounter.add(1, ordering: .relaxed).newValue)"
        try zmqCheck("zmq_socket_monitor") { zmq_socket_monitor(handle, endpoint, events.rawValue) }
        self.target = target
        do {
            socket = try target.context.socket(.pair)
            try socket.connect(endpoint)
        } catch {
            _ = try? zmqCall("zmq_socket_monitor") { zmq_socket_monitor(handle, nil, 0) }
            throw error
        }
    }

    /// The next event, or `nil` if none came in time.
    ///
    /// Thread-safety: the owning thread. Throws ``ZeroMQError``; after
    /// ``Context/shutdown()`` one whose ``ZeroMQError/isTerminated`` is true.
    public func next(wait: Wait = .forever) throws(ZeroMQError) -> MonitorEvent? {
        guard let frames = try socket.receiveFrames(wait: wait) else { return nil }
        guard frames.count == 2, frames[0].count == 6 else {
            throw ZeroMQError(code: ZeroMQError.Code.invalidArgument, call: "Monitor.next (malformed event)")
        }
        // Frame 1: a 16-bit event and a 32-bit value, native byte order, unaligned.
        let (event, value) = frames[0].withUnsafeBytes { raw in
            (raw.loadUnaligned(as: UInt16.self), raw.loadUnaligned(fromByteOffset: 2, as: UInt32.self))
        }
        return MonitorEvent(
            kind: MonitorEvent.Kind(rawValue: event),
            value: value,
            endpoint: String(decoding: frames[1], as: UTF8.self)
        )
    }

    /// Waits until an event satisfying `matches` arrives, skipping others; `nil` if `timeout` passes first.
    ///
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` as ``next(wait:)``.
    public func waitFor(
        timeout: Duration,
        where matches: (MonitorEvent) -> Bool
    ) throws(ZeroMQError) -> MonitorEvent? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero, let event = try next(wait: .upTo(remaining)) else { return nil }
            if matches(event) { return event }
        }
    }

    /// Stops monitoring and closes the event socket. Idempotent.
    ///
    /// Thread-safety: the owning thread. Throws nothing.
    public func close() {
        if let handle = target.handle {
            target.assertOwned()
            _ = try? zmqCall("zmq_socket_monitor") { zmq_socket_monitor(handle, nil, 0) }
        }
        socket.close()
    }
}

/// Makes monitor endpoints unique within the process (and so within any context).
private let monitorCounter = Atomic<Int>(0)

extension Socket {
    /// Starts reporting this socket's connection events to a new ``Monitor``.
    ///
    /// Call before ``bind(_:)``/``connect(_:)`` to see their events.
    /// Thread-safety: the owning thread; the monitor belongs to it too. Throws ``ZeroMQError``.
    public func monitor(_ events: MonitorEvents = .all) throws(ZeroMQError) -> Monitor {
        try Monitor(target: self, events: events)
    }
}
