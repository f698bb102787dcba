/// Why frames could not be decoded (or a message could not be encoded).
///
/// Every decoding failure is one of these; decoding never traps. The
/// coordinator answers a peer whose message failed with
/// ``HandshakeError/init(refusing:)`` (or a family's own error reply), whose
/// code is ``code``.
public enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Not exactly 2 frames (header, body) after the routing id.
    case wrongFrameCount(got: Int)
    /// Frame `frame` has `size` bytes, over the decoder's (or encoder's) `limit`.
    case frameTooLarge(frame: Int, size: Int, limit: Int)
    /// Frame `frame` has `size` bytes, fewer than the `needed`.
    case truncated(frame: Int, size: Int, needed: Int)
    /// Frame 0 does not start with "CHRT"; the value holds its first (up to 4) bytes.
    case badMagic([UInt8])
    /// A Cohort header of a protocol version this build does not speak.
    /// `family` is the header's family, if it is one this build knows.
    case unsupportedVersion(got: UInt16, family: WireFamily?)
    /// The header's length or fields are wrong for its version.
    case malformedHeader(String)
    /// The header's family byte names no family this version knows.
    case unknownFamily(UInt8)
    /// The header's kind byte names no message of its family in this version.
    case unknownKind(WireFamily, kind: UInt8)
    /// The body is not a valid message of its family: bad protobuf, invalid
    /// UTF-8, a missing field, an enum value this version does not know, …
    case malformedBody(WireFamily, reason: String)
    /// The encoder could not serialise a message.
    case encodingFailed(String)

    /// The ``ProtocolError/Code`` to answer the sender with.
    public var code: ProtocolError.Code {
        switch self {
        case .unsupportedVersion: .unsupportedVersion
        case .frameTooLarge: .tooLarge
        case .encodingFailed: .internal
        case .wrongFrameCount, .truncated, .badMagic, .malformedHeader, .unknownFamily, .unknownKind, .malformedBody:
            .badFrame
        }
    }

    public var description: String {
        switch self {
        case .wrongFrameCount(let got):
            "expected 2 frames (header, body), got \(got)"
        case .frameTooLarge(let frame, let size, let limit):
            "frame \(frame) is \(size) bytes, over the limit of \(limit)"
        case .truncated(let frame, let size, let needed):
            "frame \(frame) is truncated: \(size) bytes, needs \(needed)"
        case .badMagic(let prefix):
            "not a Cohort message: frame 0 starts with \(prefix.map { String($0, radix: 16) }), not \"CHRT\""
        case .unsupportedVersion(let got, _):
            "protocol version \(got) is not supported; this build speaks \(WireVersion.current)"
        case .malformedHeader(let reason):
            "malformed header: \(reason)"
        case .unknownFamily(let byte):
            "unknown message family \(byte)"
        case .unknownKind(let family, let kind):
            "unknown \(family) kind \(kind)"
        case .malformedBody(let family, let reason):
            "malformed \(family) body: \(reason)"
        case .encodingFailed(let reason):
            "cannot encode message: \(reason)"
        }
    }
}
