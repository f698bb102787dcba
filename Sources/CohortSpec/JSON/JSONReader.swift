/// Why bytes could not be read as JSON.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    /// Byte offset of the problem from the start of the text.
    public var offset: Int
    /// 1-based line and column (in bytes) of the problem.
    public var line: Int
    public var column: Int

    public var description: String { "invalid JSON at line \(line), column \(column): \(message)" }
}

/// A JSON reader over UTF-8 bytes, for `JSONValue(jsonBytes:)`.
struct JSONReader {
    /// Deeper documents are rejected rather than risk the stack.
    static let maxDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private var depth = 0
    /// How deep containers nested: 1 for `[1]`, 0 for a lone scalar.
    private(set) var deepest = 0
    /// Values read, containers and scalars alike.
    private(set) var valueCount = 0
    /// Object members whose name an earlier member of the same object already had (the later
    /// one wins; a spec reader counts this as a fault).
    private(set) var repeatedKeys = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func readDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try readValue()
        skipWhitespace()
        if position < bytes.count { throw error("unexpected text after the value") }
        return value
    }

    // MARK: Errors

    private func error(_ message: String, at offset: Int? = nil) -> JSONParseError {
        let offset = min(offset ?? position, bytes.count)
        var line = 1
        var lineStart = 0
        for index in 0..<offset where bytes[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        return JSONParseError(message: message, offset: offset, line: line, column: offset - lineStart + 1)
    }

    private func describeCurrent() -> String {
        guard position < bytes.count else { return "the end of the text" }
        let byte = bytes[position]
        if byte >= 0x21 && byte < 0x7F { return "\"\(Character(Unicode.Scalar(byte)))\"" }
        return "byte 0x\(String(byte, radix: 16))"
    }

    // MARK: Values

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): position += 1
            default: return
            }
        }
    }

    private mutating func readValue() throws(JSONParseError) -> JSONValue {
        valueCount += 1
        guard position < bytes.count else { throw error("expected a value, found the end of the text") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try readObject()
        case UInt8(ascii: "["): return try readArray()
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): return try readLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try readLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try readLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw error("expected a value, found \(describeCurrent())")
        }
    }

    private mutating func readLiteral(_ word: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw error("expected \(word)") }
        for offset in 0..<count where bytes[position + offset] != word.utf8Start[offset] {
            throw error("expected \(word)")
        }
        position += count
        return value
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        deepest = max(deepest, depth)
        if depth > JSONReader.maxDepth { throw error("nested deeper than \(JSONReader.maxDepth) levels") }
    }

    private mutating func readArray() throws(JSONParseError) -> JSONValue {
        try enter()
        position += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try readValue())
            skipWhitespace()
            guard position < bytes.count else { throw error("expected \",\" or \"]\", found the end of the text") }
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: "]") { break }
            if byte != UInt8(ascii: ",") {
                position -= 1
                throw error("expected \",\" or \"]\", found \(describeCurrent())")
            }
        }
        depth -= 1
        return .array(elements)
    }

    private mutating func readObject() throws(JSONParseError) -> JSONValue {
        try enter()
        position += 1  // {
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a member name in quotes, found \(describeCurrent())")
            }
            let key = try readString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("expected \":\" after a member name, found \(describeCurrent())")
            }
            position += 1
            skipWhitespace()
            if members.updateValue(try readValue(), forKey: key) != nil { repeatedKeys += 1 }
            skipWhitespace()
            guard position < bytes.count else { throw error("expected \",\" or \"}\", found the end of the text") }
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: "}") { break }
            if byte != UInt8(ascii: ",") {
                position -= 1
                throw error("expected \",\" or \"}\", found \(describeCurrent())")
            }
        }
        depth -= 1
        return .object(members)
    }

    // MARK: Strings

    private mutating func readString() throws(JSONParseError) -> String {
        let opening = position
        position += 1  // "
        let start = position
        // Fast path: no escapes, the bytes are the string.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
                position += 1
                guard let string = String(validating: slice, as: UTF8.self) else {
                    throw error("a string is not valid UTF-8", at: opening)
                }
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("a control character must be escaped in a string") }
            position += 1
        }
        // Slow path: unescape into a byte buffer.
        var utf8 = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                guard let string = String(validating: utf8, as: UTF8.self) else {
                    throw error("a string is not valid UTF-8", at: opening)
                }
                return string
            }
            if byte < 0x20 { throw error("a control character must be escaped in a string") }
            if byte != UInt8(ascii: "\\") {
                utf8.append(byte)
                position += 1
                continue
            }
            position += 1
            guard position < bytes.count else { break }
            let escape = bytes[position]
            position += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try readHex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    // A high surrogate must be followed by `\uDC00`–`\uDFFF`.
                    guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                        bytes[position + 1] == UInt8(ascii: "u")
                    else { throw error("an unpaired UTF-16 surrogate in a \\u escape") }
                    position += 2
                    let low = try readHex4()
                    guard (0xDC00..<0xE000).contains(low) else {
                        throw error("an unpaired UTF-16 surrogate in a \\u escape")
                    }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw error("an unpaired UTF-16 surrogate in a \\u escape")
                }
                utf8.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
            default:
                position -= 1
                throw error("unknown escape \"\\\(Character(Unicode.Scalar(escape)))\" in a string")
            }
        }
        throw error("a string is not closed", at: opening)
    }

    private mutating func readHex4() throws(JSONParseError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("expected four hex digits after \\u") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("expected four hex digits after \\u")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    // MARK: Numbers

    private mutating func readNumber() throws(JSONParseError) -> JSONValue {
        let start = position
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        func digits() -> Int {
            let first = position
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
            return position - first
        }
        var negative = false
        if bytes[position] == UInt8(ascii: "-") {
            negative = true
            position += 1
        }
        let integerStart = position
        let integerDigits = digits()
        if integerDigits == 0 { throw error("expected a digit") }
        if integerDigits > 1 && bytes[integerStart] == UInt8(ascii: "0") {
            throw error("a number cannot start with 0", at: integerStart)
        }
        var isInteger = true
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            if digits() == 0 { throw error("expected a digit after \".\"") }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            if digits() == 0 { throw error("expected a digit in the exponent") }
        }
        if isInteger && integerDigits <= 19 {
            // Accumulate negatively so Int64.min fits.
            var value: Int64 = 0
            var overflow = false
            for index in integerStart..<position {
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (next, o2) = times10.subtractingReportingOverflow(Int64(bytes[index] - UInt8(ascii: "0")))
                if o1 || o2 {
                    overflow = true
                    break
                }
                value = next
            }
            if !overflow {
                if !negative {
                    if value == .min { overflow = true } else { return .int(-value) }
                } else {
                    return .int(value)
                }
            }
        }
        // `Double(String)` is correctly rounded.
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let value = Double(text) else { throw error("a number out of range", at: start) }
        return .double(value)
    }
}
