/// A path into a `JSONValue`: the `select` and `into` of a spec's `inject`.
///
/// Text form: dotted member names with optional array indexes, `stdout`, `env.VERSION`,
/// `items[0].name`, `[2]`. `.` or `$` alone is the whole value; a leading `$`, `$.` or `.` is
/// allowed (`$.items[0]`, `.stdout`). A member name that contains `.`, `[`, `]`, `"` or whitespace is
/// written in brackets and quotes: `labels["app.kubernetes.io/name"]`.
public struct JSONPath: Sendable, Hashable {
    /// One step of a path.
    public enum Segment: Sendable, Hashable {
        /// A member of an object.
        case key(String)
        /// An element of an array, from 0.
        case index(Int)
    }

    public var segments: [Segment]

    public init(_ segments: [Segment]) {
        self.segments = segments
    }

    /// The whole value (`.`).
    public static let root = JSONPath([])

    public var isRoot: Bool { segments.isEmpty }

    /// The first member name, if the path starts with one: which input of a procedure it writes.
    public var firstKey: String? {
        if case .key(let key)? = segments.first { return key }
        return nil
    }

    /// The member `name` of the whole value: `JSONPath.key("items").index(i)` is `items[i]`.
    public static func key(_ name: String) -> JSONPath { JSONPath([.key(name)]) }

    /// The element `index` of the whole value, from 0: `JSONPath.index(i)` is `[i]`.
    public static func index(_ index: Int) -> JSONPath { JSONPath([.index(index)]) }

    /// This path, then the member `name`: any name, with no quoting to get right.
    public func key(_ name: String) -> JSONPath { appending(.key(name)) }

    /// This path, then the element `index` (from 0; a negative index is refused when the spec
    /// is validated).
    public func index(_ index: Int) -> JSONPath { appending(.index(index)) }

    /// This path with `segment` added at the end.
    public func appending(_ segment: Segment) -> JSONPath { JSONPath(segments + [segment]) }

    /// Whether `self` is `other` or lies inside it (`env.A` is within `env` and within `.`).
    public func isWithin(_ other: JSONPath) -> Bool {
        segments.starts(with: other.segments)
    }
}

/// Why a string is not a `JSONPath`.
public struct JSONPathError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        case empty
        case emptySegment
        case unexpectedCharacter(Character)
        case invalidIndex(String)
        case unterminatedBracket
        case unterminatedQuote
    }

    /// The text that failed to parse.
    public var text: String
    /// Offset in characters from the start of `text` where parsing stopped.
    public var offset: Int
    public var reason: Reason

    public var description: String {
        let what: String
        switch reason {
        case .empty:
            return "an empty path; use \".\" for the whole value"
        case .emptySegment:
            what = "an empty member name"
        case .unexpectedCharacter(let character):
            what = "unexpected \"\(character)\""
        case .invalidIndex(let index):
            what = "\"\(index)\" is not an array index (0, 1, 2…)"
        case .unterminatedBracket:
            what = "a \"[\" without its \"]\""
        case .unterminatedQuote:
            what = "a quoted name without its closing quote"
        }
        return "\(what) at character \(offset + 1) of \"\(text)\""
    }
}

extension JSONPath {
    /// Parses the text form; see the type's documentation.
    /// - Throws: `JSONPathError` naming the character at fault.
    public init(parsing text: String) throws(JSONPathError) {
        var parser = JSONPathParser(text: text)
        self = try parser.parse()
    }
}

extension JSONPath: ExpressibleByStringLiteral {
    /// A path written as a literal in code, `"items[0].name"`. An invalid literal is a
    /// programming error and traps, like an invalid regex literal. A path made at run time
    /// never needs one: build it from parts (`JSONPath.key("items").index(i)`), or parse text
    /// with `init(parsing:)`, which throws.
    public init(stringLiteral value: String) {
        do {
            try self.init(parsing: value)
        } catch {
            preconditionFailure("invalid JSONPath literal: \(error)")
        }
    }
}

extension JSONPath: CustomStringConvertible {
    /// The canonical text form, which parses back to the same path: `.` for the root.
    public var description: String {
        if segments.isEmpty { return "." }
        var text = ""
        for segment in segments {
            switch segment {
            case .key(let key):
                if JSONPath.needsQuoting(key) {
                    let escaped = key.replacingOccurrences(of: "\\", with: "\\\\")
                        .replacingOccurrences(of: "\"", with: "\\\"")
                    text += "[\"\(escaped)\"]"
                } else {
                    if !text.isEmpty { text += "." }
                    text += key
                }
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }

    static func needsQuoting(_ key: String) -> Bool {
        key.isEmpty || key == "$" || key.contains(where: { !JSONPathParser.isPlainKeyCharacter($0) })
    }
}

extension JSONPath: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

private struct JSONPathParser {
    let text: String
    let characters: [Character]
    var position = 0

    init(text: String) {
        self.text = text
        self.characters = Array(text)
    }

    static func isPlainKeyCharacter(_ character: Character) -> Bool {
        !(character == "." || character == "[" || character == "]" || character == "\""
            || character.isWhitespace
            || character.unicodeScalars.contains { $0.properties.generalCategory == .control })
    }

    func error(_ reason: JSONPathError.Reason) -> JSONPathError {
        JSONPathError(text: text, offset: position, reason: reason)
    }

    var current: Character? { position < characters.count ? characters[position] : nil }

    mutating func parse() throws(JSONPathError) -> JSONPath {
        if characters.isEmpty { throw error(.empty) }
        if text == "." || text == "$" { return .root }
        var segments: [JSONPath.Segment] = []
        // `$` then `.name` or `[…]`; without `$`, a name or `[…]` first.
        var expectingName = true
        if current == "$" {
            position += 1
            expectingName = false
        } else if current == "." {
            // jq style: `.stdout` is `stdout`.
            position += 1
        }
        while let character = current {
            if character == "[" {
                segments.append(try parseBracket())
                expectingName = false
            } else if character == "." {
                if expectingName { throw error(.emptySegment) }
                position += 1
                guard current != nil, current != "." else { throw error(.emptySegment) }
                if current == "[" { throw error(.unexpectedCharacter("[")) }
                expectingName = true
            } else if expectingName {
                segments.append(.key(try parseName()))
                expectingName = false
            } else {
                throw error(.unexpectedCharacter(character))
            }
        }
        if expectingName && !segments.isEmpty { throw error(.emptySegment) }
        return JSONPath(segments)
    }

    mutating func parseName() throws(JSONPathError) -> String {
        let start = position
        while let character = current, JSONPathParser.isPlainKeyCharacter(character) {
            position += 1
        }
        if position == start {
            if let character = current { throw error(.unexpectedCharacter(character)) }
            throw error(.emptySegment)
        }
        return String(characters[start..<position])
    }

    mutating func parseBracket() throws(JSONPathError) -> JSONPath.Segment {
        let open = position
        position += 1  // "["
        if current == "\"" {
            position += 1
            var key = ""
            while true {
                guard let character = current else {
                    position = open
                    throw error(.unterminatedQuote)
                }
                position += 1
                if character == "\\" {
                    guard let escaped = current else {
                        position = open
                        throw error(.unterminatedQuote)
                    }
                    key.append(escaped)
                    position += 1
                } else if character == "\"" {
                    break
                } else {
                    key.append(character)
                }
            }
            guard current == "]" else {
                if current == nil {
                    position = open
                    throw error(.unterminatedBracket)
                }
                throw error(.unexpectedCharacter(current!))
            }
            position += 1
            return .key(key)
        }
        let start = position
        while let character = current, character != "]" {
            position += 1
        }
        guard current == "]" else {
            position = open
            throw error(.unterminatedBracket)
        }
        let digits = String(characters[start..<position])
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            digits == "0" || !digits.hasPrefix("0"), let index = Int(digits)
        else {
            position = start
            throw error(.invalidIndex(digits))
        }
        position += 1
        return .index(index)
    }
}
