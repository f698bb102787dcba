/// Checks the input (`with`) of the built-in procedure kinds, and where their injections write.
/// Other kinds are custom (a worker built with the Swift API provides them) and accepted as is.
enum BuiltinInputs {
    /// The input fields of each built-in kind; `nil` for `echo`, which takes anything.
    static let fields: [String: [String]] = [
        "shell": ["command", "env", "stdin", "cwd"],
        "sleep": ["seconds"],
        "fail": ["message"],
    ]

    static let kinds: Set<String> = ["shell", "sleep", "echo", "fail"]

    /// Input fields the coordinator sets on the procedures of a fan-out, which every kind
    /// accepts.
    static let reservedFields: Set<String> = ["matrix", "map"]

    static func check(
        kind: String, input: JSONValue, injections: [Injection], path: String, errors: inout [SpecError]
    ) {
        guard let known = fields[kind] else { return }  // echo and custom kinds
        let withPath = "\(path).with"
        func fail(_ code: SpecError.Code, _ at: String, _ message: String) {
            errors.append(SpecError(code, path: at, message))
        }
        // An injection written at the root replaces the whole input: nothing is required of `with`.
        let replacesInput = injections.contains { $0.into.isRoot }
        let injected = Set(injections.compactMap(\.into.firstKey))
        for (offset, injection) in injections.enumerated() where !injection.into.isRoot {
            let intoPath = "\(path).inject[\(offset)].into"
            guard let key = injection.into.firstKey else {
                fail(.invalidValue, intoPath, "the input of \(kind) is an object; start the path with a field name")
                continue
            }
            if !known.contains(key) {
                fail(
                    .invalidValue, intoPath,
                    "\(kind) has no input \"\(key)\"\(Suggestion.didYouMean(key, in: known)) (inputs: \(known.joined(separator: ", ")))"
                )
            }
        }
        guard case .object(let members) = input else {
            fail(
                .wrongType, withPath,
                "the input of \(kind) is an object (\(known.joined(separator: ", "))), not \(input.typeName.withArticle)"
            )
            return
        }
        // `matrix` and `map` are set by the coordinator (a fan-out's combination or item): a
        // procedure it made, read back from the journal, has them.
        for key in members.keys.sorted() where !known.contains(key) && !reservedFields.contains(key) {
            fail(
                .unknownField, "\(withPath).\(key)",
                "\(kind) has no input \"\(key)\"\(Suggestion.didYouMean(key, in: known)) (inputs: \(known.joined(separator: ", ")))"
            )
        }
        func required(_ key: String, _ hint: String) {
            if members[key] == nil && !injected.contains(key) && !replacesInput {
                fail(.missingField, "\(withPath).\(key)", "missing; \(kind) needs \(hint)")
            }
        }
        switch kind {
        case "shell":
            required("command", "a command, e.g. command: [\"sh\", \"-c\", \"echo hello\"]")
            if let command = members["command"] { checkCommand(command, path: "\(withPath).command", fail: fail) }
            if let env = members["env"] { checkEnvironment(env, path: "\(withPath).env", fail: fail) }
            if let stdin = members["stdin"], stdin.stringValue == nil {
                fail(.wrongType, "\(withPath).stdin", "expected a string, got \(stdin.typeName.withArticle)")
            }
            if let cwd = members["cwd"] {
                if cwd.stringValue == nil {
                    fail(
                        .wrongType, "\(withPath).cwd",
                        "expected a string (a directory), got \(cwd.typeName.withArticle)")
                } else if cwd.stringValue!.isEmpty {
                    fail(.invalidValue, "\(withPath).cwd", "a working directory cannot be empty")
                }
            }
        case "sleep":
            required("seconds", "a number of seconds, e.g. seconds: 5")
            if let seconds = members["seconds"] {
                if let value = seconds.doubleValue {
                    if !(value >= 0) || !value.isFinite {
                        fail(.invalidValue, "\(withPath).seconds", "must be a number of seconds, 0 or more")
                    }
                } else {
                    fail(
                        .wrongType, "\(withPath).seconds",
                        "expected a number of seconds, got \(seconds.typeName.withArticle)")
                }
            }
        case "fail":
            if let message = members["message"], message.stringValue == nil {
                fail(.wrongType, "\(withPath).message", "expected a string, got \(message.typeName.withArticle)")
            }
        default:
            break
        }
    }

    private static func checkCommand(
        _ command: JSONValue, path: String, fail: (SpecError.Code, String, String) -> Void
    ) {
        guard case .array(let words) = command else {
            var message =
                "expected a list of strings (the program and its arguments), got \(command.typeName.withArticle)"
            if let text = command.stringValue { message += "; for a shell line write [\"sh\", \"-c\", \"\(text)\"]" }
            fail(.wrongType, path, message)
            return
        }
        if words.isEmpty {
            fail(.invalidValue, path, "a command cannot be empty; give at least the program")
            return
        }
        for (offset, word) in words.enumerated() where word.stringValue == nil {
            fail(.wrongType, "\(path)[\(offset)]", "expected a string, got \(word.typeName.withArticle)")
        }
        if words[0].stringValue?.isEmpty == true {
            fail(.invalidValue, "\(path)[0]", "the program name cannot be empty")
        }
    }

    private static func checkEnvironment(
        _ env: JSONValue, path: String, fail: (SpecError.Code, String, String) -> Void
    ) {
        guard case .object(let variables) = env else {
            fail(.wrongType, path, "expected an object of NAME: \"value\" strings, got \(env.typeName.withArticle)")
            return
        }
        for name in variables.keys.sorted() {
            let value = variables[name]!
            let variablePath = "\(path).\(name)"
            if !isVariableName(name) {
                fail(
                    .invalidValue, variablePath,
                    "\"\(name)\" is not an environment variable name (letters, digits, _; not starting with a digit)")
            } else if name.hasPrefix("COHORT_") {
                fail(.invalidValue, variablePath, "COHORT_ variables are set by the worker and cannot be overridden")
            }
            if value.stringValue == nil {
                fail(
                    .wrongType, variablePath,
                    "expected a string, got \(value.typeName.withArticle); quote it, e.g. \"\(value.jsonString())\"")
            }
        }
    }

    private static func isVariableName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !(48...57).contains(first.value) else { return false }
        return name.unicodeScalars.allSatisfy {
            (65...90).contains($0.value) || (97...122).contains($0.value) || (48...57).contains($0.value) || $0 == "_"
        }
    }
}

extension String {
    /// `an object`, `a string`: the word with its indefinite article.
    var withArticle: String {
        guard let first = first else { return self }
        return ("aeiou".contains(first) ? "an " : "a ") + self
    }
}
