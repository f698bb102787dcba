/// A procedure's input (its spec's `with`, after injection) that its kind cannot use.
///
/// The attempt fails with it; the message names the field at fault as a path from `with`:
/// `with.seconds: expected a number of seconds, got a string`.
public struct ProcedureInputError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The field at fault, e.g. `with.command[0]`; `with` for the input as a whole.
    public var field: String
    /// What is wrong with it.
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }

    /// The error for a `DecodingError` met while decoding a kind's `Decodable` input.
    init(_ error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            self.init(field: Self.path(context.codingPath + [key]), message: "missing")
        case .typeMismatch(let type, let context):
            self.init(field: Self.path(context.codingPath), message: "expected \(Self.describe(type))")
        case .valueNotFound(let type, let context):
            self.init(field: Self.path(context.codingPath), message: "expected \(Self.describe(type)), got null")
        case .dataCorrupted(let context):
            self.init(field: Self.path(context.codingPath), message: context.debugDescription)
        @unknown default:
            self.init(field: "with", message: String(describing: error))
        }
    }

    /// `with.images[2].width` for the coding path `images`, `2`, `width`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var path = "with"
        for key in codingPath {
            if let index = key.intValue { path += "[\(index)]" } else { path += ".\(key.stringValue)" }
        }
        return path
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

/// The error a `fail` child finishes with: its `message`.
public struct ProcedureFailure: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
