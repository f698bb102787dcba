/// Frame 0 of every message: 8 bytes.
///
/// ```
/// offset  size  field
/// 0       4     magic, ASCII "CHRT" (0x43 0x48 0x52 0x54)
/// 4       2     protocol version, UInt16 big-endian
/// 6       1     family (WireFamily raw value)
/// 7       1     flags: 0 when sent; ignored when received (reserved)
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

    public init(version: UInt16 = WireVersion.current, family: WireFamily) {
        self.version = version
        self.family = family
    }

    /// The 8 header bytes.
    public var bytes: [UInt8] {
        [Self.magic[0], Self.magic[1], Self.magic[2], Self.magic[3],
         UInt8(truncatingIfNeeded: version >> 8), UInt8(truncatingIfNeeded: version), family.rawValue, 0]
    }

    /// Encoded headers of the current version, one per family, built once:
    /// encoding a message shares one of these arrays instead of allocating.
    static let current: [[UInt8]] = {
        var headers = [[UInt8]](repeating: [], count: 256)
        for family in WireFamily.allCases {
            headers[Int(family.rawValue)] = WireHeader(family: family).bytes
        }
        return headers
    }()

    /// What a decoder learnt from frame 0 before deciding.
    enum Parsed {
        case valid(WireHeader)
        /// A well-formed Cohort header of another protocol version; `family` if known.
        case otherVersion(UInt16, family: WireFamily?)
    }

    /// Parses frame 0. Checks, in order: magic, version, length, family.
    static func parse(_ frame: UnsafeRawBufferPointer) throws(WireError) -> Parsed {
        let count = frame.count
        let magicBytes = min(count, 4)
        for i in 0..<magicBytes where frame[i] != magic[i] {
            throw .badMagic(Array(frame.prefix(4)))
        }
        guard count >= 6 else { throw .truncated(frame: 0, size: count, needed: size) }
        let version = UInt16(frame[4]) << 8 | UInt16(frame[5])
        guard version == WireVersion.current else {
            let family = count > 6 ? WireFamily(rawValue: frame[6]) : nil
            return .otherVersion(version, family: family)
        }
        guard count >= size else { throw .truncated(frame: 0, size: count, needed: size) }
        guard count == size else { throw .malformedHeader("header is \(count) bytes; version \(version) headers are \(size)") }
        guard let family = WireFamily(rawValue: frame[6]) else { throw .unknownFamily(frame[6]) }
        return .valid(WireHeader(version: version, family: family))
    }
}
