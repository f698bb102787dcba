import CohortSpec
import Foundation

extension ProcedureRegistry {
    /// Registers a typed kind: `body` gets the child's input (its `with`, after injection)
    /// decoded as `Input` and the attempt's ``ProcedureContext``; what it returns is encoded as
    /// the child's output.
    ///
    /// ```swift
    /// registry.register(wordcount) { input, context in
    ///     context.logger.info("counting")
    ///     return Counts(words: input.text.split(whereSeparator: \.isWhitespace).count)
    /// }
    /// ```
    /// An input that does not decode fails the attempt with a ``ProcedureInputError`` naming
    /// the field (`with.text: missing`); an error `body` throws fails it with its description.
    /// Replaces a kind of the same name, built-ins included.
    ///
    /// - Precondition: the kind's name is non-empty and has no whitespace.
    public mutating func register<Input, Output>(
        _ kind: Kind<Input, Output>, _ body: @escaping @Sendable (Input, ProcedureContext) async throws -> Output
    ) {
        register(kind.name, body)
    }

    /// Registers a typed kind whose closure needs only its input:
    /// `registry.register(wordcount) { input in Counts(words: …) }`. See
    /// ``register(_:_:)-(Kind<Input,Output>,_)``.
    public mutating func register<Input, Output>(
        _ kind: Kind<Input, Output>, _ body: @escaping @Sendable (Input) async throws -> Output
    ) {
        register(kind.name) { (input: Input, _: ProcedureContext) in try await body(input) }
    }

    /// Runs `kind` here, without a worker or a cluster, the way a worker would: `input` is
    /// encoded to JSON, decoded by the registered closure, and its output encoded and decoded
    /// back. For unit tests of a kind.
    ///
    /// ```swift
    /// let counts = try await registry.run(wordcount, Text(text: "a b"))   // Counts(words: 2)
    /// ```
    /// - Parameter context: the attempt's context; by default one whose ``ProcedureContext/queue``
    ///   uses the process-local exclusivity manager.
    /// - Throws: ``ProcedureRegistryError`` if no kind of that name is registered; the
    ///   closure's error; ``ProcedureInputError`` for an input that does not decode; a
    ///   `JSONDecodingError` for an output that does not decode as `Output`.
    public func run<Input, Output>(
        _ kind: Kind<Input, Output>, _ input: Input, context: ProcedureContext = ProcedureContext()
    ) async throws -> Output {
        guard let registered = self.kind(named: kind.name) else { throw ProcedureRegistryError(unknownKind: kind.name) }
        let data = try JSONValue(encoding: input).jsonData()
        let output: Data
        switch registered.body {
        case .immediate(let body): output = try body(data, context)
        case .task(let body): output = try await body(data, context)
        }
        return try JSONValue(jsonData: output).decode(Output.self)
    }
}

/// A kind the registry does not have (``ProcedureRegistry/run(_:_:context:)``).
public struct ProcedureRegistryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind asked for.
    public var kind: String

    init(unknownKind kind: String) { self.kind = kind }

    public var description: String { "no kind \"\(kind)\" is registered" }
}
