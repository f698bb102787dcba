/// A procedure kind with its input and output types: the one value a worker registers and a
/// client builds children from, so both sides agree on the name and the types.
///
/// ```swift
/// struct Text: Codable, Sendable { var text: String }
/// struct Counts: Codable, Sendable { var words: Int }
///
/// let wordcount = Kind<Text, Counts>("wordcount")
///
/// registry.register(wordcount) { input in Counts(words: input.text.split(separator: " ").count) }  // worker
/// try ChildSpec("count", wordcount, Text(text: "a b c"))                                      // client
/// ```
///
/// Put kinds in a module that both the worker and the client import. On the wire a kind is
/// only its name (the spec's `run`); the input travels as the child's `with`, the output as
/// its result, both as the JSON `JSONEncoder` writes.
public struct Kind<Input: Codable & Sendable, Output: Codable & Sendable>: Sendable, Hashable,
    CustomStringConvertible
{
    /// The kind's name, the spec's `run`: non-empty, without whitespace (the spec validator
    /// and the worker's registry refuse any other).
    public let name: String

    /// The kind named `name`, taking `Input` and giving `Output`.
    public init(_ name: String, input: Input.Type = Input.self, output: Output.Type = Output.self) {
        self.name = name
    }

    public var description: String { name }
}
