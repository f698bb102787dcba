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

    /// The error for a `DecodingError` met while decoding a kind's `Decodable` input: the
    /// path and words of ``JSONDecodingError``, from `with`.
    init(_ error: DecodingError) {
        let decoding = JSONDecodingError(error)
        let path = decoding.path.description
        let field = decoding.path.isRoot ? "with" : "with" + (path.hasPrefix("[") ? path : "." + path)
        self.init(field: field, message: decoding.message)
    }
}

/// The error a `fail` child finishes with: its `message`.
public struct ProcedureFailure: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
