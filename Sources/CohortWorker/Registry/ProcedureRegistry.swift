import CohortSpec
import Foundation

/// The procedure kinds a worker offers: the built-ins `shell`, `sleep`, `echo` and `fail`,
/// and any a program registers with the Swift API.
///
/// ```swift
/// struct Resize: Codable { var path: String; var width: Int }
/// struct Resized: Codable { var path: String; var bytes: Int }
///
/// var registry = ProcedureRegistry()
/// registry.register("resize") { (input: Resize, ctx: ProcedureContext) async throws -> Resized in
///     ctx.logger.info("resizing")
///     return try await resize(input, cancelledBy: ctx)
/// }
/// let worker = Worker(configuration: configuration, registry: registry)
/// ```
///
/// A kind's closure runs as a Swift task for each attempt; cancelling the attempt cancels
/// the task (cooperatively), and the attempt finishes when the closure returns. A closure
/// that throws fails the attempt with the error's description. An input that does not
/// decode fails it with a ``ProcedureInputError`` naming the field.
///
/// A value type: register every kind before handing the registry to a ``Worker``, which
/// announces the kinds when it connects.
public struct ProcedureRegistry: Sendable {
    private var kinds: [String: ProcedureKind]

    /// A registry of the built-in kinds: `shell`, `sleep`, `echo`, `fail`.
    public init() {
        kinds = Builtins.kinds
    }

    /// A registry without any kind, not even the built-ins.
    public static var empty: ProcedureRegistry {
        var registry = ProcedureRegistry()
        registry.kinds = [:]
        return registry
    }

    /// The names of every kind, sorted.
    public var kindNames: [String] { kinds.keys.sorted() }

    /// Whether a kind named `kind` is registered.
    public func contains(_ kind: String) -> Bool { kinds[kind] != nil }

    /// Registers `kind` with a closure over `Codable` values: the input (the child's `with`,
    /// after injection) is decoded as `Input`, the returned `Output` is encoded as the
    /// child's output. Replaces a kind of the same name, built-ins included.
    ///
    /// - Precondition: `kind` is non-empty and has no whitespace.
    public mutating func register<Input: Decodable & SendableMetatype, Output: Encodable & SendableMetatype>(
        _ kind: String, _ body: @escaping @Sendable (Input, ProcedureContext) async throws -> Output
    ) {
        Self.check(kind)
        kinds[kind] = ProcedureKind(
            .task { input, context in
                let value: Input
                do {
                    value = try JSONDecoder().decode(Input.self, from: input)
                } catch let error as DecodingError {
                    throw ProcedureInputError(error)
                }
                let output = try await body(value, context)
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                return try encoder.encode(output)
            })
    }

    /// Registers `kind` with a closure over raw JSON values. Replaces a kind of the same name.
    ///
    /// - Precondition: `kind` is non-empty and has no whitespace.
    public mutating func register(
        _ kind: String, _ body: @escaping @Sendable (JSONValue, ProcedureContext) async throws -> JSONValue
    ) {
        Self.check(kind)
        kinds[kind] = ProcedureKind(
            .task { input, context in
                try await body(try ProcedureKind.parse(input), context).jsonData()
            })
    }

    /// Removes `kind`, if registered.
    public mutating func remove(_ kind: String) {
        kinds[kind] = nil
    }

    /// The kind named `name`, if registered.
    func kind(named name: String) -> ProcedureKind? { kinds[name] }

    private static func check(_ kind: String) {
        precondition(
            !kind.isEmpty && !kind.contains(where: \.isWhitespace),
            "a procedure kind needs a name without spaces, not \"\(kind)\"")
    }
}

/// How one kind runs an attempt's input (UTF-8 JSON) into its output (UTF-8 JSON).
struct ProcedureKind: Sendable {
    enum Body: Sendable {
        /// Synchronous: runs inside the procedure's `execute()`, with no task hop. For
        /// built-ins that do no waiting (`echo`, `fail`).
        case immediate(@Sendable (Data, ProcedureContext) throws -> Data)
        /// Asynchronous: runs as a Swift task, which cancelling the attempt cancels.
        case task(@Sendable (Data, ProcedureContext) async throws -> Data)
    }

    let body: Body

    init(_ body: Body) { self.body = body }

    /// Reads an input as JSON; malformed JSON (which a coordinator never sends) fails the attempt.
    static func parse(_ input: Data) throws(ProcedureInputError) -> JSONValue {
        do {
            return try JSONValue(jsonData: input)
        } catch {
            throw ProcedureInputError(field: "with", message: "is not valid JSON: \(error.message)")
        }
    }
}
