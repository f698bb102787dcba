import CZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A CURVE public key: 32 bytes, written as 40 Z85 characters.
///
/// Thread-safety: a plain `Sendable` value.
public struct CurvePublicKey: Hashable, Sendable, CustomStringConvertible {
    /// The key's size in bytes.
    public static let byteCount = 32

    /// The raw key.
    public let bytes: [UInt8]

    /// A key from its 32 raw bytes.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`EINVAL`) for any other length.
    public init(bytes: [UInt8]) throws(ZeroMQError) {
        guard bytes.count == Self.byteCount else {
            throw ZeroMQError(code: ZeroMQError.Code.invalidArgument, call: "CurvePublicKey(bytes:)")
        }
        self.bytes = bytes
    }

    /// A key from its 40-character Z85 text, as `cohort keygen` writes it.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`EINVAL`) for malformed text.
    public init(z85: String) throws(ZeroMQError) {
        try self.init(bytes: Z85.decode(z85, expectedCount: Self.byteCount))
    }

    init(uncheckedBytes: [UInt8]) { bytes = uncheckedBytes }

    /// The key as 40 Z85 characters.
    public var z85: String { Z85.encode(bytes) }

    /// The key's Z85 text; public keys are not secret.
    public var description: String { z85 }
}

/// A CURVE secret key: 32 bytes, written as 40 Z85 characters. Never printed.
///
/// Thread-safety: a plain `Sendable` value.
public struct CurveSecretKey: Hashable, Sendable, CustomStringConvertible {
    /// The key's size in bytes.
    public static let byteCount = 32

    /// The raw key.
    public let bytes: [UInt8]

    /// A key from its 32 raw bytes.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`EINVAL`) for any other length.
    public init(bytes: [UInt8]) throws(ZeroMQError) {
        guard bytes.count == Self.byteCount else {
            throw ZeroMQError(code: ZeroMQError.Code.invalidArgument, call: "CurveSecretKey(bytes:)")
        }
        self.bytes = bytes
    }

    /// A key from its 40-character Z85 text.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`EINVAL`) for malformed text.
    public init(z85: String) throws(ZeroMQError) {
        try self.init(bytes: Z85.decode(z85, expectedCount: Self.byteCount))
    }

    init(uncheckedBytes: [UInt8]) { bytes = uncheckedBytes }

    /// The key as 40 Z85 characters (write it only to a file only its owner can read).
    public var z85: String { Z85.encode(bytes) }

    /// `"CurveSecretKey(redacted)"`: secret keys stay out of logs.
    public var description: String { "CurveSecretKey(redacted)" }

    /// The public key that belongs to this secret key (`zmq_curve_public`).
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`ENOTSUP` without CURVE support).
    public func publicKey() throws(ZeroMQError) -> CurvePublicKey {
        var publicText = [CChar](repeating: 0, count: 41)
        var secretText = Array(z85.utf8CString)
        defer { for index in secretText.indices { secretText[index] = 0 } }
        try zmqCheck("zmq_curve_public") { zmq_curve_public(&publicText, &secretText) }
        return try CurvePublicKey(z85: String(nulTerminated: publicText))
    }
}

/// A CURVE key pair.
///
/// Thread-safety: a plain `Sendable` value.
public struct CurveKeyPair: Hashable, Sendable {
    /// The key to give to peers.
    public let publicKey: CurvePublicKey
    /// The key to keep.
    public let secretKey: CurveSecretKey

    /// Generates a new random key pair (`zmq_curve_keypair`).
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`ENOTSUP` without CURVE support).
    public static func generate() throws(ZeroMQError) -> CurveKeyPair {
        var publicText = [CChar](repeating: 0, count: 41)
        var secretText = [CChar](repeating: 0, count: 41)
        defer { for index in secretText.indices { secretText[index] = 0 } }
        try zmqCheck("zmq_curve_keypair") { zmq_curve_keypair(&publicText, &secretText) }
        return CurveKeyPair(
            publicKey: try CurvePublicKey(z85: String(nulTerminated: publicText)),
            secretKey: try CurveSecretKey(z85: String(nulTerminated: secretText))
        )
    }

    /// The pair for a known secret key, deriving its public key.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` as ``CurveSecretKey/publicKey()``.
    public init(secretKey: CurveSecretKey) throws(ZeroMQError) {
        self.init(publicKey: try secretKey.publicKey(), secretKey: secretKey)
    }

    /// A pair from both keys; the caller vouches that they belong together.
    public init(publicKey: CurvePublicKey, secretKey: CurveSecretKey) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }
}

/// Z85, ZeroMQ's text encoding for binary keys (RFC 32): 5 characters per 4 bytes.
///
/// Thread-safety: stateless; any thread.
public enum Z85 {
    /// Encodes bytes whose count is a multiple of 4; other counts are padded
    /// with zero bytes up to one.
    ///
    /// Throws nothing.
    public static func encode(_ bytes: [UInt8]) -> String {
        var input = bytes
        while input.count % 4 != 0 { input.append(0) }
        var output = [CChar](repeating: 0, count: input.count / 4 * 5 + 1)
        // zmq_z85_encode fails (NULL, EINVAL) only for a size not divisible by 4.
        _ = try? zmqCall("zmq_z85_encode", failed: { $0 == nil }) { zmq_z85_encode(&output, input, input.count) }
        return String(nulTerminated: output)
    }

    /// Decodes Z85 text whose length is a multiple of 5.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`EINVAL`) for a bad length or character.
    public static func decode(_ text: String) throws(ZeroMQError) -> [UInt8] {
        let characters = Array(text.utf8)
        guard characters.count % 5 == 0, characters.allSatisfy({ $0 > 32 && $0 < 128 }) else {
            throw ZeroMQError(code: ZeroMQError.Code.invalidArgument, call: "zmq_z85_decode")
        }
        var output = [UInt8](repeating: 0, count: characters.count / 5 * 4)
        let decoded = try zmqCall("zmq_z85_decode", failed: { $0 == nil }) { zmq_z85_decode(&output, text) }
        guard decoded != nil else {
            throw ZeroMQError(code: ZeroMQError.Code.invalidArgument, call: "zmq_z85_decode")
        }
        return output
    }

    static func decode(_ text: String, expectedCount: Int) throws(ZeroMQError) -> [UInt8] {
        let bytes = try decode(text)
        guard bytes.count == expectedCount else {
            throw ZeroMQError(code: ZeroMQError.Code.invalidArgument, call: "zmq_z85_decode")
        }
        return bytes
    }
}

extension String {
    /// The text of a NUL-terminated C buffer that libzmq filled.
    init(nulTerminated characters: [CChar]) {
        let end = characters.firstIndex(of: 0) ?? characters.endIndex
        self = String(decoding: characters[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// What a CURVE client needs: its own key pair and the server's public key.
///
/// Thread-safety: a plain `Sendable` value.
public struct CurveClientKeys: Hashable, Sendable {
    /// This client's key pair; the server admits (or refuses) its public key.
    public var keyPair: CurveKeyPair
    /// The server's public key; a server with another key fails the handshake.
    public var serverKey: CurvePublicKey

    public init(keyPair: CurveKeyPair, serverKey: CurvePublicKey) {
        self.keyPair = keyPair
        self.serverKey = serverKey
    }
}

extension MonitorEvent {
    /// What a failed handshake means to a client of a server, in words; `nil` for other events.
    ///
    /// `curve` says whether this side used CURVE. A server closes the connection during the
    /// handshake (``Kind/handshakeFailedNoDetail``, errno `EPIPE`) when one side uses CURVE and
    /// the other does not, or the client has the wrong server key; but a connection that broke
    /// for any other reason (the server restarting) looks the same, so callers should count on
    /// it only when it repeats. ``Kind/handshakeFailedAuth`` is a definite refusal.
    public func handshakeFailureExplanation(curve: Bool) -> String? {
        switch kind {
        case .handshakeFailedAuth:
            "the server refused this CURVE key (ZAP status \(value)): it is not among the server's authorised keys"
        case .handshakeFailedNoDetail, .handshakeFailedProtocol:
            curve
                ? "the CURVE handshake failed (\(handshakeFailureDetail)): the server's public key is wrong, or the server does not use CURVE"
                : "the handshake failed (\(handshakeFailureDetail)): the server requires CURVE; give this peer its key pair and the server's public key"
        default:
            nil
        }
    }

    /// Whether the handshake failed for certain (a refused key, a protocol error), not
    /// possibly because the connection broke.
    public var isDefiniteHandshakeFailure: Bool {
        kind == .handshakeFailedAuth || kind == .handshakeFailedProtocol
    }

    /// What a failed handshake event says, in words: the `ZMQ_PROTOCOL_ERROR_*` named (a
    /// mechanism mismatch is CURVE on one side only), or the errno of a closed connection.
    public var handshakeFailureDetail: String {
        guard kind == .handshakeFailedProtocol else {
            return "the server closed the connection: \(String(cString: strerror(Int32(bitPattern: value))))"
        }
        switch Int32(bitPattern: value) {
        case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH: return "the two sides use different security mechanisms"
        case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC: return "a CURVE message could not be decrypted (a wrong key)"
        case ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE: return "the CURVE key exchange failed"
        case ZMQ_PROTOCOL_ERROR_ZMTP_UNEXPECTED_COMMAND, ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_SEQUENCE:
            return "the peer broke the ZMTP handshake's sequence"
        case let code where code & 0x7000_0000 == 0x2000_0000:
            return "the server's authentication handler answered badly"
        case let code: return "ZMTP protocol error 0x\(String(UInt32(bitPattern: code), radix: 16))"
        }
    }
}
