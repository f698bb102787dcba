import SwiftProtobuf

/// The protobuf framing of a body that is one `repeated` message field
/// number 1 and nothing else: `Dispatch`, `CancelTasks`, `TasksStarted`,
/// `TaskResults`. On the wire that is a run of (key 0x0A, varint length,
/// item bytes), and this type writes and reads that run itself, handing
/// each item to SwiftProtobuf.
///
/// Why not let SwiftProtobuf do the wrapper: its generic repeated-field
/// code, unspecialised across the module boundary, copies every item
/// struct twice when encoding and once more when decoding, which was the
/// largest cost of a one-attempt dispatch (see bench-wire). The bytes are
/// exactly those SwiftProtobuf writes for the wrapper message, and the
/// reader follows protobuf's rules (unknown fields skipped, anything
/// malformed refused); `RepeatedMessageFieldTests` checks both against the
/// generated code.
enum RepeatedMessageField {
    /// Key of field 1, wire type 2 (length-delimited).
    static let key: UInt8 = 0x0A

    /// The body holding `items` as field 1.
    @inline(__always)
    static func encode<Item, Proto: SwiftProtobuf.Message>(
        _ items: [Item], _ proto: (Item) -> Proto
    ) throws(WireError) -> [UInt8] {
        if items.count == 1 {
            return try frame(serialize(proto(items[0])))
        }
        var encoded: [[UInt8]] = []
        encoded.reserveCapacity(items.count)
        var total = 0
        for item in items {
            let bytes = try serialize(proto(item))
            total += 1 + varintSize(bytes.count) + bytes.count
            encoded.append(bytes)
        }
        var body: [UInt8] = []
        body.reserveCapacity(total)
        for bytes in encoded {
            body.append(key)
            appendVarint(bytes.count, to: &body)
            body.append(contentsOf: bytes)
        }
        return body
    }

    /// One item's bytes, framed.
    @inline(__always)
    private static func frame(_ item: [UInt8]) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(1 + varintSize(item.count) + item.count)
        body.append(key)
        appendVarint(item.count, to: &body)
        body.append(contentsOf: item)
        return body
    }

    /// Calls `each` with every item of field 1 in `body`, in order, with its index.
    ///
    /// - Throws: ``BodyError`` if the body is not valid protobuf or an item
    ///   does not decode.
    @inline(__always)
    static func decode<Proto: SwiftProtobuf.Message>(
        _ body: UnsafeRawBufferPointer, as _: Proto.Type,
        _ each: (consuming Proto, Int) throws(BodyError) -> Void
    ) throws(BodyError) {
        var reader = Reader(body)
        var index = 0
        while !reader.isAtEnd {
            let (field, wireType) = try reader.key()
            if field == 1, wireType == 2 {
                let bytes = try reader.lengthDelimited()
                let item: Proto
                do {
                    item = try Proto(serializedBytes: RawSpan(_unsafeBytes: bytes), options: decodingOptions)
                } catch {
                    throw BodyError("item \(index): \(error)")
                }
                try each(item, index)
                index += 1
            } else {
                // Protobuf skips unknown fields, and field 1 with another wire type
                // (SwiftProtobuf treats it as unknown too).
                try reader.skipField(field, wireType: wireType, depth: 0)
            }
        }
    }

    @inline(__always)
    static func varintSize(_ value: Int) -> Int {
        var value = UInt64(value)
        var size = 1
        while value >= 0x80 {
            value >>= 7
            size += 1
        }
        return size
    }

    @inline(__always)
    static func appendVarint(_ value: Int, to bytes: inout [UInt8]) {
        var value = UInt64(value)
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Reads protobuf primitives from a buffer, never past its end.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        init(_ bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        var isAtEnd: Bool { offset >= bytes.count }

        mutating func varint() throws(BodyError) -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while offset < bytes.count {
                let byte = bytes[offset]
                offset += 1
                guard shift < 63 || (shift == 63 && byte <= 1) else { throw BodyError("varint overflows 64 bits") }
                result |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return result }
                shift += 7
            }
            throw BodyError("truncated varint")
        }

        /// A field's key: its number and wire type.
        mutating func key() throws(BodyError) -> (field: UInt64, wireType: UInt64) {
            let key = try varint()
            let field = key >> 3
            guard field != 0, field <= 0x1FFF_FFFF else { throw BodyError("invalid field number \(field)") }
            return (field, key & 7)
        }

        mutating func skip(_ count: Int) throws(BodyError) {
            guard bytes.count - offset >= count else { throw BodyError("truncated field") }
            offset += count
        }

        /// Skips the value of a field whose key was just read.
        mutating func skipField(_ field: UInt64, wireType: UInt64, depth: Int) throws(BodyError) {
            switch wireType {
            case 0: _ = try varint()
            case 1: try skip(8)
            case 2: _ = try lengthDelimited()
            case 3:  // a group: fields up to the matching end-group key
                guard depth < 16 else { throw BodyError("groups nested too deep") }
                while true {
                    guard !isAtEnd else { throw BodyError("truncated group") }
                    let (inner, innerType) = try key()
                    if innerType == 4 {
                        guard inner == field else { throw BodyError("group \(field) ends as \(inner)") }
                        return
                    }
                    try skipField(inner, wireType: innerType, depth: depth + 1)
                }
            case 5: try skip(4)
            default: throw BodyError("field \(field) has wire type \(wireType)")
            }
        }

        mutating func lengthDelimited() throws(BodyError) -> UnsafeRawBufferPointer {
            let length = try varint()
            guard length <= UInt64(bytes.count - offset) else { throw BodyError("truncated length-delimited field") }
            let start = offset
            offset += Int(length)
            return UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
        }
    }
}
