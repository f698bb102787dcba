/// Evaluates an expression's tree against a context, counting steps (at most
/// ``ExpressionLimits/maxSteps``). Pure: it reads the context and nothing else.
struct ExpressionEvaluator<Context: ExpressionContext> {
    let context: Context
    private var steps = 0

    init(context: Context) {
        self.context = context
    }

    mutating func evaluate(_ node: ExpressionNode) throws(ExpressionEvaluationError) -> JSONValue {
        try step()
        switch node {
        case .literal(let value):
            return value
        case .list(let elements):
            var values: [JSONValue] = []
            values.reserveCapacity(elements.count)
            for element in elements { values.append(try evaluate(element)) }
            return .array(values)
        case .outputs(let name, let path):
            let output = try context.output(of: name)
            guard let selected = output.select(path) else {
                throw ExpressionEvaluationError(
                    "outputs.\(name)\(Self.pathText(path)): the output of \"\(name)\" has nothing at \"\(path)\"")
            }
            return selected
        case .ownOutput(let path):
            guard let output = context.ownOutput else {
                throw ExpressionEvaluationError("output: there is no output here (only in repeat.until)")
            }
            guard let selected = output.select(path) else {
                throw ExpressionEvaluationError("output\(Self.pathText(path)): the output has nothing at \"\(path)\"")
            }
            return selected
        case .state(let state, let name):
            return .bool(context.state(of: name) == state)
        case .always:
            return .bool(true)
        case .contains(let container, let element):
            return .bool(try contains(try evaluate(container), try evaluate(element)))
        case .not(let operand):
            return .bool(!truth(try evaluate(operand)))
        case .binary(.and, let left, let right):
            guard truth(try evaluate(left)) else { return .bool(false) }
            return .bool(truth(try evaluate(right)))
        case .binary(.or, let left, let right):
            if truth(try evaluate(left)) { return .bool(true) }
            return .bool(truth(try evaluate(right)))
        case .binary(let op, let left, let right):
            let (a, b) = (try evaluate(left), try evaluate(right))
            try step(by: Self.size(a) + Self.size(b))
            switch op {
            case .equal: return .bool(a == b)
            case .notEqual: return .bool(a != b)
            default: return .bool(try compare(a, op, b))
            }
        }
    }

    private func compare(_ a: JSONValue, _ op: BinaryOperator, _ b: JSONValue) throws(ExpressionEvaluationError)
        -> Bool
    {
        if let x = a.doubleValue, let y = b.doubleValue {
            switch op {
            case .less: return x < y
            case .lessOrEqual: return x <= y
            case .greater: return x > y
            default: return x >= y
            }
        }
        if let x = a.stringValue, let y = b.stringValue {
            switch op {
            case .less: return x < y
            case .lessOrEqual: return x <= y
            case .greater: return x > y
            default: return x >= y
            }
        }
        throw ExpressionEvaluationError(
            "\(op.rawValue) compares two numbers or two strings, not \(Self.typeWord(a)) and \(Self.typeWord(b))")
    }

    private mutating func contains(_ container: JSONValue, _ element: JSONValue) throws(ExpressionEvaluationError)
        -> Bool
    {
        switch container {
        case .array(let elements):
            try step(by: elements.count)
            return elements.contains(element)
        case .string(let text):
            guard let needle = element.stringValue else {
                throw ExpressionEvaluationError(
                    "contains(STRING, VALUE) looks for a string in a string, not \(Self.typeWord(element))")
            }
            try step(by: text.utf8.count)
            return needle.isEmpty || text.contains(needle)
        case .object(let members):
            guard let key = element.stringValue else {
                throw ExpressionEvaluationError(
                    "contains(OBJECT, KEY) looks for a member name, not \(Self.typeWord(element))")
            }
            return members[key] != nil
        default:
            throw ExpressionEvaluationError(
                "contains() looks in a list or a string (or an object's member names), not \(Self.typeWord(container))")
        }
    }

    private mutating func step(by count: Int = 1) throws(ExpressionEvaluationError) {
        steps += count
        if steps > ExpressionLimits.maxSteps {
            throw ExpressionEvaluationError("the expression took more than \(ExpressionLimits.maxSteps) steps")
        }
    }

    /// A rough cost of comparing a value: its elements or characters.
    private static func size(_ value: JSONValue) -> Int {
        switch value {
        case .array(let elements): elements.count
        case .object(let members): members.count
        case .string(let text): text.utf8.count / 64
        default: 0
        }
    }

    private static func typeWord(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): "a boolean (\(flag))"
        case .int, .double: "a number (\(value.jsonString()))"
        case .string(let text): "a string (\"\(text)\")"
        case .array: "a list"
        case .object: "an object"
        }
    }

    /// `.ok`, `[0].name`: a path as written after `outputs.NAME`.
    static func pathText(_ path: JSONPath) -> String {
        path.isRoot ? "" : (path.description.hasPrefix("[") ? path.description : ".\(path.description)")
    }
}

/// `false`, `null`, `0` and `""` are false; every other value is true.
func truth(_ value: JSONValue) -> Bool {
    switch value {
    case .null: false
    case .bool(let flag): flag
    case .int(let number): number != 0
    case .double(let number): number != 0
    case .string(let text): !text.isEmpty
    case .array, .object: true
    }
}
