/// An expression read from its text (``SpecExpression/parse(allowsOutput:)``): a tree the
/// coordinator evaluates, and the names it refers to.
public struct ParsedExpression: Sendable, Hashable {
    /// The text it was read from.
    public let text: String
    let root: ExpressionNode
    /// Every child name it uses (in `succeeded(NAME)`… and `outputs.NAME`), first use first,
    /// each once: the child's dependencies.
    public let references: [String]
    /// The names it reads an output of (`outputs.NAME`): each must name a procedure.
    public let outputReferences: [String]

    /// Evaluates it to a value.
    /// - Throws: ``ExpressionEvaluationError`` for a missing output or path, a comparison of
    ///   values that do not compare, or more than ``ExpressionLimits/maxSteps`` steps.
    public func value(in context: some ExpressionContext) throws(ExpressionEvaluationError) -> JSONValue {
        var evaluator = ExpressionEvaluator(context: context)
        return try evaluator.evaluate(root)
    }

    /// Evaluates it to true or false: `false`, `null`, `0` and `""` are false, every other
    /// value is true.
    /// - Throws: what ``value(in:)`` throws.
    public func isTrue(in context: some ExpressionContext) throws(ExpressionEvaluationError) -> Bool {
        truth(try value(in: context))
    }
}

/// One node of an expression's tree.
indirect enum ExpressionNode: Sendable, Hashable {
    case literal(JSONValue)
    case list([ExpressionNode])
    /// `outputs.NAME.PATH`.
    case outputs(name: String, path: JSONPath)
    /// `output.PATH` (`repeat.until`).
    case ownOutput(JSONPath)
    /// `succeeded(NAME)`, `failed(NAME)`, `cancelled(NAME)`, `skipped(NAME)`.
    case state(ExpressionChildState, name: String)
    case always
    case contains(ExpressionNode, ExpressionNode)
    case not(ExpressionNode)
    case binary(BinaryOperator, ExpressionNode, ExpressionNode)
}

/// A two-operand operator.
enum BinaryOperator: String, Sendable, Hashable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case and = "&&"
    case or = "||"
}
