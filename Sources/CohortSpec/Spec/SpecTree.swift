/// The spec as a flat, indexed tree (pre-order, the top-level group first), with name
/// resolution. Shared by validation and flattening.
struct SpecTree {
    struct Node {
        var name: String
        /// `tests/unit`; `""` for the top-level group.
        var path: String
        var parent: Int?
        var indexInParent: Int
        /// 0 for the top-level group, 1 for its children…
        var depth: Int
        var children: [Int] = []
        /// The first child with each name.
        var childByName: [String: Int] = [:]
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
    /// The node of each leaf, in pre-order.
    private(set) var leafNodes: [Int] = []

    init(_ spec: GroupSpec) {
        nodes.append(
            Node(
                name: spec.name, path: "", parent: nil, indexInParent: 0,
                depth: 0, mode: spec.mode, onChildFailure: spec.onChildFailure, child: nil))
        addChildren(spec.children, to: 0)
        nodes[0].subtreeEnd = nodes.count
        nodes[0].leaves = 0..<leafNodes.count
    }

    private mutating func addChildren(_ children: [ChildSpec], to parent: Int) {
        for (offset, child) in children.enumerated() {
            let index = nodes.count
            let parentNode = nodes[parent]
            var node = Node(
                name: child.name, path: parentNode.isTop ? child.name : "\(parentNode.path)/\(child.name)",
                parent: parent,
                indexInParent: offset, depth: parentNode.depth + 1, mode: .parallel,
                onChildFailure: .cancelDependents, child: child)
            if case .group(let group) = child.body {
                node.mode = group.mode
                node.onChildFailure = group.onChildFailure
            }
            nodes.append(node)
            nodes[parent].children.append(index)
            if nodes[parent].childByName[child.name] == nil { nodes[parent].childByName[child.name] = index }
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
    func resolve(_ reference: String, from node: Int) -> Result<Int, ResolutionFailure> {
        let parts = reference.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.contains(where: \.isEmpty) {
            return .failure(.notFound("\"\(reference)\" is not a child name or a path like \"tests/unit\""))
        }
        var scope = nodes[node].parent
        var found: Int?
        while let level = scope {
            if let hit = nodes[level].childByName[parts[0]] {
                found = hit
                break
            }
            scope = nodes[level].parent
        }
        guard var current = found else {
            // Suggestions come from every visible name, nearest scope first.
            let visible = ancestors(of: node).reversed().flatMap { nodes[$0].childByName.keys.sorted() }
            return .failure(.notFound("no child named \"\(parts[0])\"\(Suggestion.didYouMean(parts[0], in: visible))"))
        }
        for part in parts.dropFirst() {
            guard nodes[current].isGroup else {
                return .failure(.notFound("\"\(nodes[current].path)\" is a procedure; it has no child \"\(part)\""))
            }
            guard let next = nodes[current].childByName[part] else {
                let names = nodes[current].childByName.keys.sorted()
                return .failure(
                    .notFound(
                        "group \"\(nodes[current].path)\" has no child named \"\(part)\"\(Suggestion.didYouMean(part, in: names))"
                    ))
            }
            current = next
        }
        return .success(current)
    }

    /// In a sequence, the later sibling of `node` that is or contains `target`, if any: such a
    /// reference is an error (validation says so), not a dependency.
    func laterSiblingInSequence(containing target: Int, of node: Int) -> Int? {
        guard let parent = nodes[node].parent, nodes[parent].mode == .sequence else { return nil }
        let siblings = nodes[parent].children
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
            result.append(nodes[parent].children[nodes[node].indexInParent - 1])
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
