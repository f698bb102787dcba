import Yams

/// Why a YAML node could not become a `JSONValue`.
public struct YAMLConversionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where in the document, in spec path notation (`children[0].with`); empty for the root.
    public var path: String
    public var message: String
    /// 1-based position in the YAML text, when known.
    public var line: Int?
    public var column: Int?

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

extension JSONValue {
    /// Converts a composed YAML document (YAML 1.1 core types, as Yams resolves them).
    ///
    /// Quoted scalars are strings; plain scalars become null, booleans (`true`, `yes`, `on`…),
    /// integers (exact in `Int64`, else double), floats, or strings. Timestamps and binary stay
    /// the text that was written. Aliases are expanded and `<<` merge keys applied (explicit keys
    /// win). Mapping keys must be scalars.
    /// - Throws: `YAMLConversionError` for a non-scalar key or a document that expands past
    ///   `maxNodes` values (an alias bomb).
    public init(yamlNode node: Node, maxNodes: Int = 1_000_000) throws(YAMLConversionError) {
        if let error = YAMLExpansion.limitError(node, maxNodes: maxNodes) { throw error }
        var converter = YAMLConverter(maxNodes: maxNodes, maxDepth: .max, recordsMarks: false)
        let value = converter.convert(node)
        if let error = converter.errors.first { throw error }
        self = value
    }
}

/// How many values a composed YAML document expands to, counted without building anything.
///
/// Yams composes an alias as a copy of its anchor's node, which shares the anchor's storage,
/// so a 400-byte document of nested aliases (a "billion laughs") composes at once into a tree
/// of a billion values; only walking it costs. The count walks it and stops as soon as it
/// passes the limit: at most `maxNodes` steps and no allocation, where converting it built up
/// to `maxNodes` values twice (once more to name paths) before the limit refused it.
enum YAMLExpansion {
    /// The first node past `maxNodes` values, in document order, or nil if the whole document
    /// is within the limit.
    static func firstBeyond(_ root: Node, maxNodes: Int) -> Node? {
        var count = 0
        var stack: [Node] = [root]
        while let node = stack.popLast() {
            count += 1
            if count > maxNodes { return node }
            switch node {
            case .scalar, .alias:
                continue
            case .sequence(let sequence):
                for element in sequence.reversed() { stack.append(element) }
            case .mapping(let mapping):
                for (key, value) in mapping.reversed() {
                    stack.append(value)
                    stack.append(key)
                }
            }
            // Pending siblings are bounded by the document's size, not its expansion.
        }
        return nil
    }

    /// The error for a document past `maxNodes` values, naming where the limit was crossed;
    /// nil within the limit.
    static func limitError(_ root: Node, maxNodes: Int) -> YAMLConversionError? {
        guard let beyond = firstBeyond(root, maxNodes: maxNodes) else { return nil }
        return YAMLConversionError(
            path: "", message: "the document expands to more than \(maxNodes) values (aliases?) (limit maxNodes)",
            line: beyond.mark?.line, column: beyond.mark?.column)
    }
}

/// Turns a Yams node tree into a `JSONValue`, collecting errors and, on request, the position of
/// every value by its spec path, so later errors can name a line.
///
/// Paths are only built when `recordsMarks` is set: a spec without faults never needs them, and
/// building one string per value is most of the conversion's cost. A converter without marks
/// that finds a fault is simply run again with them (``SpecParser`` does so) to name its path.
struct YAMLConverter {
    let maxNodes: Int
    let maxDepth: Int
    let recordsMarks: Bool
    private(set) var errors: [YAMLConversionError] = []
    private(set) var marks: [String: Mark] = [:]
    private var nodeCount = 0
    private var stopped = false

    init(maxNodes: Int, maxDepth: Int, recordsMarks: Bool) {
        self.maxNodes = maxNodes
        self.maxDepth = maxDepth
        self.recordsMarks = recordsMarks
    }

    mutating func convert(_ node: Node) -> JSONValue {
        convert(node, path: "", depth: 0)
    }

    private mutating func fail(_ path: String, _ message: String, _ mark: Mark?) {
        errors.append(YAMLConversionError(path: path, message: message, line: mark?.line, column: mark?.column))
    }

    private mutating func convert(_ node: Node, path: String, depth: Int) -> JSONValue {
        if stopped { return .null }
        nodeCount += 1
        if nodeCount > maxNodes {
            stopped = true
            fail(path, "the document expands to more than \(maxNodes) values (aliases?) (limit maxNodes)", node.mark)
            return .null
        }
        if depth > maxDepth {
            stopped = true
            fail(path, "values nest deeper than \(maxDepth) levels (limit maxDocumentDepth)", node.mark)
            return .null
        }
        if recordsMarks, let mark = node.mark, marks[path] == nil { marks[path] = mark }

        switch node {
        case .scalar(let scalar):
            return JSONValue(yamlScalar: scalar)
        case .alias:
            // Yams resolves aliases while composing; an alias node only appears in hand-built trees.
            return .null
        case .sequence(let sequence):
            var elements: [JSONValue] = []
            elements.reserveCapacity(sequence.count)
            for (index, element) in sequence.enumerated() {
                elements.append(convert(element, path: recordsMarks ? "\(path)[\(index)]" : path, depth: depth + 1))
            }
            return .array(elements)
        case .mapping(let mapping):
            return .object(convert(mapping, path: path, depth: depth))
        }
    }

    private mutating func convert(_ mapping: Node.Mapping, path: String, depth: Int) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        members.reserveCapacity(mapping.count)
        var merged: [String: JSONValue] = [:]
        for (keyNode, valueNode) in mapping {
            guard case .scalar(let keyScalar) = keyNode else {
                fail(
                    path, "mapping keys must be plain strings, not a \(keyNode.mapping != nil ? "mapping" : "list")",
                    keyNode.mark)
                continue
            }
            if keyScalar.isMergeKey {
                merge(valueNode, into: &merged, path: path, depth: depth)
                continue
            }
            let key = keyScalar.string
            let childPath = recordsMarks ? (path.isEmpty ? key : "\(path).\(key)") : path
            members[key] = convert(valueNode, path: childPath, depth: depth + 1)
        }
        // Explicit keys win over merged ones, as YAML's merge key specifies.
        return merged.isEmpty ? members : merged.merging(members) { _, explicit in explicit }
    }

    private mutating func merge(_ source: Node, into merged: inout [String: JSONValue], path: String, depth: Int) {
        switch source {
        case .mapping(let mapping):
            // Earlier merge sources win over later ones.
            merged.merge(convert(mapping, path: path, depth: depth)) { earlier, _ in earlier }
        case .sequence(let sequence):
            for element in sequence { merge(element, into: &merged, path: path, depth: depth) }
        default:
            fail(path, "a merge key (<<) takes a mapping or a list of mappings", source.mark)
        }
    }
}

// MARK: - Scalars

extension Node.Scalar {
    /// A `<<` key: tagged as a merge, or written plain (the parser may run without resolver
    /// rules, which leaves a plain `<<` tagged as a string).
    var isMergeKey: Bool {
        tag.rawValue == Tag.Name.merge.rawValue || (string == "<<" && (style == .plain || style == .any))
    }
}

extension JSONValue {
    /// The value of one scalar with Yams' default rules (YAML 1.1 core types), whether or not
    /// the parser resolved its tag.
    ///
    /// A plain scalar without an explicit tag is resolved here: a quick look at its first
    /// character rules out every typed form for most scalars (names, kinds, commands), and only
    /// the rest go through Yams' default resolver, whose rules are regular expressions and cost
    /// microseconds per scalar. So `SpecParser` can run Yams with the basic resolver, which
    /// resolves nothing, and get the same values.
    init(yamlScalar scalar: Node.Scalar) {
        var tagName = scalar.tag.rawValue
        if tagName == Tag.Name.implicit.rawValue {
            guard YAMLScalarTyping.mayBeTyped(scalar.string) else {
                self = .string(scalar.string)
                return
            }
            tagName = Resolver.default.resolveTag(of: .scalar(scalar)).rawValue
        }
        let typed = Node.scalar(Node.Scalar(scalar.string, Tag(Tag.Name(rawValue: tagName)), scalar.style))
        switch tagName {
        case Tag.Name.null.rawValue:
            self = .null
        case Tag.Name.bool.rawValue:
            self = typed.bool.map(JSONValue.bool) ?? .string(scalar.string)
        case Tag.Name.int.rawValue:
            if let value = typed.int {
                self = .int(Int64(value))
            } else if let value = typed.float {
                self = .double(value)
            } else {
                self = .string(scalar.string)
            }
        case Tag.Name.float.rawValue:
            self = typed.float.map(JSONValue.double) ?? .string(scalar.string)
        default:
            self = .string(scalar.string)
        }
    }
}

/// Which plain scalars Yams' default rules could give a type other than string.
enum YAMLScalarTyping {
    /// False when no default rule can match `text`, so it is a string; true when one might.
    ///
    /// The rules (Resolver.Rule.bool, .int, .float, .merge, .null, .timestamp, .value) each
    /// match only texts that start with one of a few characters: booleans (`yes`, `No`, `TRUE`,
    /// `off`… at most 5 characters) with y, n, t, f or o; null with n or `~` (at most 4) or the
    /// empty text; numbers and timestamps with a digit, a sign or a dot; merge `<<`; value `=`.
    static func mayBeTyped(_ text: String) -> Bool {
        var bytes = text.utf8.makeIterator()
        guard let first = bytes.next() else { return true }
        switch first {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
            UInt8(ascii: "<"), UInt8(ascii: "="):
            return true
        case UInt8(ascii: "y"), UInt8(ascii: "Y"), UInt8(ascii: "n"), UInt8(ascii: "N"), UInt8(ascii: "t"),
            UInt8(ascii: "T"), UInt8(ascii: "f"), UInt8(ascii: "F"), UInt8(ascii: "o"), UInt8(ascii: "O"),
            UInt8(ascii: "~"):
            return text.utf8.count <= 5
        default:
            return false
        }
    }
}
