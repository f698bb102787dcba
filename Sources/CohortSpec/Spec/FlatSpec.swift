/// A spec flattened for the scheduler: every group and every procedure (leaf) in document
/// pre-order, with inherited settings and dependencies resolved to absolute paths and indexes.
///
/// The rules (see docs/spec.md, "Flattened model"):
/// - A leaf's `path` joins the names below the top-level group with `/`: `tests/unit`.
/// - `requires` is the union of the leaf's own labels and those of every enclosing group.
/// - A leaf waits for (`dependencies`) what it names in `after` and `inject`, what each
///   enclosing nested group names in its `after`, and, in a `sequence` group, the sibling
///   listed before it or before an enclosing group. Waiting for a group means waiting for
///   every leaf inside it; a group's leaves are a contiguous index range, so dependencies are
///   kept as sorted, merged ranges of leaf indexes.
/// - Exclusivity: a group with `exclusive` categories holds, from before its first leaf starts
///   until its last leaf finishes, its `holds`: its own categories and every category a
///   descendant declares, taken atomically, so nothing inside it ever waits for a category
///   outside its hold while it holds (deadlock-free by construction: docs/scheduling.md,
///   "Why locks never deadlock"). A node's categories that an enclosing group holds are
///   granted from that group's table (siblings still exclude each other); `acquires` are
///   those taken from the cluster's table, the ones no enclosing group holds.
public struct FlatSpec: Sendable, Hashable {
    /// The top-level group first, then nested groups in document order.
    public var groups: [FlatGroup]
    /// Every procedure in document order; `FlatGroup.leaves` are ranges into this.
    public var leaves: [FlatLeaf]

    /// The leaf with this path (`tests/unit`), if any. A linear search, for tools and tests;
    /// a scheduler keeps its own index.
    public func leaf(at path: String) -> FlatLeaf? {
        leaves.first { $0.path == path }
    }

    /// The group with this path (`""` for the top level), if any. A linear search.
    public func group(at path: String) -> FlatGroup? {
        groups.first { $0.path == path }
    }

    /// A leaf's dependencies as paths, expanded to leaves, in document order.
    public func dependencyPaths(of leaf: FlatLeaf) -> [String] {
        leaf.dependencyIndices.map { leaves[$0].path }
    }
}

/// A group (the top level or nested) in a `FlatSpec`.
public struct FlatGroup: Sendable, Hashable {
    /// Index in `FlatSpec.groups`.
    public var index: Int
    /// `""` for the top-level group, else like a leaf's path (`tests`).
    public var path: String
    public var name: String
    /// The enclosing group's index; `nil` for the top level.
    public var parent: Int?
    /// 0 for the top level, 1 for a group in it…
    public var depth: Int
    public var mode: GroupMode
    public var onChildFailure: ChildFailurePolicy
    /// Deadline from the group's start (its first leaf's start).
    public var timeout: Duration?
    /// Categories as written on the group (duplicates removed).
    public var exclusive: [String]
    /// What the group's hold covers, taken atomically: its `exclusive` and every category its
    /// descendants declare, in document order; empty for a group without `exclusive` (it holds
    /// nothing, and its children lock for themselves).
    public var holds: [String]
    /// Categories held by enclosing groups while this one runs (their `holds`).
    public var heldByAncestors: [String]
    /// `holds` minus `heldByAncestors`: what this group takes from the cluster's table.
    public var acquires: [String]
    /// Labels needed by every leaf in the group (own and inherited).
    public var requires: [String]
    /// The leaves inside this group, all levels: indexes into `FlatSpec.leaves`.
    public var leaves: Range<Int>
    /// The paths of the direct children (leaves and groups), in order.
    public var children: [String]
    /// What the group waits for before any of its leaves may start (own `after`, sequence
    /// order, and the same of enclosing groups), as absolute paths of leaves or groups.
    public var waitsFor: [String]
    /// `waitsFor` as sorted, merged ranges of leaf indexes.
    public var dependencies: [Range<Int>]
    /// The fan-out it was made from (a child's `matrix` or `map`), or `nil` for a group
    /// written as one.
    public var fanOut: FanOut?
    /// For a map's group: the procedure whose output holds its list (index in
    /// `FlatSpec.leaves`), and whether its procedures are still to be made (then it has none).
    public var mapProducer: Int? = nil
    public var mapPending = false
    /// How many of `waitsFor`, from the start, the group waits for itself (its own `after`,
    /// expressions and sequence order); the rest are its enclosing groups'.
    public var ownWaitsForCount: Int = 0
    /// The group's `if:`, resolved; nil for none (the top level never has one).
    public var condition: FlatExpression?
    /// The group's `require:`, resolved.
    public var requirement: FlatExpression?
}

/// An `if:`, `require:` or `repeat.until` in a `FlatSpec`: parsed, with the names it uses
/// resolved to absolute paths.
public struct FlatExpression: Sendable, Hashable {
    public var expression: ParsedExpression
    /// Each name as written → the path of the child it names (`tests/unit`).
    public var paths: [String: String]

    public init(expression: ParsedExpression, paths: [String: String]) {
        self.expression = expression
        self.paths = paths
    }

    /// The text as written.
    public var text: String { expression.text }
}

/// A procedure's `if:`, `require:` and `repeat:` in a `FlatSpec`, kept apart from `FlatLeaf`
/// so that a leaf without them costs one word.
public final class FlatLeafExpressions: Sendable, Hashable {
    public let condition: FlatExpression?
    public let requirement: FlatExpression?
    public let repeating: FlatRepeat?

    public init(condition: FlatExpression?, requirement: FlatExpression?, repeating: FlatRepeat?) {
        self.condition = condition
        self.requirement = requirement
        self.repeating = repeating
    }

    public static func == (lhs: FlatLeafExpressions, rhs: FlatLeafExpressions) -> Bool {
        lhs.condition == rhs.condition && lhs.requirement == rhs.requirement && lhs.repeating == rhs.repeating
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(condition)
        hasher.combine(requirement)
        hasher.combine(repeating)
    }
}

/// A procedure's `repeat:` in a `FlatSpec`.
public struct FlatRepeat: Sendable, Hashable {
    public var until: FlatExpression
    public var max: Int
    public var every: Duration
}

/// A procedure in a `FlatSpec`: what the scheduler dispatches.
public struct FlatLeaf: Sendable, Hashable {
    /// Index in `FlatSpec.leaves`.
    public var index: Int
    /// `tests/unit`; unique in the spec.
    public var path: String
    public var name: String
    /// The enclosing group's index in `FlatSpec.groups` (0 for the top level).
    public var group: Int
    /// Enclosing groups' indexes, from the top level (0) inwards; the last is `group`.
    public var ancestors: [Int]
    /// The procedure kind (`run`).
    public var run: String
    /// The input as written (`with`), before injections.
    public var input: JSONValue
    /// Labels the worker must have: own and every enclosing group's, first appearance order.
    public var requires: [String]
    /// Categories as written on the procedure (duplicates removed).
    public var exclusive: [String]
    /// Categories held by enclosing groups while this leaf runs (their `holds`, which cover
    /// every category of `exclusive` when there is such a group).
    public var heldByAncestors: [String]
    /// `exclusive` minus `heldByAncestors`: what this leaf takes from the cluster's table,
    /// atomically, per attempt (the rest comes from its innermost holding group's table).
    public var acquires: [String]
    /// Per attempt; enclosing groups' timeouts are on `FlatSpec.groups`.
    public var timeout: Duration?
    public var retry: RetryPolicy?
    /// What a lost worker does to a running attempt.
    public var onWorkerLoss: WorkerLossPolicy
    /// Injections with their producers resolved, in application order.
    public var inject: [FlatInjection]
    /// What must finish first, as absolute paths of leaves or groups, in the order found: the
    /// leaf's own `after` and `inject`, its sequence predecessor, then those of enclosing groups.
    public var waitsFor: [String]
    /// `waitsFor` expanded to leaves, as sorted, merged ranges of leaf indexes.
    public var dependencies: [Range<Int>]
    /// How many of `waitsFor`, from the start, the leaf waits for itself (its own `after`,
    /// `inject`, expressions and sequence order); the rest are its enclosing groups'.
    public var ownWaitsForCount: Int = 0
    /// The procedure's `if:`, `require:` and `repeat:`, boxed: nil (one word) for the many
    /// leaves without any.
    public var expressions: FlatLeafExpressions?
    /// The procedure's `if:`, resolved; nil for none.
    public var condition: FlatExpression? { expressions?.condition }
    /// The procedure's `require:`, resolved.
    public var requirement: FlatExpression? { expressions?.requirement }
    /// The procedure's `repeat:`, resolved.
    public var repeating: FlatRepeat? { expressions?.repeating }

    /// Every leaf index this leaf waits for, ascending.
    public var dependencyIndices: [Int] {
        dependencies.flatMap { Array($0) }
    }
}

/// An injection with its producer resolved.
public struct FlatInjection: Sendable, Hashable {
    /// The producer's index in `FlatSpec.leaves` (the first, for a fan-out).
    public var producer: Int
    /// The producer's path (`build`, `tests/unit`; the fan-out's group, `test`).
    public var producerPath: String
    public var select: JSONPath
    public var into: JSONPath
    /// For a producer that is a fan-out (a matrix or map child): its procedures, whose selected
    /// outputs are injected as one list, in order. `nil` for a single producer.
    public var gathers: Range<Int>?
    /// For a fan-out: its group (index in `FlatSpec.groups`), which must have succeeded (a map
    /// that failed without procedures gathers nothing, not an empty list).
    public var fanOutGroup: Int?

    public init(
        producer: Int, producerPath: String, select: JSONPath, into: JSONPath, gathers: Range<Int>? = nil,
        fanOutGroup: Int? = nil
    ) {
        self.producer = producer
        self.producerPath = producerPath
        self.select = select
        self.into = into
        self.gathers = gathers
        self.fanOutGroup = fanOutGroup
    }
}

extension GroupSpec {
    /// Flattens the spec for scheduling; see `FlatSpec`.
    ///
    /// Meant for a validated spec: names that resolve to nothing, or to the child itself or its
    /// ancestors, are left out rather than reported.
    public func flattened() -> FlatSpec {
        flattened(validatedTree: nil)
    }

    /// `validatedTree` is this spec's tree as validation built it: used when the spec has no
    /// fan-out (whose expansion is another spec, with a tree of its own).
    func flattened(validatedTree: SpecTree?) -> FlatSpec {
        let tree = validatedTree.flatMap { hasFanOut ? nil : $0 } ?? SpecTree(expandingFanOuts())
        var groups: [FlatGroup] = []
        var groupIndexByNode: [Int: Int] = [:]
        var leaves: [FlatLeaf] = []
        let holds = holdsByNode(tree)

        // Each group node's index among the groups, known before the loop reaches it (a
        // consumer may inject from a fan-out written after it).
        var groupIndexAhead: [Int: Int] = [:]
        for nodeIndex in tree.nodes.indices where tree.nodes[nodeIndex].isGroup {
            groupIndexAhead[nodeIndex] = groupIndexAhead.count
        }
        for nodeIndex in tree.nodes.indices {
            let node = tree.nodes[nodeIndex]
            let ancestorNodes = tree.ancestors(of: nodeIndex)
            let ancestorGroups = ancestorNodes.map { groupIndexByNode[$0]! }
            let held = unique(ancestorNodes.flatMap { holds[$0] ?? [] })
            let inheritedRequires = ancestorGroups.last.map { groups[$0].requires } ?? []
            let own: (exclusive: [String], requires: [String], timeout: Duration?) =
                node.child.map { ($0.exclusive, $0.requires, $0.timeout) } ?? (exclusive, requires, timeout)
            let exclusiveOwn = unique(own.exclusive)

            // What this node waits for, then the same for each enclosing group (innermost first).
            var waitsForNodes: [Int] = tree.directDependencies(of: nodeIndex)
            let ownWaitsForCount = waitsForNodes.count
            let condition = node.child?.condition.flatMap { flat($0, allowsOutput: false, at: nodeIndex, in: tree) }
            let requirement = node.child?.requirement.flatMap {
                flat($0, allowsOutput: false, at: nodeIndex, in: tree)
            }
            for ancestor in ancestorNodes.reversed() {
                for dependency in tree.directDependencies(of: ancestor) where !waitsForNodes.contains(dependency) {
                    waitsForNodes.append(dependency)
                }
            }
            let waitsFor = waitsForNodes.map { tree.nodes[$0].path }
            let dependencies = merged(waitsForNodes.map { tree.nodes[$0].leaves })

            if node.isGroup {
                let index = groups.count
                groupIndexByNode[nodeIndex] = index
                groups.append(
                    FlatGroup(
                        index: index, path: node.path, name: node.name, parent: ancestorGroups.last,
                        depth: node.depth, mode: node.mode, onChildFailure: node.onChildFailure, timeout: own.timeout,
                        exclusive: exclusiveOwn, holds: holds[nodeIndex] ?? [], heldByAncestors: held,
                        acquires: (holds[nodeIndex] ?? []).filter { !held.contains($0) },
                        requires: unique(inheritedRequires + own.requires), leaves: node.leaves,
                        children: tree.children(of: nodeIndex).map { tree.nodes[$0].path }, waitsFor: waitsFor,
                        dependencies: dependencies, fanOut: node.child?.fanOut, ownWaitsForCount: ownWaitsForCount,
                        condition: condition, requirement: requirement))
                if let map = node.child?.fanOut?.map {
                    if case .success(let producer) = tree.resolve(map.map.from, from: nodeIndex),
                        !tree.nodes[producer].isGroup
                    {
                        groups[index].mapProducer = tree.nodes[producer].leaves.lowerBound
                    }
                    groups[index].mapPending = node.child?.mapped == nil
                }
            } else if let child = node.child, case .procedure(let procedure) = child.body {
                let injections: [FlatInjection] = child.inject.compactMap { injection in
                    guard case .success(let producer) = tree.resolve(injection.from, from: nodeIndex),
                        producer != nodeIndex
                    else { return nil }
                    let producerNode = tree.nodes[producer]
                    let fanOut = producerNode.child?.fanOut != nil
                    guard !producerNode.isGroup || fanOut else { return nil }
                    return FlatInjection(
                        producer: producerNode.leaves.lowerBound, producerPath: producerNode.path,
                        select: injection.select, into: injection.into, gathers: fanOut ? producerNode.leaves : nil,
                        fanOutGroup: fanOut ? groupIndexAhead[producer] : nil)
                }
                leaves.append(
                    FlatLeaf(
                        index: leaves.count, path: node.path, name: node.name, group: ancestorGroups.last ?? 0,
                        ancestors: ancestorGroups, run: procedure.run, input: procedure.with,
                        requires: unique(inheritedRequires + own.requires), exclusive: exclusiveOwn,
                        heldByAncestors: held, acquires: exclusiveOwn.filter { !held.contains($0) },
                        timeout: own.timeout, retry: child.retry, onWorkerLoss: child.onWorkerLoss, inject: injections,
                        waitsFor: waitsFor,
                        dependencies: dependencies, ownWaitsForCount: ownWaitsForCount,
                        expressions: expressions(condition, requirement, child.repeating, at: nodeIndex, in: tree)))
            }
        }
        return FlatSpec(groups: groups, leaves: leaves)
    }

    /// A leaf's boxed expressions; nil if it has none.
    private func expressions(
        _ condition: FlatExpression?, _ requirement: FlatExpression?, _ repeating: RepeatPolicy?, at node: Int,
        in tree: SpecTree
    ) -> FlatLeafExpressions? {
        let repeating = repeating.flatMap { policy in
            flat(policy.until, allowsOutput: true, at: node, in: tree).map {
                FlatRepeat(until: $0, max: policy.max, every: policy.every)
            }
        }
        guard condition != nil || requirement != nil || repeating != nil else { return nil }
        return FlatLeafExpressions(condition: condition, requirement: requirement, repeating: repeating)
    }

    /// An expression parsed, its names resolved from `node`; nil if it does not parse (a
    /// validated spec's always does).
    private func flat(_ expression: SpecExpression, allowsOutput: Bool, at node: Int, in tree: SpecTree)
        -> FlatExpression?
    {
        guard let parsed = try? expression.parse(allowsOutput: allowsOutput) else { return nil }
        var paths: [String: String] = [:]
        for name in parsed.references {
            if case .success(let target) = tree.resolve(name, from: node) { paths[name] = tree.nodes[target].path }
        }
        return FlatExpression(expression: parsed, paths: paths)
    }

    /// Each holding group node's `holds`: its own categories, then those of every node below
    /// it in document order. Groups without `exclusive` hold nothing and are left out.
    private func holdsByNode(_ tree: SpecTree) -> [Int: [String]] {
        var holds: [Int: [String]] = [:]
        for nodeIndex in tree.nodes.indices {
            let own = tree.nodes[nodeIndex].child.map(\.exclusive) ?? exclusive
            if tree.nodes[nodeIndex].isGroup, !own.isEmpty { holds[nodeIndex] = own }
            // A map's procedures, made later, declare what the child as written does: an
            // enclosing hold covers them from the start.
            let later = tree.nodes[nodeIndex].child?.fanOut?.map?.template.exclusive ?? []
            for ancestor in tree.ancestors(of: nodeIndex) where holds[ancestor] != nil {
                holds[ancestor]! += own + later
            }
        }
        return holds.mapValues(unique)
    }
}

/// The list without repeats, first appearance kept.
private func unique(_ list: [String]) -> [String] {
    var seen = Set<String>()
    return list.filter { seen.insert($0).inserted }
}

/// Sorted, non-overlapping, non-adjacent ranges covering the same indexes.
private func merged(_ ranges: [Range<Int>]) -> [Range<Int>] {
    var result: [Range<Int>] = []
    for range in ranges.filter({ !$0.isEmpty }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
        if let last = result.last, range.lowerBound <= last.upperBound {
            result[result.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
        } else {
            result.append(range)
        }
    }
    return result
}
