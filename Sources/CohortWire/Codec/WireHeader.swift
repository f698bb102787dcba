/// Frame 0 of every message: 8 bytes.
///
/// ```
/// offset  size  field
/// 0       4     magic, ASCII "CHRT" (0x43 0x48 0x52 0x54)
/// 4       2     protocol version, UInt16 big-endian
/// 6       1     family (WireFamily raw value)
/// 7       1     kind: which message of the family frame 1 holds (docs/protocol.md)
/// ```
/// Bytes 0–5 keep this layout in every protocol version, so any decoder
/// can tell a Cohort message of another version from garbage.
public struct WireHeader: Hashable, Sendable {
    /// The header's size in bytes in this protocol version.
    public static let size = 8
    /// "CHRT".
    public static let magic: [UInt8] = [0x43, 0x48, 0x52, 0x54]

    public var version: UInt16
    public var family: WireFamily
    /// The message kind within the family (a table per family in docs/protocol.md).
    public var kind: UInt8

    public init(version: UInt16 = WireVersion.current, family: WireFamily, kind: UInt8) {
        self.version = version
        self.family = family
        self.kind = kind
    }

    /// The 8 header bytes.
    public var bytes: [UInt8] {
        [
            Self.magic[0], Self.magic[1], Self.magic[2], Self.magic[3],
            UInt8(truncatingIfNeeded: version >> 8), UInt8(truncatingIfNeeded: version), family.rawValue, kind,
        ]
    }

    /// Headers of the current version, by family and kind, built once: encoding
    /// a message shares one of these arrays instead of allocating a new one.
    private static let cache: [[[UInt8]]] = (0...WireFamily.allCases.count).map { family in
        (0..<16).map { kind in
            WireFamily(rawValue: UInt8(family)).map { WireHeader(family: $0, kind: UInt8(kind)).bytes } ?? []
        }
    }

    /// The encoded header of the current version for `family` and `kind`.
    @inline(__always)
    static func encoded(_ family: WireFamily, _ kind: UInt8) -> [UInt8] {
        kind < 16 ? cache[Int(family.rawValue)][Int(kind)] : WireHeader(family: family, kind: kind).bytes
    }

    /// What a decoder learnt from frame 0 before deciding.
    enum Parsed {
        case valid(WireHeader)
        /// A well-formed Cohort header of another protocol version; family and kind if readable.
        case otherVersion(UInt16, family: WireFamily?, kind: UInt8?)
    }

    /// Parses frame 0. Checks, in order: magic, version, length, family.
    static func parse(_ frame: UnsafeRawBufferPointer) throws(WireError) -> Parsed {
        let count = frame.count
        for i in 0..<min(count, 4) where frame[i] != magic[i] {
            throw .badMagic(Array(frame.prefix(4)))
        }
        guard count >= 6 else { throw .truncated(frame: 0, size: count, needed: size) }
        let version = UInt16(frame[4]) << 8 | UInt16(frame[5])
        guard version == WireVersion.current else {
            return .otherVersion(
                version, family: count > 6 ? WireFamily(rawValue: frame[6]) : nil, kind: count > 7 ? frame[7] : nil)
        }
        guard count >= size else { throw .truncated(frame: 0, size: count, needed: size) }
        guard count == size else {
            throw .malformedHeader("header is \(count) bytes; version \(version) headers are \(size)")
        }
        guard let family = WireFamily(rawValue: frame[6]) else { throw .unknownFamily(frame[6]) }
        return .valid(WireHeader(version: version, family: family, kind: frame[7]))
    }
}
