import Foundation

/// Why bytes could not be read as JSON.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What Foundation reported, e.g. `Invalid value around character 17.`
    public var message: String

    public var description: String { "invalid JSON: \(message)" }
}

extension JSONValue {
    /// Reads a JSON text (any value at the top level, not only objects and arrays).
    ///
    /// Uses Foundation's `JSONSerialization`, then tells booleans from numbers by the `NSNumber`
    /// subclass (on Linux `1 as? Bool` succeeds, so a cast would turn numbers into booleans).
    /// Integers that fit in `Int64` stay exact; larger ones become `.double`.
    /// - Throws: `JSONParseError` for malformed text or invalid UTF-8.
    public init(jsonBytes bytes: [UInt8]) throws(JSONParseError) {
        try self.init(jsonData: Data(bytes))
    }

    /// Reads a JSON text; see `init(jsonBytes:)`.
    public init(jsonData data: Data) throws(JSONParseError) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let message = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            throw JSONParseError(message: message ?? String(describing: error))
        }
        self = JSONValue(foundationObject: object)
    }

    /// Reads a JSON text given as a string; see `init(jsonBytes:)`.
    public init(jsonString: String) throws(JSONParseError) {
        try self.init(jsonData: Data(jsonString.utf8))
    }

    /// The class Foundation uses for JSON `true`/`false` (`__NSCFBoolean`), distinct from other numbers.
    private static let booleanNumberType: ObjectIdentifier = ObjectIdentifier(type(of: NSNumber(value: true)))

    private init(foundationObject object: Any) {
        switch object {
        case is NSNull:
            self = .null
        case let string as String:
            self = .string(string)
        case let number as NSNumber:
            self = JSONValue(number: number)
        case let array as [Any]:
            self = .array(array.map(JSONValue.init(foundationObject:)))
        case let dictionary as [String: Any]:
            self = .object(dictionary.mapValues(JSONValue.init(foundationObject:)))
        default:
            self = .string(String(describing: object))
        }
    }

    private init(number: NSNumber) {
        if ObjectIdentifier(type(of: number)) == JSONValue.booleanNumberType {
            self = .bool(number.boolValue)
            return
        }
        if number is NSDecimalNumber {
            self = .double(number.doubleValue)
            return
        }
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "c"), UInt8(ascii: "C"), UInt8(ascii: "s"), UInt8(ascii: "S"),
            UInt8(ascii: "i"), UInt8(ascii: "I"), UInt8(ascii: "l"), UInt8(ascii: "q"):
            self = .int(number.int64Value)
        case UInt8(ascii: "L"), UInt8(ascii: "Q"):
            let value = number.uint64Value
            self = value <= UInt64(Int64.max) ? .int(Int64(value)) : .double(number.doubleValue)
        default:
            self = .double(number.doubleValue)
        }
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
