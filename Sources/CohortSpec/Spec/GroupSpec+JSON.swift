// The spec's JSON form: what `SpecParser` reads, written back. Defaults are left out, so the
// text is what a person would write; parsing it gives back an equal `GroupSpec`.

extension GroupSpec {
    /// This spec in the spec format, as a JSON value (defaults omitted).
    public var specJSON: JSONValue {
        var object: [String: JSONValue] = ["name": .string(name)]
        if mode != .parallel { object["mode"] = .string(mode.rawValue) }
        if let timeout { object["timeout"] = .string(timeout.specString) }
        if onChildFailure != .cancelDependents { object["onChildFailure"] = .string(onChildFailure.rawValue) }
        if !exclusive.isEmpty { object["exclusive"] = .strings(exclusive) }
        if !requires.isEmpty { object["requires"] = .strings(requires) }
        if !limits.isEmpty { object["limits"] = .object(limits.mapValues { .int(Int64($0)) }) }
        if priority != 0 { object["priority"] = .int(Int64(priority)) }
        object["children"] = .array(children.map(\.specJSON))
        return .object(object)
    }

    /// This spec as JSON text in the spec format (keys sorted), which `SpecParser` reads back
    /// to an equal value.
    public func specText(pretty: Bool = true) -> String {
        specJSON.jsonString(pretty: pretty)
    }

    /// Checks a spec built in code by the rules `SpecParser` applies to text.
    /// - Throws: `SpecErrors` with every problem, named by spec paths (`children[1].after[0]`).
    public func validate(limits: SpecLimits = .default) throws(SpecErrors) {
        var validator = SpecValidator(limits: limits)
        validator.validate(self)
        if !validator.errors.isEmpty { throw SpecErrors(validator.errors) }
    }
}

extension ChildSpec {
    /// This child in the spec format, as a JSON value (defaults omitted).
    public var specJSON: JSONValue {
        var object: [String: JSONValue] = ["name": .string(name)]
        switch body {
        case .procedure(let procedure):
            object["run"] = .string(procedure.run)
            if procedure.with != .emptyObject { object["with"] = procedure.with }
        case .group(let group):
            var nested: [String: JSONValue] = ["children": .array(group.children.map(\.specJSON))]
            if group.mode != .parallel { nested["mode"] = .string(group.mode.rawValue) }
            if group.onChildFailure != .cancelDependents {
                nested["onChildFailure"] = .string(group.onChildFailure.rawValue)
            }
            object["group"] = .object(nested)
        }
        if !after.isEmpty { object["after"] = .strings(after) }
        if !exclusive.isEmpty { object["exclusive"] = .strings(exclusive) }
        if !requires.isEmpty { object["requires"] = .strings(requires) }
        if let timeout { object["timeout"] = .string(timeout.specString) }
        if let retry { object["retry"] = retry.specJSON }
        if onWorkerLoss != .retry { object["onWorkerLoss"] = .string(onWorkerLoss.rawValue) }
        if !inject.isEmpty {
            object["inject"] = .array(
                inject.map { injection in
                    var entry: [String: JSONValue] = ["from": .string(injection.from)]
                    if !injection.select.isRoot { entry["select"] = .string(injection.select.description) }
                    if !injection.into.isRoot { entry["into"] = .string(injection.into.description) }
                    return .object(entry)
                })
        }
        if let matrix {
            object["matrix"] = .object(
                Dictionary(uniqueKeysWithValues: matrix.axes.map { ($0.key, JSONValue.array($0.values)) }))
        }
        if let condition { object["if"] = .string(condition.text) }
        if let requirement { object["require"] = .string(requirement.text) }
        if let repeating { object["repeat"] = repeating.specJSON }
        return .object(object)
    }
}

extension RepeatPolicy {
    /// This policy in the spec format (`every` omitted when zero).
    public var specJSON: JSONValue {
        var object: [String: JSONValue] = ["until": .string(until.text), "max": .int(Int64(max))]
        if every != .zero { object["every"] = .string(every.specString) }
        return .object(object)
    }
}

extension RetryPolicy {
    /// This policy in the spec format (defaults omitted).
    public var specJSON: JSONValue {
        var object: [String: JSONValue] = ["attempts": .int(Int64(attempts))]
        if backoff != .zero { object["backoff"] = .string(backoff.specString) }
        if strategy != .fixed { object["strategy"] = .string(strategy.rawValue) }
        if let maxBackoff { object["maxBackoff"] = .string(maxBackoff.specString) }
        if jitter != 0 { object["jitter"] = .double(jitter) }
        return .object(object)
    }
}

extension JSONValue {
    static func strings(_ list: [String]) -> JSONValue {
        .array(list.map(JSONValue.string))
    }
}

// MARK: - Codable

extension GroupSpec: Codable {
    /// Decodes the spec format and validates it with the default limits.
    /// - Throws: `DecodingError.dataCorrupted` whose underlying error is the `SpecErrors`.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        do {
            self = try SpecParser.parse(json: value)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: error.description, underlyingError: error))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        try specJSON.encode(to: encoder)
    }
}

extension ChildSpec: Codable {
    /// Decodes one child of the spec format. Only the child's own fields are checked; names in
    /// `after` and `inject` are checked when the whole group is.
    /// - Throws: `DecodingError.dataCorrupted` whose underlying error is the `SpecErrors`.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        var reader = SpecReader(format: .json)
        let child = reader.readChild(value, path: "")
        if !reader.errors.isEmpty {
            let errors = SpecErrors(reader.errors)
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: errors.description, underlyingError: errors))
        }
        self = child
    }

    public func encode(to encoder: any Encoder) throws {
        try specJSON.encode(to: encoder)
    }
}

extension RetryPolicy: Codable {
    /// Decodes the spec form: `{attempts, backoff: "2s", strategy, maxBackoff, jitter}` or a number.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        var reader = SpecReader(format: .json)
        let policy = reader.retry(value, path: "")
        guard let policy, reader.errors.isEmpty else {
            let errors = SpecErrors(reader.errors)
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: errors.description, underlyingError: errors))
        }
        self = policy
    }

    public func encode(to encoder: any Encoder) throws {
        try specJSON.encode(to: encoder)
    }
}
