import Foundation

extension JSONValue {
    /// Reads a JSON text (RFC 8259; any value at the top level, not only objects and arrays).
    ///
    /// A dedicated reader rather than `JSONSerialization`: on Linux that one rounds some doubles
    /// one unit off (`13.428571428571429` reads back as `…427`) and its bridged `NSNumber`s make
    /// booleans and numbers hard to tell apart. Here integers that fit in `Int64` stay exact,
    /// other numbers are correctly rounded doubles, strings must be valid UTF-8, and a repeated
    /// object key keeps its last value.
    /// - Throws: `JSONParseError` with the line and column of the first problem.
    public init(jsonBytes bytes: [UInt8]) throws(JSONParseError) {
        self = try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            var reader = JSONReader(buffer)
            return try reader.readDocument()
        }
    }

    /// Reads a JSON text; see `init(jsonBytes:)`.
    public init(jsonData data: Data) throws(JSONParseError) {
        // `Data.withUnsafeBytes` rethrows untyped errors; only JSONParseError can come out.
        let result: Result<JSONValue, JSONParseError> = data.withUnsafeBytes { raw in
            var reader = JSONReader(raw.bindMemory(to: UInt8.self))
            return Result { () throws(JSONParseError) in try reader.readDocument() }
        }
        self = try result.get()
    }

    /// Reads a JSON text given as a string; see `init(jsonBytes:)`.
    public init(jsonString: String) throws(JSONParseError) {
        try self.init(jsonBytes: Array(jsonString.utf8))
    }
}

// MARK: - Writing

extension JSONValue {
    /// The value as compact JSON text (UTF-8), object keys sorted.
    ///
    /// Non-finite doubles, which JSON cannot express, are written as `null`.
    public func jsonBytes(pretty: Bool = false) -> [UInt8] {
        var writer = JSONWriter(pretty: pretty)
        writer.write(self, indent: 0)
        return writer.bytes
    }

    /// The value as JSON text in `Data`; see `jsonBytes(pretty:)`.
    public func jsonData(pretty: Bool = false) -> Data {
        Data(jsonBytes(pretty: pretty))
    }

    /// The value as a JSON string; see `jsonBytes(pretty:)`.
    public func jsonString(pretty: Bool = false) -> String {
        String(decoding: jsonBytes(pretty: pretty), as: UTF8.self)
    }
}

/// A small JSON writer: deterministic (sorted keys), exact integers, no `\/` escapes.
private struct JSONWriter {
    var bytes: [UInt8] = []
    let pretty: Bool

    init(pretty: Bool) {
        self.pretty = pretty
        bytes.reserveCapacity(256)
    }

    mutating func write(_ value: JSONValue, indent: Int) {
        switch value {
        case .null:
            append("null")
        case .bool(let flag):
            append(flag ? "true" : "false")
        case .int(let number):
            append(String(number))
        case .double(let number):
            append(number.isFinite ? number.description : "null")
        case .string(let string):
            writeString(string)
        case .array(let elements):
            if elements.isEmpty { return append("[]") }
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                write(element, indent: indent + 1)
            }
            newline(indent)
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            if members.isEmpty { return append("{}") }
            bytes.append(UInt8(ascii: "{"))
            for (offset, key) in members.keys.sorted().enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                if pretty { bytes.append(UInt8(ascii: " ")) }
                write(members[key]!, indent: indent + 1)
            }
            newline(indent)
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private mutating func newline(_ indent: Int) {
        guard pretty else { return }
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case UInt8(ascii: "\n"): append("\\n")
            case UInt8(ascii: "\r"): append("\\r")
            case UInt8(ascii: "\t"): append("\\t")
            case 0x08: append("\\b")
            case 0x0C: append("\\f")
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                append("\\u00")
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
