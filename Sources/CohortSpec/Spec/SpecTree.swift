/// The spec as a flat, indexed tree (pre-order, the top-level group first), with name
/// resolution. Shared by validation and flattening.
///
/// A node holds only what is fixed when it is made. What grows while the tree is built (a
/// group's children and its names) lives in arrays of its own, indexed by node, so that
/// appending to a parent's lists never touches a `Node` value: reading `nodes[parent]` to
/// build a child cannot keep those lists shared while they grow (which made every insert
/// copy them, quadratic in the group's size; docs/performance.md).
struct SpecTree {
    struct Node {
        var name: String
        /// `tests/unit`; `""` for the top-level group.
        var path: String
        var parent: Int?
        var indexInParent: Int
        /// 0 for the top-level group, 1 for its children…
        var depth: Int
        /// One past the last node of this node's subtree.
        var subtreeEnd: Int = 0
        /// The leaves (procedures) inside this node, by leaf index; one for a procedure.
        var leaves: Range<Int> = 0..<0
        var mode: GroupMode
        var onChildFailure: ChildFailurePolicy
        /// `nil` for the top-level group.
        var child: ChildSpec?

        var isGroup: Bool { child?.isGroup ?? true }
        var isTop: Bool { parent == nil }
    }

    private(set) var nodes: [Node] = []
    /// Each node's children, by node index (empty for a procedure).
    private var childLists: [[Int]] = []
    /// Each node's first child of each name, by node index.
    private var childNames: [[String: Int]] = []
    /// The node of each leaf, in pre-order.
    private(set) var leafNodes: [Int] = []

    init(_ spec: GroupSpec) {
        append(
            Node(
                name: spec.name, path: "", parent: nil, indexInParent: 0,
                depth: 0, mode: spec.mode, onChildFailure: spec.onChildFailure, child: nil))
        addChildren(spec.children, to: 0)
        nodes[0].subtreeEnd = nodes.count
        nodes[0].leaves = 0..<leafNodes.count
    }

    private mutating func append(_ node: Node) {
        nodes.append(node)
        childLists.append([])
        childNames.append([:])
    }

    private mutating func addChildren(_ children: [ChildSpec], to parent: Int) {
        let parentPath = nodes[parent].isTop ? nil : nodes[parent].path
        let depth = nodes[parent].depth + 1
        childLists[parent].reserveCapacity(children.count)
        childNames[parent].reserveCapacity(children.count)
        for (offset, child) in children.enumerated() {
            let index = nodes.count
            var node = Node(
                name: child.name, path: parentPath.map { "\($0)/\(child.name)" } ?? child.name,
                parent: parent,
                indexInParent: offset, depth: depth, mode: .parallel,
                onChildFailure: .cancelDependents, child: child)
            if case .group(let group) = child.body {
                node.mode = group.mode
                node.onChildFailure = group.onChildFailure
            }
            append(node)
            childLists[parent].append(index)
            if childNames[parent][child.name] == nil { childNames[parent][child.name] = index }
            let firstLeaf = leafNodes.count
            if case .group(let group) = child.body {
                addChildren(group.children, to: index)
            } else {
                leafNodes.append(index)
            }
            nodes[index].subtreeEnd = nodes.count
            nodes[index].leaves = firstLeaf..<leafNodes.count
        }
    }

    /// The children of `node`, in spec order; empty for a procedure.
    func children(of node: Int) -> [Int] { childLists[node] }

    /// The first child of `node` named `name`.
    func child(named name: String, of node: Int) -> Int? { childNames[node][name] }

    /// The names of `node`'s children, sorted (for suggestions in errors).
    func childNamesSorted(of node: Int) -> [String] { childNames[node].keys.sorted() }

    /// Where the child is in the spec, `children[3]`; `""` for the top-level group. Built on
    /// demand, for error messages.
    func specPath(of node: Int) -> String {
        guard let parent = nodes[node].parent else { return "" }
        return "\(childrenSpecPath(of: parent))[\(nodes[node].indexInParent)]"
    }

    /// Where a group's children list is: `children` at the top, `children[3].group.children` below.
    func childrenSpecPath(of node: Int) -> String {
        nodes[node].isTop ? "children" : "\(specPath(of: node)).group.children"
    }

    /// Whether `node` is `ancestor` or inside it.
    func isWithin(_ node: Int, _ ancestor: Int) -> Bool {
        node >= ancestor && node < nodes[ancestor].subtreeEnd
    }

    /// The groups enclosing `node`, from the top-level group inwards (not `node` itself).
    func ancestors(of node: Int) -> [Int] {
        var chain: [Int] = []
        var current = nodes[node].parent
        while let index = current {
            chain.append(index)
            current = nodes[index].parent
        }
        return chain.reversed()
    }

    enum ResolutionFailure: Error {
        case notFound(String)
    }

    /// The node a reference in `after` or `inject.from` of `node` names.
    ///
    /// A plain name is looked up among the node's siblings, then among its parent's siblings,
    /// and so on outwards (like a variable in nested scopes). `a/b` names child `b` of the
    /// group that `a` resolves to.
    ///
    /// A failure says "did you mean" only when `suggesting`: a suggestion compares the name
    /// with every visible name, so callers that drop failures (flattening, dependencies) or
    /// meet many of them (validation has a budget) must not pay for it each time.
    func resolve(_ reference: String, from node: Int, suggesting: Bool = false) -> Result<Int, ResolutionFailure> {
        let parts = reference.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.contains(where: \.isEmpty) {
            return .failure(.notFound("\"\(reference)\" is not a child name or a path like \"tests/unit\""))
        }
        var scope = nodes[node].parent
        var found: Int?
        while let level = scope {
            if let hit = child(named: parts[0], of: level) {
                found = hit
                break
            }
            scope = nodes[level].parent
        }
        guard var current = found else {
            // Suggestions come from every visible name, nearest scope first.
            let suggestion =
                suggesting
                ? Suggestion.didYouMean(
                    parts[0], in: ancestors(of: node).reversed().flatMap { childNamesSorted(of: $0) })
                : ""
            return .failure(.notFound("no child named \"\(parts[0])\"\(suggestion)"))
        }
        for part in parts.dropFirst() {
            guard nodes[current].isGroup else {
                return .failure(.notFound("\"\(nodes[current].path)\" is a procedure; it has no child \"\(part)\""))
            }
            guard let next = child(named: part, of: current) else {
                let suggestion = suggesting ? Suggestion.didYouMean(part, in: childNamesSorted(of: current)) : ""
                return .failure(
                    .notFound("group \"\(nodes[current].path)\" has no child named \"\(part)\"\(suggestion)"))
            }
            current = next
        }
        return .success(current)
    }

    /// In a sequence, the later sibling of `node` that is or contains `target`, if any: such a
    /// reference is an error (validation says so), not a dependency.
    func laterSiblingInSequence(containing target: Int, of node: Int) -> Int? {
        guard let parent = nodes[node].parent, nodes[parent].mode == .sequence else { return nil }
        let siblings = childLists[parent]
        for sibling in siblings[(nodes[node].indexInParent + 1)...] where isWithin(target, sibling) {
            return sibling
        }
        return nil
    }

    /// The nodes `node` waits for: its `after` and `inject.from` that resolve to a node that is
    /// not itself, an ancestor or a descendant, and in a sequence the previous sibling.
    func directDependencies(of node: Int) -> [Int] {
        guard let child = nodes[node].child, let parent = nodes[node].parent else { return [] }
        var result: [Int] = []
        if nodes[parent].mode == .sequence, nodes[node].indexInParent > 0 {
            result.append(childLists[parent][nodes[node].indexInParent - 1])
        }
        for reference in child.dependencyNames {
            guard case .success(let target) = resolve(reference, from: node) else { continue }
            if isWithin(target, node) || isWithin(node, target) { continue }
            if laterSiblingInSequence(containing: target, of: node) != nil { continue }
            if !result.contains(target) { result.append(target) }
        }
        return result
    }
}
