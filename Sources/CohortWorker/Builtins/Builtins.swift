import CohortSpec
import Foundation

/// The built-in kinds (docs/spec.md): `shell`, `sleep`, `echo`, `fail`.
enum Builtins {
    static let kinds: [String: ProcedureKind] = [
        "echo": ProcedureKind(.immediate(echo)),
        "fail": ProcedureKind(.immediate(fail)),
        "sleep": ProcedureKind(.task(sleep)),
        "shell": ProcedureKind(.task(ShellKind.run)),
    ]

    /// `echo`: the output is the input, byte for byte (no parsing: the coordinator sends JSON).
    static func echo(_ input: Data, _ context: ProcedureContext) throws -> Data {
        input.isEmpty ? Data("{}".utf8) : input
    }

    /// `fail`: fails with `message` (default `failed`).
    static func fail(_ input: Data, _ context: ProcedureContext) throws -> Data {
        let reader = try BuiltinInput(input, kind: "fail", fields: ["message"])
        throw ProcedureFailure(try reader.string("message") ?? "failed")
    }

    /// `sleep`: waits `seconds`; a cancel ends the wait at once. Output `{"seconds": n}`.
    static func sleep(_ input: Data, _ context: ProcedureContext) async throws -> Data {
        let reader = try BuiltinInput(input, kind: "sleep", fields: ["seconds"])
        guard let seconds = try reader.number("seconds") else {
            throw ProcedureInputError(field: "with.seconds", message: "missing; sleep needs a number of seconds")
        }
        guard seconds.isFinite, seconds >= 0 else {
            throw ProcedureInputError(field: "with.seconds", message: "must be a number of seconds, 0 or more")
        }
        try await Task.sleep(for: .seconds(seconds))
        return JSONValue.object(["seconds": .double(seconds)]).jsonData()
    }
}

/// Reads a built-in kind's input: an object with known fields, each checked for its type.
struct BuiltinInput {
    let members: [String: JSONValue]

    /// - Throws: ``ProcedureInputError`` if the input is not an object, or has a field `kind` does not know.
    init(_ input: Data, kind: String, fields: Set<String>) throws(ProcedureInputError) {
        let value = input.isEmpty ? JSONValue.emptyObject : try ProcedureKind.parse(input)
        guard case .object(let members) = value else {
            throw ProcedureInputError(
                field: "with",
                message:
                    "the input of \(kind) is an object (\(fields.sorted().joined(separator: ", "))), not \(value.typeName)"
            )
        }
        // `matrix` and `map` are the coordinator's: a matrix child's combination, a map
        // child's index and item (docs/spec.md).
        for key in members.keys.sorted() where !fields.contains(key) && key != "matrix" && key != "map" {
            throw ProcedureInputError(
                field: "with.\(key)",
                message: "\(kind) has no input \"\(key)\" (inputs: \(fields.sorted().joined(separator: ", ")))")
        }
        self.members = members
    }

    /// A matrix child's combination, `COHORT_MATRIX_OS=linux` for `matrix: { os: linux }`:
    /// strings as they are, numbers and booleans as JSON writes them. Empty for other children.
    var matrixVariables: [String: String] {
        guard case .object(let values)? = members["matrix"] else { return [:] }
        var variables: [String: String] = [:]
        for (key, value) in values { variables[Matrix.environmentVariable(for: key)] = Matrix.text(of: value) }
        return variables
    }

    /// A map child's index and item, `COHORT_MAP_INDEX=3` and `COHORT_MAP_ITEM=report.pdf`: a
    /// string item as it is, anything else as JSON writes it. Empty for other children.
    var mapVariables: [String: String] {
        guard case .object(let values)? = members["map"] else { return [:] }
        var variables: [String: String] = [:]
        if let index = values["index"] { variables[MapSpec.indexVariable] = Matrix.text(of: index) }
        if let item = values["item"] { variables[MapSpec.itemVariable] = Matrix.text(of: item) }
        return variables
    }

    /// The string at `key`; nil if absent or null.
    func string(_ key: String) throws(ProcedureInputError) -> String? {
        guard let value = present(key) else { return nil }
        guard let string = value.stringValue else { throw mismatch(key, "a string", value) }
        return string
    }

    /// The number at `key`; nil if absent or null.
    func number(_ key: String) throws(ProcedureInputError) -> Double? {
        guard let value = present(key) else { return nil }
        guard let number = value.doubleValue else { throw mismatch(key, "a number", value) }
        return number
    }

    /// The list of strings at `key`; nil if absent or null.
    func strings(_ key: String) throws(ProcedureInputError) -> [String]? {
        guard let value = present(key) else { return nil }
        guard case .array(let elements) = value else { throw mismatch(key, "a list of strings", value) }
        var strings: [String] = []
        for (index, element) in elements.enumerated() {
            guard let string = element.stringValue else { throw mismatch("\(key)[\(index)]", "a string", element) }
            strings.append(string)
        }
        return strings
    }

    /// The object of strings at `key`; nil if absent or null.
    func stringMap(_ key: String) throws(ProcedureInputError) -> [String: String]? {
        guard let value = present(key) else { return nil }
        guard case .object(let members) = value else { throw mismatch(key, "an object of strings", value) }
        var map: [String: String] = [:]
        for name in members.keys.sorted() {
            guard let string = members[name]!.stringValue else {
                throw mismatch("\(key).\(name)", "a string", members[name]!)
            }
            map[name] = string
        }
        return map
    }

    private func present(_ key: String) -> JSONValue? {
        guard let value = members[key], !value.isNull else { return nil }
        return value
    }

    private func mismatch(_ path: String, _ expected: String, _ value: JSONValue) -> ProcedureInputError {
        ProcedureInputError(field: "with.\(path)", message: "expected \(expected), got \(value.typeName)")
    }
}
