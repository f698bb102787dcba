import Foundation

// The bridge between JSONValue and Swift's Codable types: what a typed kind's input and output
// travel as, and what a client decodes a child's output from.

extension JSONValue {
    /// The JSON form of `value`, as `JSONEncoder` writes it (dates as seconds since 2001, `Data`
    /// as Base64, like JSONEncoder's defaults).
    ///
    /// ```swift
    /// let input = try JSONValue(encoding: Text(text: text))   // {"text": "…"}
    /// ```
    /// - Throws: `EncodingError` for a value JSON cannot hold (a `Double.nan`, say).
    public init<Value: Encodable>(encoding value: Value) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        do {
            self = try JSONValue(jsonData: data)
        } catch {
            // JSONEncoder writes JSON; a failure here is a bug in one of the two.
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: [], debugDescription: "not JSON: \(error)"))
        }
    }

    /// This value decoded as `Value`, as `JSONDecoder` reads it.
    ///
    /// ```swift
    /// let counts = try output.decode(Counts.self)
    /// ```
    /// - Throws: ``JSONDecodingError`` naming the path of the member at fault
    ///   (`items[2].width: missing`).
    public func decode<Value: Decodable>(_ type: Value.Type = Value.self) throws(JSONDecodingError) -> Value {
        do {
            return try JSONDecoder().decode(Value.self, from: jsonData())
        } catch let error as DecodingError {
            throw JSONDecodingError(error)
        } catch {
            throw JSONDecodingError(path: .root, message: "\(error)")
        }
    }
}

/// A JSON value that does not decode as the type asked for, with the path of the member at
/// fault: `items[2].width: missing`, `.: expected an object`.
public struct JSONDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where in the value decoding failed; ``JSONPath/root`` for the value itself.
    public var path: JSONPath
    /// What is wrong there: `missing`, `expected a string`, ….
    public var message: String

    public init(path: JSONPath, message: String) {
        self.path = path
        self.message = message
    }

    /// The error for a `DecodingError` met while decoding.
    public init(_ error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            self.init(path: Self.path(context.codingPath + [key]), message: "missing")
        case .typeMismatch(let type, let context):
            self.init(path: Self.path(context.codingPath), message: "expected \(Self.describe(type))")
        case .valueNotFound(let type, let context):
            self.init(path: Self.path(context.codingPath), message: "expected \(Self.describe(type)), got null")
        case .dataCorrupted(let context):
            self.init(path: Self.path(context.codingPath), message: context.debugDescription)
        @unknown default:
            self.init(path: .root, message: String(describing: error))
        }
    }

    public var description: String { "\(path): \(message)" }

    private static func path(_ codingPath: [any CodingKey]) -> JSONPath {
        JSONPath(codingPath.map { key in key.intValue.map { .index($0) } ?? .key(key.stringValue) })
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type, is UInt32.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        default:
            String(describing: type).hasPrefix("Array")
                ? "a list"
                : String(describing: type).hasPrefix("Dictionary") ? "an object" : "a value of type \(type)"
        }
    }
}
