/// A ZAP authentication request (RFC 27): a peer is completing its handshake.
///
/// Thread-safety: a plain `Sendable` value.
public struct ZAPRequest: Sendable, Hashable {
    /// The server socket's `ZAP_DOMAIN`.
    public var domain: String
    /// The peer's IP address, e.g. `"127.0.0.1"`.
    public var address: String
    /// The routing id the server socket knows the peer by (often empty).
    public var routingID: [UInt8]
    /// `"CURVE"`, `"PLAIN"` or `"NULL"`.
    public var mechanism: String
    /// The mechanism's credential frames (for CURVE: the client's 32-byte public key).
    public var credentials: [[UInt8]]

    /// Makes a request; mostly for tests of authorisation closures.
    public init(domain: String, address: String, routingID: [UInt8], mechanism: String, credentials: [[UInt8]]) {
        self.domain = domain
        self.address = address
        self.routingID = routingID
        self.mechanism = mechanism
        self.credentials = credentials
    }

    /// The client's long-term CURVE public key, for the `CURVE` mechanism.
    public var curvePublicKey: CurvePublicKey? {
        guard mechanism == "CURVE", let key = credentials.first else { return nil }
        return try? CurvePublicKey(bytes: key)
    }

    /// The client's CURVE public key as 40 Z85 characters, for the `CURVE` mechanism.
    public var curvePublicKeyZ85: String? { curvePublicKey?.z85 }
}

/// A ``ZAPHandler``'s answer to a ``ZAPRequest``.
///
/// Thread-safety: a plain `Sendable` value.
public enum ZAPDecision: Sendable, Hashable {
    /// Admit the peer; every message it sends carries `userID` as its
    /// `User-Id` (see ``Socket/receiveWithUserID(wait:)``).
    case allow(userID: String)
    /// Refuse the peer (ZAP status 400); `reason` goes to the peer's handshake error.
    case deny(reason: String)
}
