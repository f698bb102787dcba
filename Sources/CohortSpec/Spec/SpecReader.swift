/// Reads the spec's JSON form into the model, reporting structural problems: unknown, missing
/// and conflicting fields, wrong types, durations, paths, enum values.
///
/// Semantic rules (names, references, cycles, limits, built-in inputs) belong to
/// `SpecValidator`, which also checks specs built in Swift. Where a value cannot be read, the
/// reader stores a placeholder and records its path in `placeholders`, so the validator's
/// complaints about the placeholder are dropped instead of repeating the reader's.
struct SpecReader {
    let format: SpecFormat
    private(set) var errors: [SpecError] = []
    private(set) var placeholders: Set<String> = []
    /// Paths of fields an unknown field was taken to be a typo of: their "missing" is not repeated.
    private var suggested: Set<String> = []

    init(format: SpecFormat) {
        self.format = format
    }

    static let groupFields = [
        "name", "mode", "timeout", "onChildFailure", "exclusive", "requires", "limits", "priority", "children",
    ]
    static let childFields = [
        "name", "run", "with", "group", "after", "exclusive", "requires", "timeout", "retry", "onWorkerLoss",
        "inject", "if", "require", "repeat", "matrix",
    ]
    static let nestedGroupFields = ["mode", "onChildFailure", "children"]
    static let retryFields = ["attempts", "backoff", "strategy", "maxBackoff", "jitter"]
    static let injectFields = ["from", "select", "into"]
    static let repeatFields = ["until", "max", "every"]

    // MARK: Groups and children

    mutating func readGroup(_ value: JSONValue, defaultName: String?) -> GroupSpec {
        var spec = GroupSpec("", children: [])
        guard let object = object(value, path: "", what: "a group spec") else {
            placeholders.insert("")
            return spec
        }
        checkFields(
            object, path: "", allowed: SpecReader.groupFields,
            misplaced: [
                "after": "a top-level group has no siblings to wait for; `after` belongs on children",
                "run": "the top level is a group; `run` belongs on a child, under `children`",
                "with": "the top level is a group; `with` belongs on a child, under `children`",
                "retry": "`retry` applies to procedures; put it on the children that need it",
                "onWorkerLoss": "`onWorkerLoss` applies to procedures; put it on the children that need it",
                "inject": "`inject` belongs on a child, under `children`",
                "if": "the top level always runs; `if` belongs on a child, under `children`",
                "require": "`require` belongs on a child, under `children`",
                "repeat": "`repeat` applies to procedures; put it on the children that need it",
                "group": "the top level is already a group; put `mode` and `children` at the top level",
            ])
        if let name = string(object, "name", path: "name") {
            spec.name = name
        } else if object["name"] == nil || object["name"] == .null {
            if let defaultName {
                spec.name = defaultName
            } else {
                fail(.missingField, "name", "missing; a group needs a name when it is not read from a file")
                placeholders.insert("name")
            }
        } else {
            placeholders.insert("name")
        }
        spec.mode = enumValue(object, "mode", path: "mode") ?? .parallel
        spec.timeout = duration(object, "timeout", path: "timeout")
        spec.onChildFailure = enumValue(object, "onChildFailure", path: "onChildFailure") ?? .cancelDependents
        spec.exclusive = stringList(object, "exclusive", path: "exclusive")
        spec.requires = stringList(object, "requires", path: "requires")
        spec.limits = limits(object["limits"], path: "limits")
        if let value = object["priority"], value != .null {
            if let number = wholeNumber(value, path: "priority") { spec.priority = number }
        }
        spec.children = children(object, path: "children")
        return spec
    }

    /// `limits: { api-quota: 4 }`: category → a whole number (checked by the validator).
    private mutating func limits(_ value: JSONValue?, path: String) -> [String: Int] {
        guard let value, value != .null else { return [:] }
        guard case .object(let object) = value else {
            wrongType(path, expected: "a mapping of categories to limits (`api-quota: 4`)", got: value)
            placeholders.insert(path)
            return [:]
        }
        var limits: [String: Int] = [:]
        for (category, entry) in object {
            if let number = wholeNumber(entry, path: join(path, category)) { limits[category] = number }
        }
        return limits
    }

    private mutating func children(_ object: [String: JSONValue], path: String) -> [ChildSpec] {
        guard let value = object["children"], value != .null else {
            fail(.missingField, path, "missing; a group needs a list of children")
            placeholders.insert(path)
            return []
        }
        guard case .array(let elements) = value else {
            wrongType(path, expected: "\(aList) of children", got: value)
            placeholders.insert(path)
            return []
        }
        return elements.enumerated().map { index, element in
            readChild(element, path: "\(path)[\(index)]")
        }
    }

    mutating func readChild(_ value: JSONValue, path: String) -> ChildSpec {
        let placeholder = ChildSpec(name: "", body: .procedure(.init(run: "")))
        guard let object = object(value, path: path, what: "a child") else {
            placeholders.insert(path)
            return placeholder
        }
        checkFields(object, path: path, allowed: SpecReader.childFields)
        var child = placeholder
        if let value = string(object, "name", path: join(path, "name")) {
            child.name = value
        } else {
            let name = join(path, "name")
            if object["name"] == nil || object["name"] == .null {
                fail(.missingField, name, "missing; every child needs a name")
            }
            placeholders.insert(name)
        }

        let run = object["run"].flatMap { $0 == .null ? nil : $0 }
        let group = object["group"].flatMap { $0 == .null ? nil : $0 }
        switch (run, group) {
        case (.some, .some):
            fail(
                .conflictingFields, path,
                "has both `run` and `group`; a child is either a procedure (`run`) or a nested group (`group`)")
            placeholders.insert(join(path, "run"))
        case (nil, nil):
            fail(.missingField, path, "needs `run` (a procedure kind) or `group` (a nested group)")
            placeholders.insert(join(path, "run"))
            placeholders.insert(join(path, "with"))
        case (.some, nil):
            let kind = string(object, "run", path: join(path, "run"))
            if kind == nil { placeholders.insert(join(path, "run")) }
            let input = object["with"].flatMap { $0 == .null ? nil : $0 } ?? .emptyObject
            child.body = .procedure(.init(run: kind ?? "", with: input))
        case (nil, .some(let groupValue)):
            if object["with"] != nil {
                fail(.conflictingFields, join(path, "with"), "`with` is a procedure's input; a group has none")
            }
            child.body = .group(readNestedGroup(groupValue, path: join(path, "group")))
        }

        child.after = stringList(object, "after", path: join(path, "after"))
        child.exclusive = stringList(object, "exclusive", path: join(path, "exclusive"))
        child.requires = stringList(object, "requires", path: join(path, "requires"))
        child.timeout = duration(object, "timeout", path: join(path, "timeout"))
        child.retry = retry(object["retry"], path: join(path, "retry"))
        child.onWorkerLoss = enumValue(object, "onWorkerLoss", path: join(path, "onWorkerLoss")) ?? .retry
        child.inject = injections(object["inject"], path: join(path, "inject"))
        child.condition = expression(object, "if", path: join(path, "if"))
        child.requirement = expression(object, "require", path: join(path, "require"))
        child.repeating = repeatPolicy(object["repeat"], path: join(path, "repeat"))
        child.matrix = matrix(object["matrix"], path: join(path, "matrix"))
        return child
    }

    /// `matrix: { os: [linux, mac], shard: [1, 2] }`: each key a non-empty list of strings,
    /// numbers or booleans. Key names, the number of combinations and where a matrix may go
    /// are the validator's.
    private mutating func matrix(_ value: JSONValue?, path: @autoclosure () -> String) -> Matrix? {
        guard let value, value != .null else { return nil }
        let path = path()
        guard
            let object = object(
                value, path: path, what: "a matrix: each key a list of values, e.g. { os: [linux, mac] }")
        else {
            placeholders.insert(path)
            return nil
        }
        var axes: [Matrix.Axis] = []
        for key in object.keys.sorted() {
            let keyPath = join(path, key)
            guard case .array(let values) = object[key]! else {
                wrongType(keyPath, expected: "\(aList) of values (strings, numbers or booleans)", got: object[key]!)
                placeholders.insert(keyPath)
                continue
            }
            for (index, element) in values.enumerated() {
                switch element {
                case .string, .int, .double, .bool: continue
                default:
                    wrongType("\(keyPath)[\(index)]", expected: "a string, number or boolean", got: element)
                    placeholders.insert(keyPath)
                }
            }
            axes.append(Matrix.Axis(key: key, values: values))
        }
        return Matrix(axes: axes)
    }

    private mutating func readNestedGroup(_ value: JSONValue, path: String) -> ChildSpec.Group {
        var group = ChildSpec.Group(children: [])
        guard let object = object(value, path: path, what: "a nested group (mode, onChildFailure, children)") else {
            placeholders.insert(path)
            return group
        }
        var misplaced: [String: String] = [:]
        for field in [
            "name", "timeout", "after", "exclusive", "requires", "retry", "onWorkerLoss", "inject", "run", "with",
            "if", "require", "repeat",
        ] {
            misplaced[field] = "`\(field)` goes on the child, beside `group:`, not inside it"
        }
        misplaced["retry"] = "`retry` applies to procedures only; put it on the group's children"
        misplaced["onWorkerLoss"] = "`onWorkerLoss` applies to procedures only; put it on the group's children"
        misplaced["run"] = "a child is either a procedure (`run`) or a nested group (`group`), not both"
        misplaced["with"] = "`with` is a procedure's input; a group has none"
        misplaced["repeat"] = "`repeat` applies to procedures only; put it on the group's children"
        checkFields(object, path: path, allowed: SpecReader.nestedGroupFields, misplaced: misplaced)
        group.mode = enumValue(object, "mode", path: join(path, "mode")) ?? .parallel
        group.onChildFailure =
            enumValue(object, "onChildFailure", path: join(path, "onChildFailure")) ?? .cancelDependents
        group.children = children(object, path: join(path, "children"))
        return group
    }

    // MARK: Conditions and repeat

    /// An `if:` or `require:` (or `repeat.until`): a string; `true` and `false` are taken as
    /// written. Parsed by the validator, which reports errors with their column.
    private mutating func expression(_ object: [String: JSONValue], _ key: String, path: @autoclosure () -> String)
        -> SpecExpression?
    {
        guard let value = object[key], value != .null else { return nil }
        switch value {
        case .string(let text): return SpecExpression(text)
        case .bool(let flag): return SpecExpression(flag ? "true" : "false")
        default:
            wrongType(path(), expected: "an expression (a string) such as \"succeeded(build)\"", got: value)
            placeholders.insert(path())
            return nil
        }
    }

    mutating func repeatPolicy(_ value: JSONValue?, path: @autoclosure () -> String) -> RepeatPolicy? {
        guard let value, value != .null else { return nil }
        let path = path()
        guard let object = object(value, path: path, what: "a repeat policy ({until, max, every})") else {
            placeholders.insert(path)
            return nil
        }
        checkFields(object, path: path, allowed: SpecReader.repeatFields)
        var policy = RepeatPolicy(until: "true", max: 1)
        let untilPath = join(path, "until")
        if let until = expression(object, "until", path: untilPath) {
            policy.until = until
        } else if object["until"] == nil || object["until"] == .null {
            fail(.missingField, untilPath, "missing; say when to stop, e.g. `until: output.healthy == true`")
            placeholders.insert(untilPath)
        }
        let maxPath = join(path, "max")
        if let max = object["max"], max != .null {
            if let number = wholeNumber(max, path: maxPath) {
                policy.max = number
            } else {
                placeholders.insert(maxPath)
            }
        } else {
            fail(.missingField, maxPath, "missing; say how many runs at most, e.g. `max: 20`")
            placeholders.insert(maxPath)
        }
        policy.every = duration(object, "every", path: join(path, "every")) ?? .zero
        return policy
    }

    // MARK: Retry and inject

    mutating func retry(_ value: JSONValue?, path: @autoclosure () -> String) -> RetryPolicy? {
        guard let value, value != .null else { return nil }
        let path = path()
        // `retry: 3` is short for `retry: { attempts: 3 }`.
        if value.isNumber {
            guard let attempts = wholeNumber(value, path: join(path, "attempts")) else { return nil }
            return RetryPolicy(attempts: attempts)
        }
        guard let object = object(value, path: path, what: "a retry policy (attempts, backoff…) or a number")
        else { return nil }
        checkFields(object, path: path, allowed: SpecReader.retryFields)
        var policy = RetryPolicy(attempts: 1)
        let attemptsPath = join(path, "attempts")
        if let attempts = object["attempts"], attempts != .null {
            if let number = wholeNumber(attempts, path: attemptsPath) {
                policy.attempts = number
            } else {
                placeholders.insert(attemptsPath)
            }
        } else {
            fail(.missingField, attemptsPath, "missing; say how many attempts in all, e.g. `attempts: 3`")
            placeholders.insert(attemptsPath)
        }
        policy.backoff = duration(object, "backoff", path: join(path, "backoff")) ?? .zero
        policy.strategy = enumValue(object, "strategy", path: join(path, "strategy")) ?? .fixed
        policy.maxBackoff = duration(object, "maxBackoff", path: join(path, "maxBackoff"))
        if let jitter = object["jitter"], jitter != .null {
            if let number = jitter.doubleValue {
                policy.jitter = number
            } else {
                wrongType(join(path, "jitter"), expected: "a number from 0 to 1", got: jitter)
                placeholders.insert(join(path, "jitter"))
            }
        }
        return policy
    }

    private mutating func injections(_ value: JSONValue?, path: @autoclosure () -> String) -> [Injection] {
        guard let value, value != .null else { return [] }
        let path = path()
        guard case .array(let elements) = value else {
            wrongType(path, expected: "\(aList) of injections ({from, select, into})", got: value)
            placeholders.insert(path)
            return []
        }
        return elements.enumerated().map { index, element in
            let entryPath = "\(path)[\(index)]"
            var injection = Injection(from: "")
            guard let object = object(element, path: entryPath, what: "an injection ({from, select, into})") else {
                placeholders.insert(entryPath)
                return injection
            }
            checkFields(object, path: entryPath, allowed: SpecReader.injectFields)
            let fromPath = join(entryPath, "from")
            if let from = string(object, "from", path: fromPath) {
                injection.from = from
            } else {
                if object["from"] == nil || object["from"] == .null {
                    fail(.missingField, fromPath, "missing; name the child whose result to inject")
                }
                placeholders.insert(fromPath)
            }
            injection.select = jsonPath(object, "select", path: join(entryPath, "select"))
            injection.into = jsonPath(object, "into", path: join(entryPath, "into"))
            return injection
        }
    }

    private mutating func jsonPath(_ object: [String: JSONValue], _ key: String, path: String) -> JSONPath {
        guard let text = string(object, key, path: path) else {
            if object[key] != nil && object[key] != .null { placeholders.insert(path) }
            return .root
        }
        do {
            return try JSONPath(parsing: text)
        } catch {
            fail(.invalidPath, path, "not a path: \(error.description)")
            placeholders.insert(path)
            return .root
        }
    }

    // MARK: Values

    private var aMapping: String { format == .json ? "an object" : "a mapping" }
    private var aList: String { format == .json ? "an array" : "a list" }

    private func typeWord(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return "a boolean (\(flag))"
        case .int, .double: return "a number (\(value.jsonString()))"
        case .string(let text): return "a string (\"\(text)\")"
        case .array: return "\(aList)"
        case .object: return "\(aMapping)"
        }
    }

    private mutating func fail(_ code: SpecError.Code, _ path: String, _ message: String) {
        // `chidren: unknown field…; did you mean "children"?` says enough; skip `children: missing`.
        if code == .missingField, suggested.contains(path) { return }
        errors.append(SpecError(code, path: path, message))
    }

    private mutating func wrongType(_ path: String, expected: String, got value: JSONValue) {
        var message = "expected \(expected), got \(typeWord(value))"
        // YAML turns unquoted 123, 1.5, yes, no, on, off and null into non-strings.
        if format == .yaml, expected.hasPrefix("a string") || expected.hasPrefix("a name"),
            value.isNumber || value.boolValue != nil
        {
            message += "; quote it if you meant the text"
        }
        fail(.wrongType, path, message)
    }

    private mutating func object(_ value: JSONValue, path: String, what: String) -> [String: JSONValue]? {
        if case .object(let members) = value { return members }
        wrongType(path, expected: "\(what), \(aMapping)", got: value)
        return nil
    }

    private mutating func checkFields(
        _ object: [String: JSONValue], path: String, allowed: [String], misplaced: [String: String] = [:]
    ) {
        guard object.keys.contains(where: { !allowed.contains($0) }) else { return }
        for key in object.keys.sorted() where !allowed.contains(key) {
            let fieldPath = join(path, key)
            if let hint = misplaced[key] {
                fail(.unknownField, fieldPath, "not allowed here: \(hint)")
            } else {
                let known = allowed.map { "`\($0)`" }.joined(separator: ", ")
                if let guess = Suggestion.closest(to: key, in: allowed) { suggested.insert(join(path, guess)) }
                fail(
                    .unknownField, fieldPath,
                    "unknown field \"\(key)\"\(Suggestion.didYouMean(key, in: allowed)) (known here: \(known))")
            }
        }
    }

    // The paths below are built only for a fault: a spec of 10,000 children has tens of
    // thousands of fields, and building each one's path is most of the reading.

    private mutating func string(_ object: [String: JSONValue], _ key: String, path: @autoclosure () -> String)
        -> String?
    {
        guard let value = object[key], value != .null else { return nil }
        guard case .string(let text) = value else {
            wrongType(path(), expected: "a string", got: value)
            return nil
        }
        return text
    }

    /// A list of strings; a single string is accepted as a list of one (`after: build`).
    private mutating func stringList(_ object: [String: JSONValue], _ key: String, path: @autoclosure () -> String)
        -> [String]
    {
        guard let value = object[key], value != .null else { return [] }
        switch value {
        case .string(let text):
            return [text]
        case .array(let elements):
            return elements.enumerated().map { index, element in
                if case .string(let text) = element { return text }
                wrongType("\(path())[\(index)]", expected: "a string", got: element)
                placeholders.insert("\(path())[\(index)]")
                return ""
            }
        default:
            wrongType(path(), expected: "\(aList) of strings", got: value)
            placeholders.insert(path())
            return []
        }
    }

    private mutating func duration(_ object: [String: JSONValue], _ key: String, path: @autoclosure () -> String)
        -> Duration?
    {
        guard let value = object[key], value != .null else { return nil }
        let path = path()
        switch value {
        case .string(let text):
            do {
                return try Duration(specString: text)
            } catch {
                fail(.invalidDuration, path, error.description)
                placeholders.insert(path)
                return nil
            }
        case .int, .double:
            fail(.invalidDuration, path, SpecDurationError.missingUnit(value.jsonString()).description)
            placeholders.insert(path)
            return nil
        default:
            wrongType(path, expected: "a duration such as \"30s\"", got: value)
            placeholders.insert(path)
            return nil
        }
    }

    private mutating func wholeNumber(_ value: JSONValue, path: String) -> Int? {
        if let number = value.int64Value, let int = Int(exactly: number) { return int }
        wrongType(path, expected: "a whole number", got: value)
        return nil
    }

    private mutating func enumValue<Value: RawRepresentable & CaseIterable>(
        _ object: [String: JSONValue], _ key: String, path: String
    ) -> Value? where Value.RawValue == String {
        guard let text = string(object, key, path: path) else {
            if object[key] != nil && object[key] != .null { placeholders.insert(path) }
            return nil
        }
        if let value = Value(rawValue: text) { return value }
        let names = Value.allCases.map(\.rawValue)
        fail(
            .invalidValue, path,
            "unknown \(key) \"\(text)\"\(Suggestion.didYouMean(text, in: names)) (one of: \(names.joined(separator: ", ")))"
        )
        placeholders.insert(path)
        return nil
    }
}

/// `parent.key`, or `key` at the root.
func join(_ path: String, _ key: String) -> String {
    path.isEmpty ? key : "\(path).\(key)"
}
