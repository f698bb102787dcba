/// Remote result injection: part of a producer's output written into this child's input
/// (ProcedureKit's `injectResult(from:)` with a transform).
///
/// The coordinator takes `from`'s output, applies `select`, and writes the result at `into`
/// in the consumer's `with`, in listed order, before dispatching the consumer. A producer that
/// failed or was cancelled cancels the consumer, with a reason naming the producer.
public struct Injection: Sendable, Hashable, Codable {
    /// The producing child's name, resolved like `after` (siblings first, then outward).
    public var from: String
    /// The part of the producer's output to take; `.` (the default) for all of it.
    public var select: JSONPath
    /// Where in this child's input to write it; `.` (the default) replaces the whole input.
    public var into: JSONPath

    public init(from: String, select: JSONPath = .root, into: JSONPath = .root) {
        self.from = from
        self.select = select
        self.into = into
    }
}
