/// Reads an expression's text into a tree (recursive descent, one token of look-ahead),
/// within ``ExpressionLimits``. Precedence, loosest first: `||`, `&&`, `== !=`,
/// `< <= > >=`, `!`.
struct ExpressionParser {
    private let characters: [Character]
    private let allowsOutput: Bool
    private var position = 0
    private var depth = 0
    private var references: [String] = []
    private var outputReferences: [String] = []
    private let text: String

    static let stateFunctions: [String: ExpressionChildState] = [
        "succeeded": .succeeded, "failed": .failed, "cancelled": .cancelled, "skipped": .skipped,
    ]
    static let knownNames =
        ["succeeded", "failed", "cancelled", "skipped", "always", "contains", "outputs", "output"]
        + ["true", "false", "null"]

    init(text: String, allowsOutput: Bool) {
        self.text = text
        self.characters = Array(text)
        self.allowsOutput = allowsOutput
    }

    mutating func parse() throws(ExpressionError) -> ParsedExpression {
        guard text.utf8.count <= ExpressionLimits.maxSourceBytes else {
            throw ExpressionError(
                "the expression has \(text.utf8.count) bytes; the limit is \(ExpressionLimits.maxSourceBytes)",
                column: 1)
        }
        skipSpaces()
        guard position < characters.count else {
            throw ExpressionError("an empty expression; write a condition such as `succeeded(build)`", column: 1)
        }
        let root = try parseOr()
        skipSpaces()
        if position < characters.count {
            throw error("unexpected \(describe(characters[position])) after a complete expression")
        }
        return ParsedExpression(
            text: text, root: root, references: references, outputReferences: outputReferences)
    }

    // MARK: Grammar

    private mutating func parseOr() throws(ExpressionError) -> ExpressionNode {
        try nested { (parser: inout ExpressionParser) throws(ExpressionError) in
            var left = try parser.parseAnd()
            while parser.take("||") { left = .binary(.or, left, try parser.parseAnd()) }
            return left
        }
    }

    private mutating func parseAnd() throws(ExpressionError) -> ExpressionNode {
        var left = try parseEquality()
        while take("&&") { left = .binary(.and, left, try parseEquality()) }
        return left
    }

    private mutating func parseEquality() throws(ExpressionError) -> ExpressionNode {
        var left = try parseRelation()
        while true {
            if take("==") {
                left = .binary(.equal, left, try parseRelation())
            } else if take("!=") {
                left = .binary(.notEqual, left, try parseRelation())
            } else {
                return left
            }
        }
    }

    private mutating func parseRelation() throws(ExpressionError) -> ExpressionNode {
        var left = try parseUnary()
        while true {
            let op: BinaryOperator
            if take("<=") {
                op = .lessOrEqual
            } else if take(">=") {
                op = .greaterOrEqual
            } else if take("<") {
                op = .less
            } else if take(">") {
                op = .greater
            } else {
                return left
            }
            left = .binary(op, left, try parseUnary())
        }
    }

    private mutating func parseUnary() throws(ExpressionError) -> ExpressionNode {
        skipSpaces()
        if peek() == "!", peek(at: 1) != "=" {
            position += 1
            return try nested { (parser: inout ExpressionParser) throws(ExpressionError) in
                .not(try parser.parseUnary())
            }
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws(ExpressionError) -> ExpressionNode {
        skipSpaces()
        guard let character = peek() else { throw error("the expression ends where a value was expected") }
        switch character {
        case "(":
            position += 1
            let inner = try parseOr()
            try expect(")", "a \")\" to close the \"(\"")
            return inner
        case "[":
            position += 1
            return try nested { (parser: inout ExpressionParser) throws(ExpressionError) in
                var elements: [ExpressionNode] = []
                parser.skipSpaces()
                if parser.take("]") { return .list(elements) }
                repeat {
                    elements.append(try parser.parseOr())
                } while parser.take(",")
                try parser.expect("]", "a \",\" or a \"]\" to close the list")
                return .list(elements)
            }
        case "\"", "'":
            return .literal(.string(try parseString()))
        case "-", "0"..."9":
            return .literal(try parseNumber())
        default:
            guard Self.isNameStart(character) else {
                throw error("unexpected \(describe(character)) where a value was expected")
            }
            return try parseName()
        }
    }

    private mutating func parseName() throws(ExpressionError) -> ExpressionNode {
        let start = position
        let name = readIdentifier()
        switch name {
        case "true": return .literal(.bool(true))
        case "false": return .literal(.bool(false))
        case "null": return .literal(.null)
        case "outputs":
            let child = try readOutputsName()
            note(child, output: true)
            return .outputs(name: child, path: try readPath())
        case "output":
            guard allowsOutput else {
                position = start
                throw error(
                    "`output` (the child's own output) exists only in `repeat.until`; use `outputs.NAME` for a sibling's"
                )
            }
            return .ownOutput(try readPath())
        default:
            break
        }
        skipSpaces()
        guard peek() == "(" else {
            position = start
            throw error(
                "unknown name \"\(name)\"\(Suggestion.didYouMean(name, in: Self.knownNames)); a string needs quotes")
        }
        position += 1
        if let state = Self.stateFunctions[name] {
            let child = try readReference(function: name)
            note(child, output: false)
            try expect(")", "a \")\" after the name; \(name)() takes one child name")
            return .state(state, name: child)
        }
        switch name {
        case "always":
            try expect(")", "a \")\"; always() takes no arguments")
            return .always
        case "contains":
            let list = try parseOr()
            try expect(",", "a \",\"; contains(LIST-OR-STRING, VALUE) takes two arguments")
            let value = try parseOr()
            try expect(")", "a \")\"; contains(LIST-OR-STRING, VALUE) takes two arguments")
            return .contains(list, value)
        default:
            position = start
            let functions = ["succeeded", "failed", "cancelled", "skipped", "always", "contains"]
            throw error(
                "unknown function \"\(name)\"\(Suggestion.didYouMean(name, in: functions)) (known: \(functions.joined(separator: ", ")))"
            )
        }
    }

    // MARK: Names and paths

    /// The child name of `outputs.NAME` or `outputs["NAME"]`.
    private mutating func readOutputsName() throws(ExpressionError) -> String {
        if peek() == ".", let next = peek(at: 1), Self.isPathCharacter(next) {
            position += 1
            return readIdentifier()
        }
        if peek() == "[", let next = peek(at: 1), next == "\"" || next == "'" {
            position += 1
            let name = try parseString()
            try expect("]", "a \"]\" after the name")
            return name
        }
        throw error("`outputs` needs a child name: `outputs.build.version` or `outputs[\"my.step\"].version`")
    }

    /// `.key`, `[0]` and `["key"]` steps after `outputs.NAME` or `output`.
    private mutating func readPath() throws(ExpressionError) -> JSONPath {
        var segments: [JSONPath.Segment] = []
        while true {
            if peek() == ".", let next = peek(at: 1), Self.isPathCharacter(next) {
                position += 1
                segments.append(.key(readIdentifier()))
            } else if peek() == "[" {
                position += 1
                skipSpaces()
                if peek() == "\"" || peek() == "'" {
                    segments.append(.key(try parseString()))
                } else {
                    let start = position
                    while let character = peek(), character.isASCII, character.isNumber { position += 1 }
                    guard position > start, let index = Int(String(characters[start..<position])) else {
                        throw error("expected an array index (0, 1, 2…) or a quoted member name after \"[\"")
                    }
                    segments.append(.index(index))
                }
                try expect("]", "a \"]\"")
            } else {
                return JSONPath(segments)
            }
        }
    }

    /// The argument of `succeeded(NAME)` and its siblings: a child name or path (`build`,
    /// `tests/unit`), quoted or not.
    private mutating func readReference(function: String) throws(ExpressionError) -> String {
        skipSpaces()
        if peek() == "\"" || peek() == "'" { return try parseString() }
        let start = position
        while let character = peek(), !character.isWhitespace, !",()".contains(character) { position += 1 }
        guard position > start else { throw error("\(function)() needs a child name, e.g. \(function)(build)") }
        return String(characters[start..<position])
    }

    private mutating func readIdentifier() -> String {
        let start = position
        while let character = peek(), Self.isPathCharacter(character) { position += 1 }
        return String(characters[start..<position])
    }

    private mutating func note(_ name: String, output: Bool) {
        if !references.contains(name) { references.append(name) }
        if output, !outputReferences.contains(name) { outputReferences.append(name) }
    }

    // MARK: Literals

    private mutating func parseString() throws(ExpressionError) -> String {
        let quote = characters[position]
        let start = position
        position += 1
        var result = ""
        while let character = peek() {
            position += 1
            if character == quote { return result }
            if character == "\\" {
                guard let escaped = peek() else { break }
                position += 1
                switch escaped {
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "\\", "\"", "'": result.append(escaped)
                default:
                    position -= 1
                    throw error("unknown escape \"\\\(escaped)\" (known: \\\\, \\\", \\', \\n, \\t)")
                }
            } else {
                result.append(character)
            }
        }
        position = start
        throw error("a string without its closing \(quote)")
    }

    private mutating func parseNumber() throws(ExpressionError) -> JSONValue {
        let start = position
        if peek() == "-" { position += 1 }
        while let character = peek(), character.isASCII,
            character.isNumber || character == "." || character == "e" || character == "E"
                || ((character == "+" || character == "-")
                    && (characters[position - 1] == "e" || characters[position - 1] == "E"))
        {
            position += 1
        }
        let literal = String(characters[start..<position])
        if let integer = Int64(literal) { return .int(integer) }
        if let double = Double(literal), double.isFinite, literal.last?.isNumber == true { return .double(double) }
        position = start
        throw error("\"\(literal)\" is not a number")
    }

    // MARK: Characters

    private static func isNameStart(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character == "_")
    }

    private static func isPathCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "_" || character == "-")
    }

    private func peek(at offset: Int = 0) -> Character? {
        position + offset < characters.count ? characters[position + offset] : nil
    }

    private mutating func skipSpaces() {
        while let character = peek(), character.isWhitespace { position += 1 }
    }

    /// Consumes `token` (after spaces) if it is next.
    private mutating func take(_ token: String) -> Bool {
        skipSpaces()
        var offset = 0
        for character in token {
            guard peek(at: offset) == character else { return false }
            offset += 1
        }
        // `<` is not `<=`, `=` alone is not an operator.
        position += offset
        return true
    }

    private mutating func expect(_ token: String, _ what: String) throws(ExpressionError) {
        guard take(token) else {
            let found = peek().map { describe($0) } ?? "the end"
            throw error("expected \(what), found \(found)")
        }
    }

    private mutating func nested<T>(_ body: (inout ExpressionParser) throws(ExpressionError) -> T)
        throws(ExpressionError) -> T
    {
        depth += 1
        defer { depth -= 1 }
        guard depth <= ExpressionLimits.maxDepth else {
            throw error("the expression nests deeper than \(ExpressionLimits.maxDepth) levels")
        }
        return try body(&self)
    }

    private func describe(_ character: Character) -> String {
        character == "=" && peek(at: 1) != "=" ? "\"=\" (compare with \"==\")" : "\"\(character)\""
    }

    private func error(_ message: String) -> ExpressionError {
        ExpressionError(message, column: position + 1)
    }
}
