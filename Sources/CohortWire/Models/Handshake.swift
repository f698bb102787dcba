/// The handshake family: the first message of every connection and its answer.
///
/// A peer (worker or client) sends ``hello(_:)`` first; the coordinator
/// answers ``welcome(_:)`` or ``error(_:)``. The coordinator may also send
/// ``error(_:)`` at any later time to refuse a peer it does not (or no
/// longer) know, or a message it cannot decode. This family's layout is
/// frozen across protocol versions, so a peer of any version can read a
/// version-mismatch refusal.
public enum Handshake: Hashable, Sendable {
    case hello(Hello)
    case welcome(Welcome)
    case error(HandshakeError)
}

/// What kind of peer says HELLO.
public enum PeerRole: Hashable, Sendable, CaseIterable {
    /// Runs attempts; sends ``WorkerMessage``s, receives ``CoordinatorToWorker``.
    case worker
    /// Submits and queries groups; sends ``ClientRequest``s, receives ``CoordinatorReply``s.
    case client
}

/// Peer → coordinator: the first message on every connection.
public struct Hello: Hashable, Sendable {
    public var role: PeerRole
    /// The protocol version the peer speaks; always the same as its header's.
    public var protocolVersion: UInt16
    /// The peer's Cohort release, e.g. `0.3.1`; informative only.
    public var softwareVersion: String
    /// A name for logs and `cohort workers`: the worker's name, or e.g. `cohort-cli@host`.
    public var peerName: String

    public init(
        role: PeerRole, protocolVersion: UInt16 = WireVersion.current, softwareVersion: String, peerName: String
    ) {
        self.role = role
        self.protocolVersion = protocolVersion
        self.softwareVersion = softwareVersion
        self.peerName = peerName
    }
}

/// Coordinator → peer: the HELLO is accepted.
public struct Welcome: Hashable, Sendable {
    /// The coordinator's stable id (the same across its restarts).
    public var coordinatorID: String
    /// The coordinator's incarnation: grows each time the coordinator starts.
    /// A peer that reconnects and sees a new epoch knows the coordinator restarted.
    public var epoch: UInt64
    /// The id the coordinator gives this peer for this session (e.g. `w-3`).
    public var peerID: String
    /// How often each side sends something (a heartbeat when idle). Millisecond precision on the wire.
    public var heartbeatInterval: Duration
    /// How many intervals without any message before the other side is declared lost.
    public var heartbeatLiveness: UInt32
    /// The coordinator's protocol version.
    public var protocolVersion: UInt16
    /// The coordinator's Cohort release; informative only.
    public var softwareVersion: String
    /// The coordinator acknowledges a worker's numbered heartbeats, so the worker keeps a
    /// lease (docs/scheduling.md, "Leases"); false from a coordinator that does not.
    public var acknowledgesHeartbeats: Bool

    public init(
        coordinatorID: String,
        epoch: UInt64,
        peerID: String,
        heartbeatInterval: Duration = .seconds(1),
        heartbeatLiveness: UInt32 = 3,
        protocolVersion: UInt16 = WireVersion.current,
        softwareVersion: String,
        acknowledgesHeartbeats: Bool = true
    ) {
        self.acknowledgesHeartbeats = acknowledgesHeartbeats
        self.coordinatorID = coordinatorID
        self.epoch = epoch
        self.peerID = peerID
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatLiveness = heartbeatLiveness
        self.protocolVersion = protocolVersion
        self.softwareVersion = softwareVersion
    }
}

/// Coordinator → peer: the HELLO (or a message) is refused; the peer is not
/// in a session afterwards and must not send anything but a new HELLO.
public struct HandshakeError: Error, Hashable, Sendable, CustomStringConvertible {
    public var code: ProtocolError.Code
    public var message: String
    /// The protocol versions the coordinator speaks.
    public var supportedVersions: ClosedRange<UInt16>
    /// With ``ProtocolError/Code/notLeader``: the endpoint the leading coordinator advertises
    /// (`tcp://host:port`); nil while none leads.
    public var leader: String?

    public init(
        code: ProtocolError.Code, message: String, supportedVersions: ClosedRange<UInt16> = WireVersion.supported,
        leader: String? = nil
    ) {
        self.code = code
        self.message = message
        self.supportedVersions = supportedVersions
        self.leader = leader
    }

    /// The refusal of a peer that speaks protocol version `got`:
    /// `protocol version 3 is not supported; this coordinator speaks 2`.
    public static func unsupportedVersion(_ got: UInt16, supported: ClosedRange<UInt16> = WireVersion.supported)
        -> HandshakeError
    {
        HandshakeError(
            code: .unsupportedVersion,
            message: "protocol version \(got) is not supported; this coordinator speaks \(Self.describe(supported))",
            supportedVersions: supported
        )
    }

    /// The refusal of a message that could not be decoded: the code and text of `error`.
    public init(refusing error: WireError) {
        if case .unsupportedVersion(let got, _) = error {
            self = .unsupportedVersion(got)
        } else {
            self.init(code: error.code, message: error.description)
        }
    }

    public var description: String { "\(code): \(message)" }

    private static func describe(_ versions: ClosedRange<UInt16>) -> String {
        versions.lowerBound == versions.upperBound
            ? "\(versions.lowerBound)" : "\(versions.lowerBound) to \(versions.upperBound)"
    }
}
