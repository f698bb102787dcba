import Foundation
import Yams

/// Reads group specs from YAML or JSON text and validates them whole.
///
/// Pure: it reads no files; the caller (the CLI) reads the text and names its source.
public enum SpecParser {
    /// Parses and validates a spec.
    ///
    /// - Parameters:
    ///   - text: the spec, YAML or JSON.
    ///   - format: the text's format; JSON is read as YAML, the format only changes the words
    ///     used in messages.
    ///   - sourceName: where the text came from (a file name); the group's `name` defaults to
    ///     its base name without extension (`examples/release.yaml` → `release`).
    ///   - limits: size limits; errors name the limit exceeded.
    /// - Throws: `SpecErrors` with every error found, each named by its path (a syntax error by
    ///   its line and column), in document order.
    public static func parse(
        text: String, format: SpecFormat = .yaml, sourceName: String? = nil, limits: SpecLimits = .default
    ) throws(SpecErrors) -> GroupSpec {
        try parsedTree(text: text, format: format, sourceName: sourceName, limits: limits).spec
    }

    /// Parses and validates a spec, as ``parse(text:format:sourceName:limits:)``, and flattens
    /// it for scheduling with the tree validation built (one tree for both; a spec with a
    /// matrix or map is flattened from its expansion, a tree of its own).
    public static func parseFlattened(
        text: String, format: SpecFormat = .yaml, sourceName: String? = nil, limits: SpecLimits = .default
    ) throws(SpecErrors) -> (spec: GroupSpec, flat: FlatSpec) {
        let (spec, tree) = try parsedTree(text: text, format: format, sourceName: sourceName, limits: limits)
        return (spec, spec.flattened(validatedTree: tree))
    }

    /// ``parseStrictJSON(text:sourceName:limits:)`` and the spec flattened with the tree
    /// validation built, as ``parseFlattened(text:format:sourceName:limits:)``.
    public static func parseStrictJSONFlattened(
        text: String, sourceName: String? = nil, limits: SpecLimits = .default
    ) throws(SpecErrors) -> (spec: GroupSpec, flat: FlatSpec)? {
        guard let (spec, tree) = try strictJSONTree(text: text, sourceName: sourceName, limits: limits) else {
            return nil
        }
        return (spec, spec.flattened(validatedTree: tree))
    }

    private static func parsedTree(
        text: String, format: SpecFormat, sourceName: String?, limits: SpecLimits
    ) throws(SpecErrors) -> (spec: GroupSpec, tree: SpecTree) {
        if format == .json, let value = plainJSON(text, limits: limits) {
            // Faults are rare: only then is the text read again as YAML, for positions.
            return try build(value, format: format, sourceName: sourceName, limits: limits) {
                guard let (_, node) = try? document(text: text, format: format, limits: limits) else { return [:] }
                var converter = YAMLConverter(
                    maxNodes: limits.maxNodes, maxDepth: limits.maxDocumentDepth, recordsMarks: true)
                _ = converter.convert(node)
                return converter.marks
            }
        }
        let value: JSONValue
        let node: Node
        do {
            (value, node) = try document(text: text, format: format, limits: limits)
        } catch {
            throw SpecErrors(error.errors, sourceName: sourceName)
        }
        // Positions are only needed to name the line of a fault: found again only then.
        return try build(value, format: format, sourceName: sourceName, limits: limits) {
            var converter = YAMLConverter(
                maxNodes: limits.maxNodes, maxDepth: limits.maxDocumentDepth, recordsMarks: true)
            _ = converter.convert(node)
            return converter.marks
        }
    }

    /// Parses and validates a spec that is strict JSON, with the JSON reader alone; nil when
    /// the text is not strict JSON (or repeats a member name, or is over a size limit), which
    /// only the YAML path can read or explain. Its cost is bounded by the text's size (JSON
    /// has no aliases), so a server can run it where it must not stall, and send the rest to
    /// `parse(text:…)` elsewhere.
    /// - Throws: `SpecErrors`, as `parse(text:…)`.
    public static func parseStrictJSON(
        text: String, sourceName: String? = nil, limits: SpecLimits = .default
    ) throws(SpecErrors) -> GroupSpec? {
        try strictJSONTree(text: text, sourceName: sourceName, limits: limits)?.spec
    }

    private static func strictJSONTree(
        text: String, sourceName: String?, limits: SpecLimits
    ) throws(SpecErrors) -> (spec: GroupSpec, tree: SpecTree)? {
        guard let value = plainJSON(text, limits: limits) else { return nil }
        return try build(value, format: .json, sourceName: sourceName, limits: limits) {
            // Positions for the errors' lines: the YAML reader of strict JSON, as bounded.
            guard let (_, node) = try? document(text: text, format: .json, limits: limits) else { return [:] }
            var converter = YAMLConverter(
                maxNodes: limits.maxNodes, maxDepth: limits.maxDocumentDepth, recordsMarks: true)
            _ = converter.convert(node)
            return converter.marks
        }
    }

    /// Validates a spec already in its JSON form (from the wire or a journal) and builds it.
    /// - Throws: `SpecErrors`, as `parse(text:…)`, without line numbers.
    public static func parse(
        json value: JSONValue, sourceName: String? = nil, limits: SpecLimits = .default
    ) throws(SpecErrors) -> GroupSpec {
        try build(value, format: .json, sourceName: sourceName, limits: limits) { [:] }.spec
    }

    // MARK: - Steps

    private static func tooLarge(bytes: Int, limits: SpecLimits) -> SpecError {
        SpecError(
            .limitExceeded, path: "",
            "the spec is \(bytes) bytes; the limit is \(limits.maxSpecBytes) bytes (limit maxSpecBytes)")
    }

    /// The value of a JSON document read with the JSON reader, several times faster than YAML,
    /// or nil when only the YAML path can say what it is or what is wrong with it: not strict
    /// JSON (YAML accepts more), a member name repeated in an object, or over a size limit.
    /// On documents it accepts, both paths give the same value.
    private static func plainJSON(_ text: String, limits: SpecLimits) -> JSONValue? {
        var text = text
        guard text.utf8.count <= limits.maxSpecBytes else { return nil }
        return text.withUTF8 { bytes -> JSONValue? in
            var reader = JSONReader(bytes)
            guard let value = try? reader.readDocument(), reader.repeatedKeys == 0,
                reader.valueCount <= limits.maxNodes,
                reader.deepest <= limits.maxDocumentDepth
            else { return nil }
            return value
        }
    }

    /// Text → JSON value, and the YAML tree it came from (to find positions for errors).
    private static func document(text: String, format: SpecFormat, limits: SpecLimits) throws(SpecErrors)
        -> (JSONValue, Node)
    {
        let bytes = text.utf8.count
        if bytes > limits.maxSpecBytes { throw SpecErrors([tooLarge(bytes: bytes, limits: limits)]) }
        let estimate = DocumentDepthGuard.estimate(text)
        if estimate.depth > 2 * limits.maxDocumentDepth {
            throw SpecErrors([
                SpecError(
                    .limitExceeded, path: "",
                    "line \(estimate.line): the document nests too deeply (more than \(limits.maxDocumentDepth) levels) (limit maxDocumentDepth)",
                    line: estimate.line, column: 1)
            ])
        }
        let node: Node?
        do {
            // `.utf8` explicitly: the default encoding consults (and prints) an environment variable.
            // The basic resolver (no rules): Yams' default rules are regular expressions run on
            // every scalar; `JSONValue(yamlScalar:)` applies the same rules, only where they can
            // match. (Mapping keys are then compared as strings: `1` and `"1"` are one key.)
            node = try Parser(yaml: text, resolver: .basic, constructor: .default, encoding: .utf8).singleRoot()
        } catch let error as YamlError {
            throw SpecErrors([syntaxError(error, format: format)])
        } catch {
            throw SpecErrors([SpecError(.syntax, path: "", "\(format.rawValue) syntax error: \(error)")])
        }
        guard let node else {
            throw SpecErrors([SpecError(.syntax, path: "", "the spec is empty")])
        }
        // An alias bomb is refused by counting, before anything is built.
        if let error = YAMLExpansion.limitError(node, maxNodes: limits.maxNodes) {
            throw SpecErrors([
                SpecError(
                    .limitExceeded, path: "",
                    error.message, line: error.line, column: error.column)
            ])
        }
        var converter = YAMLConverter(maxNodes: limits.maxNodes, maxDepth: limits.maxDocumentDepth, recordsMarks: false)
        var value = converter.convert(node)
        if !converter.errors.isEmpty {
            // Again with paths, to name where each fault is.
            converter = YAMLConverter(maxNodes: limits.maxNodes, maxDepth: limits.maxDocumentDepth, recordsMarks: true)
            value = converter.convert(node)
        }
        if !converter.errors.isEmpty {
            throw SpecErrors(
                converter.errors.map { error in
                    let code: SpecError.Code = error.message.contains("(limit ") ? .limitExceeded : .syntax
                    return SpecError(code, path: error.path, error.message, line: error.line, column: error.column)
                })
        }
        return (value, node)
    }

    private static func syntaxError(_ error: YamlError, format: SpecFormat) -> SpecError {
        let kind = "\(format.rawValue) syntax error"
        func positioned(_ problem: String, _ mark: Mark, _ context: YamlError.Context?) -> SpecError {
            positionedAt(problem, line: mark.line, column: mark.column, context)
        }
        func positionedAt(_ problem: String, line: Int, column: Int, _ context: YamlError.Context?) -> SpecError {
            var message = "\(kind) at line \(line), column \(column): \(problem)"
            if let context {
                message += " (\(context.text) at line \(context.mark.line), column \(context.mark.column))"
            }
            return SpecError(.syntax, path: "", message, line: line, column: column)
        }
        switch error {
        case .scanner(let context, let problem, let mark, _),
            .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            return positioned(problem, mark, context)
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.map { "\"\($0)\"" }.joined(separator: ", ")
            return positioned("duplicate key \(keys) in one mapping", context.mark, nil)
        case .reader(let problem, let offset, _, let yaml):
            if let offset {
                let prefix = yaml.prefix(offset)
                let line = prefix.count(where: { $0 == "\n" }) + 1
                let lineStart = prefix.lastIndex(of: "\n").map(prefix.index(after:)) ?? prefix.startIndex
                let column = prefix.distance(from: lineStart, to: prefix.endIndex) + 1
                return positionedAt(problem, line: line, column: column, nil)
            }
            return SpecError(.syntax, path: "", "\(kind): \(problem)")
        default:
            return SpecError(.syntax, path: "", "\(kind): \(error)")
        }
    }

    /// JSON value → model, then validation; errors positioned by `marks()` and sorted.
    private static func build(
        _ value: JSONValue, format: SpecFormat, sourceName: String?, limits: SpecLimits, suggests: Bool = true,
        marks: () -> [String: Mark]
    ) throws(SpecErrors) -> (spec: GroupSpec, tree: SpecTree) {
        let defaultName = sourceName.map { SpecFormat.splitName($0).base }.flatMap { $0.isEmpty ? nil : $0 }
        var reader = SpecReader(format: format)
        let spec = reader.readGroup(value, defaultName: defaultName)
        var validator = SpecValidator(limits: limits, suggests: suggests)
        validator.validate(spec)
        let placeholders = reader.placeholders
        let semantic = validator.errors.filter { !isUnder($0.path, anyOf: placeholders) }
        var errors = reader.errors + semantic
        guard !errors.isEmpty else { return (spec, validator.tree ?? SpecTree(spec)) }
        let marks = marks()
        if !marks.isEmpty {
            for index in errors.indices {
                if let mark = mark(for: errors[index].path, in: marks) {
                    errors[index].line = mark.line
                    errors[index].column = mark.column
                }
            }
            // Stable: errors without a position keep their place after those with one.
            errors = errors.enumerated().sorted { a, b in
                let left = (a.element.line ?? .max, a.element.column ?? .max, a.offset)
                let right = (b.element.line ?? .max, b.element.column ?? .max, b.offset)
                return left < right
            }.map(\.element)
        }
        throw SpecErrors(errors, sourceName: sourceName)
    }

    /// Whether `path` is one of `prefixes` or inside one (`a.b[0]` is inside `a.b`).
    static func isUnder(_ path: String, anyOf prefixes: Set<String>) -> Bool {
        if prefixes.contains(path) { return true }
        var index = path.endIndex
        while index > path.startIndex {
            index = path.index(before: index)
            let character = path[index]
            if character == "." || character == "[" {
                if prefixes.contains(String(path[..<index])) { return true }
            }
        }
        return prefixes.contains("")
    }

    /// The position of the value at `path`, or of its nearest enclosing value that has one.
    private static func mark(for path: String, in marks: [String: Mark]) -> Mark? {
        var candidate = Substring(path)
        while true {
            if let mark = marks[String(candidate)] { return mark }
            guard let cut = candidate.lastIndex(where: { $0 == "." || $0 == "[" }) else {
                return marks[""]
            }
            candidate = candidate[..<cut]
        }
    }
}

// MARK: - Children added to a running group

extension SpecParser {
    /// Parses the children of a growing group's addition (`cohort add GROUP FILE`): a list of
    /// children written like a spec's `children`, or a mapping with `children:` (and nothing
    /// else). Each child is checked as in a spec; references to siblings that already exist
    /// are checked later, against the grown spec (``GroupSpec/adding(_:into:)``).
    /// - Throws: `SpecErrors` naming each problem by its path (`children[1].run`).
    public static func parseChildren(text: String, format: SpecFormat = .yaml, limits: SpecLimits = .default)
        throws(SpecErrors) -> [ChildSpec]
    {
        let value: JSONValue
        if format == .json, let plain = plainJSON(text, limits: limits) {
            // Strict JSON (what the client sends) is read by the JSON reader alone, as in `parse`.
            value = plain
        } else {
            do {
                (value, _) = try document(text: text, format: format, limits: limits)
            } catch {
                throw SpecErrors(error.errors)
            }
        }
        let children: JSONValue
        switch value {
        case .array:
            children = value
        case .object(let members) where members.keys.allSatisfy({ $0 == "children" }) && members["children"] != nil:
            children = members["children"] ?? .array([])
        default:
            throw SpecErrors([
                SpecError(
                    .wrongType, path: "",
                    "expected a list of children (written like a spec's `children`) or a mapping with only `children:`, got \(value.typeName.withArticle)"
                )
            ])
        }
        guard case .array(let list) = children, !list.isEmpty else {
            throw SpecErrors([SpecError(.invalidValue, path: "children", "there are no children to add")])
        }
        // Parsed as the children of a group of their own: each is checked as in a spec, but
        // an `after` naming a sibling that exists only in the running group is not an error
        // yet (the grown spec is validated whole).
        let spec = try parseLenient(.object(["name": "added", "children": children]), limits: limits)
        return spec.children
    }

    /// Builds a spec from its JSON form, ignoring references to names it does not have (they
    /// may name children of the running group the document's children are added to).
    private static func parseLenient(_ value: JSONValue, limits: SpecLimits) throws(SpecErrors) -> GroupSpec {
        do {
            // No "did you mean" for names the running group may have: these errors are dropped.
            return try build(value, format: .json, sourceName: nil, limits: limits, suggests: false) { [:] }.spec
        } catch {
            let kept = error.errors.filter { $0.code != .unknownReference }
            if !kept.isEmpty { throw SpecErrors(kept) }
            // Only references were wrong: build it without its checks.
            var reader = SpecReader(format: .json)
            return reader.readGroup(value, defaultName: "added")
        }
    }
}

extension GroupSpec {
    /// This spec with `children` appended to the children of the nested group at `path` (`""`:
    /// the top level), validated whole as a submission is (names unique among siblings, `after`
    /// and `inject` naming existing children, the size limits).
    /// - Throws: `SpecErrors`: an unknown `path`, a path that names a procedure, or what the
    ///   grown spec's validation finds.
    public func adding(_ children: [ChildSpec], into path: String, limits: SpecLimits = .default)
        throws(SpecErrors) -> GroupSpec
    {
        var grown = self
        if path.isEmpty {
            grown.children += children
        } else {
            let names = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard Self.append(children, at: names[...], in: &grown.children) else {
                throw SpecErrors([
                    SpecError(.unknownReference, path: "into", "the group has no nested group \"\(path)\"")
                ])
            }
        }
        try grown.validate(limits: limits)
        return grown
    }

    /// This spec with every map as written, before the coordinator made its procedures.
    public func withoutMapExpansions() -> GroupSpec {
        func strip(_ children: [ChildSpec]) -> [ChildSpec] {
            children.map { child in
                var child = child
                child.mapped = nil
                if case .group(var group) = child.body {
                    group.children = strip(group.children)
                    child.body = .group(group)
                }
                return child
            }
        }
        var spec = self
        spec.children = strip(children)
        return spec
    }

    /// The children of the nested group at `path` (`""`: the top level); nil if there is none.
    public func children(at path: String) -> [ChildSpec]? {
        guard !path.isEmpty else { return children }
        var level = children
        for name in path.split(separator: "/", omittingEmptySubsequences: false) {
            guard let child = level.first(where: { $0.name == name }), case .group(let group) = child.body else {
                return nil
            }
            level = group.children
        }
        return level
    }

    private static func append(_ added: [ChildSpec], at names: ArraySlice<String>, in children: inout [ChildSpec])
        -> Bool
    {
        guard let name = names.first, let index = children.firstIndex(where: { $0.name == name }) else { return false }
        // A map child's procedures, made by the coordinator (Scheduler+Map.swift).
        if names.count == 1, children[index].map != nil {
            children[index].mapped = (children[index].mapped ?? []) + added
            return true
        }
        guard case .group(var group) = children[index].body else { return false }
        if names.count == 1 {
            group.children += added
        } else if !append(added, at: names.dropFirst(), in: &group.children) {
            return false
        }
        children[index].body = .group(group)
        return true
    }
}
