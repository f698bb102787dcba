/// One accepted group as the scheduler runs it: the flattened spec, the state of every
/// procedure and nested group, and the dependency edges, reversed for cheap propagation.
///
/// Nodes: leaf `i` is node `i`; group `g` (index in `FlatSpec.groups`, 0 the top level) is node
/// `leafCount + g`. An edge says "this leaf waits for that node"; a group node finishes when
/// its last procedure does.
struct GroupRun: Sendable {
    /// The scheduler's slot of this run.
    let slot: Int
    let id: String
    let name: String
    /// `hashValue` of the submitted spec, to recognise an idempotent resubmission.
    let fingerprint: Int
    let submittedAt: Timestamp
    var flat: FlatSpec
    var children: [ChildRun]
    var groups: [NestedRun]
    /// For each node, the leaves that wait for it.
    var dependents: [[Int32]]
    /// Path (`tests/unit`, `tests`) → node.
    let nodeByPath: [String: Int]
    /// Each leaf's placement class (kind, labels, exclusivity) in the scheduler's class table.
    var placement: [Int32]
    var phase: GroupPhase = .pending
    var reason: String?
    var startedAt: Timestamp?
    var finishedAt: Timestamp?
    /// A client watches it: the scheduler reports every child change.
    var watched = false
    /// Where it is in the scheduler's submission order (for `cohort status`).
    let sequence: UInt64

    var leafCount: Int { children.count }

    func node(ofGroup group: Int) -> Int { leafCount + group }

    init(slot: Int, id: String, spec: GroupSpec, sequence: UInt64, now: Timestamp) {
        self.slot = slot
        self.id = id
        self.name = spec.name
        self.fingerprint = spec.hashValue
        self.submittedAt = now
        self.sequence = sequence
        var flat = spec.flattened()
        let leafCount = flat.leaves.count
        var nodeByPath: [String: Int] = [:]
        nodeByPath.reserveCapacity(leafCount + flat.groups.count)
        for leaf in flat.leaves { nodeByPath[leaf.path] = leaf.index }
        for group in flat.groups { nodeByPath[group.path] = leafCount + group.index }
        var dependents = [[Int32]](repeating: [], count: leafCount + flat.groups.count)
        var children = [ChildRun](repeating: ChildRun(), count: leafCount)
        for index in flat.leaves.indices {
            for path in flat.leaves[index].waitsFor {
                guard let node = nodeByPath[path] else { continue }
                dependents[node].append(Int32(index))
                children[index].remaining += 1
            }
            // Kept as edges from here on (`waitsFor` stays, for status reasons): a queued
            // procedure's memory is what counts.
            flat.leaves[index].dependencies = []
        }
        self.groups = flat.groups.map { group in
            NestedRun(unfinished: group.leaves.count, hold: group.exclusive.isEmpty ? .none : .notRequested)
        }
        for index in flat.groups.indices {
            flat.groups[index].waitsFor = []
            flat.groups[index].dependencies = []
        }
        self.flat = flat
        self.children = children
        self.dependents = dependents
        self.nodeByPath = nodeByPath
        self.placement = []
    }

    /// The path of a node (leaf or group).
    func path(ofNode node: Int) -> String {
        node < leafCount ? flat.leaves[node].path : flat.groups[node - leafCount].path
    }

    /// The lock levels for categories `exclusive` of something inside `ancestors` (group
    /// indexes, outermost first): each category from the table of the innermost ancestor that
    /// holds it, else from the cluster table; the cluster first, then outer before inner.
    func lockLevels(for exclusive: [String], ancestors: [Int]) -> [LockLevel] {
        guard !exclusive.isEmpty else { return [] }
        var cluster = Set<String>()
        var scoped: [(Int, Set<String>)] = []
        for category in exclusive {
            if let holder = ancestors.last(where: { flat.groups[$0].exclusive.contains(category) }) {
                if let index = scoped.firstIndex(where: { $0.0 == holder }) {
                    scoped[index].1.insert(category)
                } else {
                    scoped.append((holder, [category]))
                }
            } else {
                cluster.insert(category)
            }
        }
        scoped.sort { flat.groups[$0.0].depth < flat.groups[$1.0].depth }
        return [LockLevel(scope: .cluster, categories: cluster)]
            + scoped.map { LockLevel(scope: .group(run: slot, group: $0.0), categories: $0.1) }
    }

    /// The groups enclosing group `group`, outermost first (not `group` itself).
    func ancestors(ofGroup group: Int) -> [Int] {
        var chain: [Int] = []
        var current = flat.groups[group].parent
        while let index = current {
            chain.append(index)
            current = flat.groups[index].parent
        }
        return chain.reversed()
    }

    /// Fencing tokens an attempt of `leaf` runs under: its own grant's, plus those its
    /// enclosing groups hold for it.
    func tokens(forLeaf leaf: Int, own: [String: UInt64]) -> [String: UInt64] {
        var tokens = own
        for group in flat.leaves[leaf].ancestors.reversed() where !groups[group].tokens.isEmpty {
            tokens.merge(groups[group].tokens) { current, _ in current }
        }
        return tokens
    }
}
