/// An expression of a spec's `if:`, `require:` or `repeat.until`, as written:
/// `failed(deploy)`, `outputs.check.ok == true && !skipped(lint)`, `output.healthy == true`.
///
/// It holds the text; ``parse(allowsOutput:)`` reads it into a ``ParsedExpression`` (which a
/// spec's validation does, reporting errors with the field's path and the column), and the
/// coordinator evaluates the parsed form. The language (docs/spec.md, "Conditions"):
/// - literals: `"text"` or `'text'`, numbers (`3`, `-1.5`), `true`, `false`, `null`, lists
///   (`[1, "a"]`);
/// - `outputs.NAME.PATH`: the output of a finished sibling `NAME` (resolved like `after`;
///   `outputs["a.b"].x` for a name with a dot), and in `repeat.until` only, `output.PATH`: the
///   child's own latest output;
/// - `succeeded(NAME)`, `failed(NAME)`, `cancelled(NAME)`, `skipped(NAME)`, `always()`,
///   `contains(LIST-OR-STRING, VALUE)`;
/// - `!`, then `< <= > >=`, then `== !=`, then `&&`, then `||` (tightest first), and
///   parentheses.
///
/// Every name it uses (in a function or `outputs`) is a dependency of the child, like `after`.
/// Sandboxed: no I/O, at most ``ExpressionLimits/maxSourceBytes`` of text,
/// ``ExpressionLimits/maxDepth`` levels of nesting and ``ExpressionLimits/maxSteps`` steps.
public struct SpecExpression: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The expression's text.
    public var text: String

    public init(_ text: String) {
        self.text = text
    }

    public init(stringLiteral text: String) {
        self.text = text
    }

    public var description: String { text }

    /// Reads the text.
    /// - Parameter allowsOutput: whether `output` (the child's own latest output) may appear:
    ///   in `repeat.until` only.
    /// - Throws: ``ExpressionError`` naming the column at fault.
    public func parse(allowsOutput: Bool = false) throws(ExpressionError) -> ParsedExpression {
        var parser = ExpressionParser(text: text, allowsOutput: allowsOutput)
        return try parser.parse()
    }
}

/// The bounds every expression stays within, so a spec cannot make the coordinator work
/// without end.
public enum ExpressionLimits {
    /// The longest expression text, in bytes: 4 KiB.
    public static let maxSourceBytes = 4096
    /// How deep an expression may nest (parentheses, operators, lists): 64 levels.
    public static let maxDepth = 64
    /// The most steps one evaluation may take (a step per operation, and one per list element
    /// or character `contains` and `==` look at): 100,000.
    public static let maxSteps = 100_000
}

/// Why an expression's text cannot be read: the message and the 1-based column (in
/// characters) where reading stopped.
public struct ExpressionError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var column: Int

    public init(_ message: String, column: Int) {
        self.message = message
        self.column = column
    }

    /// `unexpected ")", at column 7`.
    public var description: String { "\(message), at column \(column)" }
}

/// Why an expression could not be evaluated (a missing output, a comparison of a number with a
/// string): the child fails with it.
public struct ExpressionEvaluationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// A finished child's state, as `succeeded(NAME)` and its siblings ask it.
public enum ExpressionChildState: Sendable, Hashable {
    case succeeded, failed, cancelled, skipped
    /// Not finished (only when evaluated outside the scheduler's order).
    case unfinished
}

/// What an evaluation reads: the state and outputs of the children an expression names (by
/// the names as written), and the child's own latest output (`repeat.until`).
public protocol ExpressionContext {
    /// The state of the child or group that `name` names.
    func state(of name: String) -> ExpressionChildState
    /// The output of the procedure that `name` names.
    /// - Throws: ``ExpressionEvaluationError`` when it has none (it did not succeed).
    func output(of name: String) throws(ExpressionEvaluationError) -> JSONValue
    /// The child's own latest output (`output` in `repeat.until`), nil elsewhere.
    var ownOutput: JSONValue? { get }
}
