/// The semantic rules of a spec, for parsed specs and specs built in Swift alike: names,
/// references, cycles, limits, retry and timeouts, categories and labels, built-in inputs.
struct SpecValidator {
    let limits: SpecLimits
    private(set) var errors: [SpecError] = []
    /// The tree the last `validate` built (flattening reuses it).
    private(set) var tree: SpecTree?
    /// How many more unknown references get a "did you mean": each compares the name with
    /// every name in scope, so a spec of many bad references (a hostile one, or added children
    /// naming siblings the running group has) would cost the square of its size.
    private var suggestionsLeft = SpecValidator.suggestionBudget
    static let suggestionBudget = 10

    /// `suggests: false` leaves "did you mean" out of every unknown reference's message.
    init(limits: SpecLimits, suggests: Bool = true) {
        self.limits = limits
        if !suggests { suggestionsLeft = 0 }
    }

    private mutating func fail(_ code: SpecError.Code, _ path: String, _ message: String) {
        errors.append(SpecError(code, path: path, message))
    }

    mutating func validate(_ spec: GroupSpec) {
        if let problem = SpecNames.problem(withChildName: spec.name, maxLength: limits.maxNameLength) {
            fail(.invalidValue, "name", problem)
        }
        checkTimeout(spec.timeout, path: "timeout")
        checkCategories(spec.exclusive, path: "exclusive")
        checkLabels(spec.requires, path: "requires")
        checkLockLimits(spec.limits, path: "limits")
        if !GroupSpec.priorityRange.contains(spec.priority) {
            fail(
                .invalidValue, "priority",
                "\(spec.priority) is out of range; a priority is a whole number from \(GroupSpec.priorityRange.lowerBound) "
                    + "to \(GroupSpec.priorityRange.upperBound) (default 0, higher goes first)")
        }

        let tree = SpecTree(spec)
        self.tree = tree
        // A matrix child is as many procedures as it has combinations.
        let procedures = tree.leafNodes.reduce(0) { total, node in
            let count = tree.nodes[node].child?.matrix.map { max($0.count, 1) } ?? 1
            return total > Int.max - count ? Int.max : total + count
        }
        if procedures > limits.maxTotalChildren {
            fail(
                .limitExceeded, "",
                "the spec has \(procedures) procedures (matrices expanded); the limit is \(limits.maxTotalChildren) (limit maxTotalChildren)"
            )
        }
        for index in tree.nodes.indices {
            let node = tree.nodes[index]
            if node.isGroup { checkGroup(index, in: tree) }
            if let child = node.child { checkChild(child, node: index, in: tree) }
        }
        checkCycles(tree)
    }

    // MARK: Groups

    private mutating func checkGroup(_ index: Int, in tree: SpecTree) {
        let node = tree.nodes[index]
        let children = tree.children(of: index)
        let path = tree.childrenSpecPath(of: index)
        if node.depth == limits.maxNestingDepth + 1 {
            fail(
                .limitExceeded, tree.specPath(of: index),
                "groups nest deeper than \(limits.maxNestingDepth) levels (limit maxNestingDepth)")
        }
        if children.isEmpty {
            fail(.invalidValue, path, "a group needs at least one child")
        }
        if children.count > limits.maxChildrenPerGroup {
            fail(
                .limitExceeded, path,
                "\(children.count) children; a group may have at most \(limits.maxChildrenPerGroup) (limit maxChildrenPerGroup)"
            )
        }
        var firstWithName: [String: Int] = [:]
        for (offset, childIndex) in children.enumerated() {
            let name = tree.nodes[childIndex].name
            if let first = firstWithName[name] {
                fail(
                    .duplicateName, "\(path)[\(offset)].name",
                    "another child is already named \"\(name)\" (\(path)[\(first)]); names must be unique among siblings"
                )
            } else {
                firstWithName[name] = offset
            }
        }
    }

    // MARK: Children

    private mutating func checkChild(_ child: ChildSpec, node: Int, in tree: SpecTree) {
        let path = tree.specPath(of: node)
        if let problem = SpecNames.problem(withChildName: child.name, maxLength: limits.maxNameLength) {
            fail(.invalidValue, "\(path).name", problem)
        }
        checkTimeout(child.timeout, path: "\(path).timeout")
        checkCategories(child.exclusive, path: "\(path).exclusive")
        checkLabels(child.requires, path: "\(path).requires")

        for (offset, reference) in child.after.enumerated() {
            _ = checkReference(reference, from: node, in: tree, path: "\(path).after[\(offset)]")
        }
        if let condition = child.condition {
            checkExpression(condition, allowsOutput: false, node: node, in: tree, path: "\(path).if")
        }
        if let requirement = child.requirement {
            checkExpression(requirement, allowsOutput: false, node: node, in: tree, path: "\(path).require")
        }
        switch child.body {
        case .procedure(let procedure):
            checkKind(procedure.run, path: "\(path).run")
            if let retry = child.retry { checkRetry(retry, path: "\(path).retry") }
            if let repeating = child.repeating { checkRepeat(repeating, node: node, in: tree, path: "\(path).repeat") }
            checkInjections(child.inject, node: node, in: tree, path: path)
            if let map = child.map {
                checkMap(map, child, procedure, node: node, in: tree, path: path)
            } else if let matrix = child.matrix {
                checkMatrix(matrix, procedure, name: child.name, injections: child.inject, path: path)
            } else {
                BuiltinInputs.check(
                    kind: procedure.run, input: procedure.with, injections: child.inject, path: path, errors: &errors)
            }
        case .group:
            if child.map != nil {
                fail(
                    .invalidValue, "\(path).map",
                    "a map expands a procedure; a nested group cannot have one (put `map` on a procedure)")
            }
            if child.matrix != nil {
                fail(
                    .invalidValue, "\(path).matrix",
                    "a matrix expands a procedure; a nested group cannot have one (put `matrix` on a procedure)")
            }
            if child.retry != nil {
                fail(
                    .invalidValue, "\(path).retry",
                    "retry applies to procedures only; a group is not retried (put `retry` on its children)")
            }
            if child.onWorkerLoss != .retry {
                fail(
                    .invalidValue, "\(path).onWorkerLoss",
                    "onWorkerLoss applies to procedures only; put it on the group's children")
            }
            if !child.inject.isEmpty {
                fail(
                    .invalidValue, "\(path).inject",
                    "a group has no input to inject into; put `inject` on the children that need the result")
            }
            if child.repeating != nil {
                fail(
                    .invalidValue, "\(path).repeat",
                    "repeat applies to procedures only; a group is not repeated (put `repeat` on its children)")
            }
        }
    }

    /// Checks an `if:`, `require:` or `repeat.until`: it parses, and every name it uses names a
    /// sibling (or a sibling of an enclosing group) it may wait for; `outputs.NAME` a procedure.
    private mutating func checkExpression(
        _ expression: SpecExpression, allowsOutput: Bool, node: Int, in tree: SpecTree, path: String
    ) {
        let parsed: ParsedExpression
        do {
            parsed = try expression.parse(allowsOutput: allowsOutput)
        } catch {
            fail(.invalidExpression, path, error.description)
            return
        }
        for name in parsed.references {
            guard let target = checkReference(name, from: node, in: tree, path: path) else { continue }
            if parsed.outputReferences.contains(name), tree.nodes[target].isGroup {
                fail(
                    .invalidValue, path,
                    "outputs.\(name): \"\(name)\" is a group and has no output; read one of its children's")
            }
        }
    }

    private mutating func checkRepeat(_ repeating: RepeatPolicy, node: Int, in tree: SpecTree, path: String) {
        checkExpression(repeating.until, allowsOutput: true, node: node, in: tree, path: "\(path).until")
        if repeating.max < 1 {
            fail(.invalidValue, "\(path).max", "must be at least 1 (max counts every run, the first included)")
        } else if repeating.max > RepeatPolicy.maxRuns {
            fail(
                .limitExceeded, "\(path).max",
                "\(repeating.max) runs; the limit is \(RepeatPolicy.maxRuns) (RepeatPolicy.maxRuns)")
        }
        if repeating.every < .zero {
            fail(.invalidDuration, "\(path).every", SpecDurationError.negative.description)
        }
    }

    // MARK: Map

    /// `from` names a procedure (not a group or another fan-out), `maxParallel` is at least 1,
    /// `select`/`into` are usable paths, the input has room for `map`, and the input each
    /// procedure gets (with its item at `into`) suits its kind.
    private mutating func checkMap(
        _ map: MapSpec, _ child: ChildSpec, _ procedure: ChildSpec.Procedure, node: Int, in tree: SpecTree,
        path: String
    ) {
        let mapPath = "\(path).map"
        if child.matrix != nil {
            fail(
                .conflictingFields, path,
                "has both `matrix` and `map`; a child fans out one way (put the other on a child of its own)")
            return
        }
        if let producer = checkReference(map.from, from: node, in: tree, path: "\(mapPath).from") {
            let target = tree.nodes[producer]
            if target.isGroup || target.child?.matrix != nil || target.child?.map != nil {
                fail(
                    .invalidValue, "\(mapPath).from",
                    "\"\(map.from)\" is \(target.isGroup ? "a group" : "a fan-out"); a map reads its list from one procedure's output"
                )
            }
        }
        if let limit = map.maxParallel, !(1...limits.maxChildrenPerGroup).contains(limit) {
            fail(
                .invalidValue, "\(mapPath).maxParallel",
                "\(limit) is out of range; at least 1 and at most \(limits.maxChildrenPerGroup) (limit maxChildrenPerGroup), or leave it out for no limit"
            )
        }
        for (field, jsonPath) in [("select", map.select), ("into", map.into ?? .key("map").key("item"))]
        where jsonPath.segments.contains(where: { if case .index(let index) = $0 { index < 0 } else { false } }) {
            fail(.invalidValue, "\(mapPath).\(field)", "\"\(jsonPath)\" has a negative array index")
        }
        if let into = map.into, into.isRoot || into.firstKey == "map" {
            fail(
                .invalidValue, "\(mapPath).into",
                into.isRoot
                    ? "\".\" would replace the whole input; name a field (the item is always at `map.item` too)"
                    : "`map` in the input is set by the coordinator (`map.index`, `map.item`); use another field")
        }
        guard case .object(let members) = procedure.with else {
            fail(
                .wrongType, "\(path).with",
                "a map child's input is an object (each procedure's item goes under `map`), not \(procedure.with.typeName.withArticle)"
            )
            return
        }
        if members["map"] != nil {
            fail(
                .conflictingFields, "\(path).with.map",
                "`map` in the input is set by the child's map (each procedure's index and item); use another field")
        }
        let itemInjection = map.into.map { [Injection(from: map.from, into: $0)] } ?? []
        BuiltinInputs.check(
            kind: procedure.run, input: procedure.with, injections: child.inject + itemInjection, path: path,
            errors: &errors)
    }

    // MARK: Matrix

    /// Keys, values, the number of combinations, the names they make, `${{ matrix.KEY }}`
    /// references, and each combination's input as its kind sees it.
    private mutating func checkMatrix(
        _ matrix: Matrix, _ procedure: ChildSpec.Procedure, name base: String, injections: [Injection], path: String
    ) {
        let matrixPath = "\(path).matrix"
        guard !matrix.axes.isEmpty else {
            fail(.invalidValue, matrixPath, "a matrix needs at least one key with a list of values")
            return
        }
        var valid = true
        for axis in matrix.axes {
            if let problem = Matrix.problem(withKey: axis.key) {
                fail(.invalidValue, "\(matrixPath).\(axis.key)", problem)
                valid = false
            }
            if axis.values.isEmpty {
                fail(.invalidValue, "\(matrixPath).\(axis.key)", "needs at least one value")
                valid = false
            }
            var seen = Set<String>()
            for (index, value) in axis.values.enumerated() where !seen.insert(Matrix.text(of: value)).inserted {
                fail(
                    .invalidValue, "\(matrixPath).\(axis.key)[\(index)]",
                    "\"\(Matrix.text(of: value))\" is listed twice; each value makes one child, and names must be unique"
                )
                valid = false
            }
        }
        guard valid else { return }
        guard matrix.count <= limits.maxChildrenPerGroup else {
            let sizes = matrix.axes.map { "\($0.values.count)" }.joined(separator: " × ")
            fail(
                .limitExceeded, matrixPath,
                "makes \(matrix.count) children (\(sizes)); a group may have at most \(limits.maxChildrenPerGroup) (limit maxChildrenPerGroup)"
            )
            return
        }
        if case .object(let members) = procedure.with, members["matrix"] != nil {
            fail(
                .conflictingFields, "\(path).with.matrix",
                "`matrix` in the input is set by the child's matrix (each combination's values); use another field")
        }
        for key in Matrix.references(in: procedure.with) where !matrix.axes.contains(where: { $0.key == key }) {
            let keys = matrix.axes.map(\.key)
            fail(
                .invalidValue, "\(path).with",
                "refers to ${{ matrix.\(key) }}, but the matrix has no key \"\(key)\"\(Suggestion.didYouMean(key, in: keys)) (keys: \(keys.joined(separator: ", ")))"
            )
            return
        }
        var variables: [String: String] = [:]
        for axis in matrix.axes {
            let variable = Matrix.environmentVariable(for: axis.key)
            if let other = variables[variable] {
                fail(
                    .invalidValue, "\(matrixPath).\(axis.key)",
                    "keys \"\(other)\" and \"\(axis.key)\" both give the variable \(variable); rename one")
                return
            }
            variables[variable] = axis.key
        }
        guard case .object = procedure.with else {
            fail(
                .wrongType, "\(path).with",
                "a matrix child's input is an object (each combination's values go under `matrix`), not \(procedure.with.typeName.withArticle)"
            )
            return
        }
        var firstError: [String: Int] = [:]
        var names = Set<String>()
        // Without references every combination's input is the same: one check says it all.
        var inputsChecked = false
        for combination in matrix.combinations {
            let name = Matrix.childName(base, combination)
            if let problem = SpecNames.problem(withChildName: name, maxLength: limits.maxNameLength) {
                fail(.invalidValue, matrixPath, "makes the child name \"\(name)\": \(problem)")
                return
            }
            guard names.insert(name).inserted else {
                fail(
                    .invalidValue, matrixPath,
                    "two combinations make the same child name \"\(name)\" (a value contains \",\" or \"=\"); use values without them"
                )
                return
            }
            guard !inputsChecked, let input = try? Matrix.substitute(procedure.with, combination) else { continue }
            var errors: [SpecError] = []
            BuiltinInputs.check(kind: procedure.run, input: input, injections: injections, path: path, errors: &errors)
            for var error in errors where firstError[error.path] == nil {
                firstError[error.path] = self.errors.count
                if input != procedure.with { error.message += " (in \(name))" }
                self.errors.append(error)
            }
            inputsChecked = input == procedure.with
        }
    }

    /// Checks one `after` or `inject.from`; returns the node it names when valid.
    private mutating func checkReference(_ reference: String, from node: Int, in tree: SpecTree, path: String) -> Int? {
        switch tree.resolve(reference, from: node, suggesting: suggestionsLeft > 0) {
        case .failure(.notFound(let message)):
            suggestionsLeft -= 1
            fail(.unknownReference, path, message)
            return nil
        case .success(let target):
            if target == node {
                fail(.cycle, path, "a child cannot wait for itself")
                return nil
            }
            if tree.isWithin(node, target) {
                fail(.cycle, path, "\"\(reference)\" is a group that contains this child; it cannot wait for it")
                return nil
            }
            if tree.isWithin(target, node) {
                fail(.cycle, path, "\"\(reference)\" is inside this group; a group cannot wait for its own children")
                return nil
            }
            if tree.laterSiblingInSequence(containing: target, of: node) != nil {
                fail(
                    .invalidValue, path,
                    "in a sequence, children run in listed order and \"\(reference)\" comes after this child")
                return nil
            }
            return target
        }
    }

    private mutating func checkInjections(
        _ injections: [Injection], node: Int, in tree: SpecTree, path: @autoclosure () -> String
    ) {
        guard !injections.isEmpty else { return }
        let path = path()
        var firstInto: [JSONPath: Int] = [:]
        for (offset, injection) in injections.enumerated() {
            let entry = "\(path).inject[\(offset)]"
            if let producer = checkReference(injection.from, from: node, in: tree, path: "\(entry).from"),
                tree.nodes[producer].isGroup
            {
                let example =
                    tree.children(of: producer).first.map { "; e.g. \"\(injection.from)/\(tree.nodes[$0].name)\"" }
                    ?? ""
                fail(
                    .invalidValue, "\(entry).from",
                    "\"\(injection.from)\" is a group and has no output; inject from one of its children\(example)")
            }
            // Only a path built in Swift can hold one (the text form has no minus sign).
            for (field, jsonPath) in [("select", injection.select), ("into", injection.into)]
            where jsonPath.segments.contains(where: { if case .index(let index) = $0 { index < 0 } else { false } }) {
                fail(.invalidValue, "\(entry).\(field)", "\"\(jsonPath)\" has a negative array index")
            }
            if let first = firstInto[injection.into] {
                fail(
                    .invalidValue, "\(entry).into",
                    "inject[\(first)] already writes to \"\(injection.into)\"; each injection needs its own place")
            } else {
                firstInto[injection.into] = offset
            }
        }
    }

    private mutating func checkKind(_ kind: String, path: @autoclosure () -> String) {
        if kind.isEmpty {
            fail(.invalidValue, path(), "a procedure kind cannot be empty (built in: shell, sleep, echo, fail)")
        } else if kind.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            return  // printable ASCII without spaces: the usual case, checked without Unicode tables
        } else if kind.contains(where: {
            $0.isWhitespace || $0.unicodeScalars.contains { $0.properties.generalCategory == .control }
        }) {
            fail(.invalidValue, path(), "a procedure kind cannot contain spaces or control characters")
        }
    }

    private mutating func checkRetry(_ retry: RetryPolicy, path: String) {
        if retry.attempts < 1 {
            fail(
                .invalidValue, "\(path).attempts",
                "must be at least 1 (attempts counts the first try: 3 means up to two retries), not \(retry.attempts)")
        } else if retry.attempts > limits.maxRetryAttempts {
            fail(
                .limitExceeded, "\(path).attempts",
                "\(retry.attempts) attempts; the limit is \(limits.maxRetryAttempts) (limit maxRetryAttempts)")
        }
        if retry.backoff < .zero { fail(.invalidDuration, "\(path).backoff", SpecDurationError.negative.description) }
        if let cap = retry.maxBackoff {
            if cap <= .zero {
                fail(.invalidDuration, "\(path).maxBackoff", "must be longer than zero")
            } else if cap < retry.backoff {
                fail(.invalidDuration, "\(path).maxBackoff", "is shorter than backoff (\(retry.backoff.specString))")
            }
        }
        if !(0...1).contains(retry.jitter) {
            fail(.invalidValue, "\(path).jitter", "must be a fraction from 0 to 1, not \(retry.jitter)")
        }
    }

    // MARK: Values

    // Paths are passed unbuilt (`@autoclosure`): they are only needed for a fault.

    private mutating func checkTimeout(_ timeout: Duration?, path: @autoclosure () -> String) {
        if let timeout, timeout <= .zero {
            fail(.invalidDuration, path(), "a timeout must be longer than zero")
        }
    }

    private mutating func checkCategories(_ categories: [String], path: @autoclosure () -> String) {
        guard !categories.isEmpty else { return }
        let path = path()
        var fences: [String: String] = [:]
        for (offset, category) in categories.enumerated() {
            if let problem = SpecNames.problem(withCategory: category, maxLength: limits.maxNameLength) {
                fail(.invalidValue, "\(path)[\(offset)]", problem)
                continue
            }
            let fence = SpecNames.fenceVariable(for: category)
            if let other = fences[fence], other != category {
                fail(
                    .invalidValue, "\(path)[\(offset)]",
                    "\"\(category)\" and \"\(other)\" would share the fencing variable \(fence); rename one")
            }
            fences[fence] = category
        }
    }

    private mutating func checkLockLimits(_ lockLimits: [String: Int], path: String) {
        for (category, limit) in lockLimits.sorted(by: { $0.key < $1.key }) {
            let entry = "\(path).\(category)"
            if let problem = SpecNames.problem(withCategory: category, maxLength: limits.maxNameLength) {
                fail(.invalidValue, entry, problem)
            } else if !GroupSpec.lockLimitRange.contains(limit) {
                fail(
                    .invalidValue, entry,
                    "\(limit) is out of range; a category's limit is how many holders it may have at once, "
                        + "\(GroupSpec.lockLimitRange.lowerBound) to \(GroupSpec.lockLimitRange.upperBound)")
            }
        }
    }

    private mutating func checkLabels(_ labels: [String], path: @autoclosure () -> String) {
        guard !labels.isEmpty else { return }
        let path = path()
        for (offset, label) in labels.enumerated() {
            if let problem = SpecNames.problem(withLabel: label, maxLength: limits.maxNameLength) {
                fail(.invalidValue, "\(path)[\(offset)]", problem)
            }
        }
    }

    // MARK: Cycles

    /// Finds children that wait on each other, through `after`, `inject`, sequence order and
    /// group membership, and names each cycle once, relative to the innermost group holding it:
    /// `children: cycle build -> test -> build` (each waits for the next).
    private mutating func checkCycles(_ tree: SpecTree) {
        let graph = WaitGraph(tree)
        for cycle in graph.cycles() {
            // The innermost group containing every node of the cycle.
            var common = tree.ancestors(of: cycle[0]) + [cycle[0]]
            for node in cycle.dropFirst() {
                let chain = tree.ancestors(of: node) + [node]
                common = Array(zip(common, chain).prefix { $0 == $1 }.map(\.0))
            }
            var group = common.last ?? 0
            while group != 0, !tree.nodes[group].isGroup || cycle.contains(group) {
                group = tree.nodes[group].parent ?? 0
            }
            let prefix = tree.nodes[group].isTop ? "" : tree.nodes[group].path + "/"
            let names = (cycle + [cycle[0]]).map { String(tree.nodes[$0].path.dropFirst(prefix.count)) }
            fail(.cycle, tree.childrenSpecPath(of: group), "cycle \(names.joined(separator: " -> "))")
        }
    }
}
