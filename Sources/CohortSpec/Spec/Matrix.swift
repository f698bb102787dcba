/// A procedure child's `matrix`: named lists of values, expanded at submission into one
/// procedure per combination (docs/spec.md, "Fan-out: matrix").
///
/// `matrix: { os: [linux, mac], shard: [1, 2, 3] }` on a child `test` makes a nested group
/// `test` of six procedures, `test[os=linux,shard=1]` … `test[os=mac,shard=3]`: keys in
/// alphabetical order (a YAML or JSON mapping has no order a parser must keep), the first
/// varying slowest, each key's values in the order written. Each gets its combination in its input under `matrix`, and
/// `${{ matrix.KEY }}` in the strings of its `with` replaced by the value.
public struct Matrix: Sendable, Hashable {
    /// One key and its values.
    public struct Axis: Sendable, Hashable {
        /// `os`; letters, digits, `_` and `-`, starting with a letter or `_`.
        public var key: String
        /// Strings, numbers or booleans, at least one.
        public var values: [JSONValue]

        public init(key: String, values: [JSONValue]) {
            self.key = key
            self.values = values
        }
    }

    /// The keys in alphabetical order: the first varies slowest.
    public private(set) var axes: [Axis]

    /// A matrix of these axes, put in alphabetical order of their keys.
    public init(axes: [Axis]) {
        self.axes = axes.sorted { $0.key < $1.key }
    }

    /// `Matrix(["os": ["linux", "mac"], "shard": [1, 2, 3]])`.
    public init(_ axes: [String: [JSONValue]]) {
        self.init(axes: axes.map { Axis(key: $0.key, values: $0.value) })
    }

    /// How many combinations (children) it makes; saturates instead of overflowing.
    public var count: Int {
        axes.reduce(1) { product, axis in
            let (result, overflow) = product.multipliedReportingOverflow(by: axis.values.count)
            return overflow ? Int.max : result
        }
    }

    /// Every combination, in order: each a list of (key, value) in the axes' order.
    public var combinations: [[(key: String, value: JSONValue)]] {
        var result: [[(key: String, value: JSONValue)]] = [[]]
        for axis in axes {
            result = result.flatMap { prefix in axis.values.map { prefix + [(axis.key, $0)] } }
        }
        return axes.isEmpty ? [] : result
    }

    /// The name of the child for one combination: `test[os=linux,shard=1]`.
    public static func childName(_ base: String, _ combination: [(key: String, value: JSONValue)]) -> String {
        base + "[" + combination.map { "\($0.key)=\(text(of: $0.value))" }.joined(separator: ",") + "]"
    }

    /// How a value reads in a name, an environment variable or a substituted string: a string
    /// as is, a number or boolean as JSON writes it.
    public static func text(of value: JSONValue) -> String {
        if let string = value.stringValue { return string }
        return value.jsonString()
    }

    /// The environment variable that carries a key's value to a `shell` procedure:
    /// `COHORT_MATRIX_` and the key upper-cased, each character other than A-Z and 0-9 as `_`.
    public static func environmentVariable(for key: String) -> String {
        "COHORT_MATRIX_"
            + String(
                key.uppercased().unicodeScalars.map { scalar -> Character in
                    let isAlphanumeric = (65...90).contains(scalar.value) || (48...57).contains(scalar.value)
                    return isAlphanumeric ? Character(scalar) : "_"
                })
    }

    /// Why `key` cannot be a matrix key, or `nil`.
    static func problem(withKey key: String) -> String? {
        guard let first = key.unicodeScalars.first else { return "a matrix key cannot be empty" }
        func isLetter(_ scalar: Unicode.Scalar) -> Bool {
            (65...90).contains(scalar.value) || (97...122).contains(scalar.value) || scalar == "_"
        }
        guard isLetter(first),
            key.unicodeScalars.allSatisfy({ isLetter($0) || (48...57).contains($0.value) || $0 == "-" })
        else {
            return "a matrix key is letters, digits, \"_\" and \"-\", starting with a letter or \"_\" (\"\(key)\")"
        }
        return nil
    }
}

// MARK: Substitution

extension Matrix {
    /// `value` with every `${{ matrix.KEY }}` in its strings (keys and values of objects alike
    /// are left as keys; values are searched) replaced by the combination's value. A string that
    /// is nothing but one reference becomes the value itself, type and all (`seconds:
    /// "${{ matrix.delay }}"` gives a number); inside a longer string the value's text is used.
    ///
    /// - Throws: ``UnknownKey`` for a reference to a key the matrix does not have.
    static func substitute(
        _ value: JSONValue, _ combination: [(key: String, value: JSONValue)]
    ) throws(UnknownKey) -> JSONValue {
        switch value {
        case .string(let string):
            return try substitute(string, combination)
        case .array(let elements):
            var result: [JSONValue] = []
            result.reserveCapacity(elements.count)
            for element in elements { result.append(try substitute(element, combination)) }
            return .array(result)
        case .object(let members):
            var result = members
            for (key, member) in members { result[key] = try substitute(member, combination) }
            return .object(result)
        default:
            return value
        }
    }

    /// A reference to a key the matrix does not have.
    struct UnknownKey: Error {
        var key: String
    }

    private static func substitute(
        _ string: String, _ combination: [(key: String, value: JSONValue)]
    ) throws(UnknownKey) -> JSONValue {
        guard string.contains("${{") else { return .string(string) }
        var output = ""
        var rest = Substring(string)
        var only: JSONValue?
        var pieces = 0
        while let open = rest.range(of: "${{") {
            guard let close = rest[open.upperBound...].range(of: "}}") else { break }
            let before = rest[..<open.lowerBound]
            let expression = rest[open.upperBound..<close.lowerBound].trimmingSpaces
            guard expression.hasPrefix("matrix.") else {
                // Not ours (a later `${{ … }}` language may use it): left as written.
                output += rest[..<close.upperBound]
                rest = rest[close.upperBound...]
                pieces += 2
                continue
            }
            let key = String(expression.dropFirst("matrix.".count))
            guard let value = combination.first(where: { $0.key == key })?.value else { throw UnknownKey(key: key) }
            if !before.isEmpty { pieces += 1 }
            pieces += 1
            only = value
            output += before
            output += text(of: value)
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { pieces += 1 }
        output += rest
        if pieces == 1, let only { return only }
        return .string(output)
    }

    /// The `${{ matrix.KEY }}` keys referred to in the strings of `value`, in order found.
    static func references(in value: JSONValue) -> [String] {
        switch value {
        case .string(let string):
            var keys: [String] = []
            var rest = Substring(string)
            while let open = rest.range(of: "${{"), let close = rest[open.upperBound...].range(of: "}}") {
                let expression = rest[open.upperBound..<close.lowerBound].trimmingSpaces
                if expression.hasPrefix("matrix.") { keys.append(String(expression.dropFirst("matrix.".count))) }
                rest = rest[close.upperBound...]
            }
            return keys
        case .array(let elements):
            return elements.flatMap(references(in:))
        case .object(let members):
            return members.keys.sorted().flatMap { references(in: members[$0]!) }
        default:
            return []
        }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var result = self
        while result.first == " " { result = result.dropFirst() }
        while result.last == " " { result = result.dropLast() }
        return result
    }
}

// MARK: Expansion

extension GroupSpec {
    /// The spec with every fan-out child replaced by a nested group of the same name:
    /// - a `matrix` child by one procedure per combination (see ``Matrix``). The group takes
    ///   the child's `after`, `if` and `require` (decided once for the whole fan-out); each
    ///   procedure takes the rest (`run`, `exclusive`, `requires`, `timeout`, `retry`,
    ///   `onWorkerLoss`, `inject`, `repeat`) and its own input;
    /// - a `map` child by its procedures made so far (``ChildSpec/mapped``; none before the
    ///   coordinator has read its list), waiting for `map.from` besides the child's `after`.
    ///
    /// Meant for a validated spec; a matrix that refers to a key it lacks keeps the reference
    /// as written.
    public func expandingFanOuts() -> GroupSpec {
        guard hasFanOut else { return self }
        var spec = self
        spec.children = expand(children, policy: onChildFailure)
        return spec
    }

    /// Whether a child at any depth is a matrix or a map.
    var hasFanOut: Bool { containsFanOut(children) }

    private func containsFanOut(_ children: [ChildSpec]) -> Bool {
        children.contains { $0.matrix != nil || $0.map != nil || containsFanOut($0.children) }
    }

    /// `policy` is the enclosing group's `onChildFailure`, which a fan-out takes too: one
    /// procedure's failure does to its siblings what the child's failure would have done.
    private func expand(_ children: [ChildSpec], policy: ChildFailurePolicy) -> [ChildSpec] {
        children.map { child in
            var child = child
            switch child.body {
            case .group(var group):
                group.children = expand(group.children, policy: group.onChildFailure)
                child.body = .group(group)
                return child
            case .procedure(let procedure):
                if let matrix = child.matrix { return ChildSpec.expanding(child, procedure, matrix, policy: policy) }
                if let map = child.map { return ChildSpec.expanding(child, map, policy: policy) }
                return child
            }
        }
    }
}

extension ChildSpec {
    /// A matrix child as its nested group of procedures.
    fileprivate static func expanding(
        _ child: ChildSpec, _ procedure: Procedure, _ matrix: Matrix, policy: ChildFailurePolicy
    ) -> ChildSpec {
        let leaves = matrix.combinations.map { combination -> ChildSpec in
            var input = (try? Matrix.substitute(procedure.with, combination)) ?? procedure.with
            if case .object(var members) = input {
                members["matrix"] = .object(Dictionary(combination.map { ($0.key, $0.value) }) { first, _ in first })
                input = .object(members)
            }
            return ChildSpec(
                Matrix.childName(child.name, combination), run: procedure.run, with: input,
                exclusive: child.exclusive, requires: child.requires, timeout: child.timeout, retry: child.retry,
                onWorkerLoss: child.onWorkerLoss, inject: child.inject, repeating: child.repeating)
        }
        var group = ChildSpec(child.name, onChildFailure: policy, after: child.after, children: leaves)
        // Decided once for the whole fan-out, as for any nested group.
        group.condition = child.condition
        group.requirement = child.requirement
        group.fanOut = .matrix
        return group
    }

    /// A map child as its nested group: its procedures so far, waiting for the producer.
    fileprivate static func expanding(_ child: ChildSpec, _ map: MapSpec, policy: ChildFailurePolicy) -> ChildSpec {
        // Everything its procedures would wait for (`after`, `inject.from`, the names in its
        // expressions, `map.from`): once that has finished, the map is ready, and nothing it
        // makes waits for anything that has not (an enclosing hold waits for it all first).
        var after = child.after
        for name in child.dependencyNames where !after.contains(name) { after.append(name) }
        var group = ChildSpec(child.name, onChildFailure: policy, after: after, children: child.mapped ?? [])
        group.condition = child.condition
        group.requirement = child.requirement
        group.mapped = child.mapped
        var template = child
        template.mapped = nil
        group.fanOut = .map(MapFanOut(template: template))
        return group
    }
}
