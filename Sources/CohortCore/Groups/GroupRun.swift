import CohortSpec
import Foundation

/// The read-only part of a group run: the flattened spec and the dependency edges, reversed.
///
/// Nodes: leaf `i` is node `i`; group `g` (index in `FlatSpec.groups`, 0 the top level) is node
/// `leafCount + g`. An edge says "this leaf waits for that node"; a group node finishes when
/// its last procedure does.
final class GroupPlan: Sendable {
    let runIndex: Int
    let id: String
    let name: String
    /// `hashValue` of the submitted spec, to recognise an idempotent resubmission.
    let fingerprint: Int
    let submittedAt: Timestamp
    /// Where it is in the scheduler's submission order (for `cohort status`).
    let sequence: UInt64
    /// The CURVE key (Z85) of the client that submitted it; `nil` without CURVE.
    let owner: String?
    /// The spec's `priority` (docs/scheduling.md, "Priorities").
    let priority: Int
    /// The spec's `limits`, declared to the lock table while the run is unfinished.
    let limits: [String: Int]
    let flat: FlatSpec
    /// For each node, the leaves that wait for it.
    let dependents: [[Int32]]
    /// Path (`tests/unit`, `tests`) → node.
    let nodeByPath: [String: Int]
    /// Each leaf's placement class (kind, labels, exclusivity) in the scheduler's class table.
    let placement: [Int32]
    /// How many nodes each leaf waits for at the start.
    let remaining: [Int32]
    /// Node → the holding groups that wait for it to finish before they take their hold: a
    /// node outside the group that a leaf inside waits for. Sparse: most nodes have none.
    let holdWaits: [Int: [Int32]]
    /// Per group: how many such outside nodes its hold waits for at the start.
    let holdRemaining: [Int32]
    /// Whether any child has an `if:` or `require:` (else nothing evaluates conditions).
    let hasConditions: Bool
    /// Leaf → the nodes it waits for whose failure, cancellation or skip does not cancel or
    /// skip it, because an `if:` decides instead: those that only the leaf or enclosing
    /// groups with an `if:` wait for. Sparse: only leaves under an `if:`.
    let decidedByCondition: [Int: Set<Int>]
    /// The spec as it runs: the submitted one with every addition of a growing group
    /// (Scheduler+Growing.swift) in place.
    let spec: GroupSpec
    /// Node → the map groups still to be expanded that wait for it (Scheduler+Map.swift).
    /// Sparse: empty without maps.
    let mapWaits: [Int: [Int32]]
    /// Per map group still to be expanded: how many nodes it waits for.
    let mapRemaining: [Int: Int32]
    /// Per group: the map groups inside it (itself included) still to be expanded, each of
    /// which counts as one unfinished procedure until it is.
    let pendingMaps: [Int32]
    /// Whether any group is a map's (else nothing looks for maps on the hot path).
    let hasMaps: Bool

    init(
        runIndex: Int, id: String, spec: GroupSpec, flat original: FlatSpec, placement: [Int32], sequence: UInt64,
        owner: String? = nil, now: Timestamp, fingerprint: Int? = nil
    ) {
        self.runIndex = runIndex
        self.id = id
        self.spec = spec
        self.name = spec.name
        self.fingerprint = fingerprint ?? spec.hashValue
        self.submittedAt = now
        self.sequence = sequence
        self.owner = owner
        self.priority = spec.priority
        self.limits = spec.limits
        self.placement = placement
        var flat = original
        let leafCount = flat.leaves.count
        var nodeByPath: [String: Int] = [:]
        nodeByPath.reserveCapacity(leafCount + flat.groups.count)
        for leaf in flat.leaves { nodeByPath[leaf.path] = leaf.index }
        for group in flat.groups { nodeByPath[group.path] = leafCount + group.index }
        var dependents = [[Int32]](repeating: [], count: leafCount + flat.groups.count)
        var remaining = [Int32](repeating: 0, count: leafCount)
        for index in flat.leaves.indices {
            for path in flat.leaves[index].waitsFor {
                guard let node = nodeByPath[path] else { continue }
                dependents[node].append(Int32(index))
                remaining[index] += 1
            }
            // Kept as edges from here on (`waitsFor` stays, for status reasons): a queued
            // procedure's memory is what counts.
            flat.leaves[index].dependencies = []
        }
        // A holding group takes its hold only once everything its leaves wait for outside it
        // has finished: while it holds, nothing inside it waits for anything outside that
        // could need its categories (docs/scheduling.md, "Why locks never deadlock").
        var holdWaits: [Int: [Int32]] = [:]
        var holdRemaining = [Int32](repeating: 0, count: flat.groups.count)
        for group in flat.groups where !group.holds.isEmpty {
            var outside = Set<Int>()
            // What its leaves wait for, and what a map inside that has not fanned out waits
            // for (its procedures will: Scheduler+Map.swift).
            var waited = group.leaves.map { flat.leaves[$0].waitsFor }
            for map in flat.groups where map.mapPending {
                var ancestor = map.parent
                while let index = ancestor, index != group.index { ancestor = flat.groups[index].parent }
                if ancestor == group.index || map.index == group.index { waited.append(map.waitsFor) }
            }
            for paths in waited {
                for path in paths {
                    guard let node = nodeByPath[path] else { continue }
                    // By the tree, not by leaf ranges: a map not yet expanded has none, and an
                    // empty range lies within every range (simulation, seed 4).
                    var inside = node < leafCount && group.leaves.contains(node)
                    var ancestor = node < leafCount ? nil : flat.groups[node - leafCount].parent
                    while !inside, let index = ancestor {
                        inside = index == group.index
                        ancestor = flat.groups[index].parent
                    }
                    if !inside { outside.insert(node) }
                }
            }
            for node in outside { holdWaits[node, default: []].append(Int32(group.index)) }
            holdRemaining[group.index] = Int32(outside.count)
        }
        // A group's `waitsFor` stays (groups are few): status tells a child's own
        // dependencies apart from its enclosing groups' with it (`ChildSnapshot.dependsOn`).
        for index in flat.groups.indices {
            flat.groups[index].dependencies = []
        }
        var mapWaits: [Int: [Int32]] = [:]
        var mapRemaining: [Int: Int32] = [:]
        var pendingMaps = [Int32](repeating: 0, count: flat.groups.count)
        for group in flat.groups where group.mapPending {
            var count: Int32 = 0
            for path in group.waitsFor {
                guard let node = nodeByPath[path] else { continue }
                mapWaits[node, default: []].append(Int32(group.index))
                count += 1
            }
            mapRemaining[group.index] = count
            var current: Int? = group.index
            while let index = current {
                pendingMaps[index] += 1
                current = flat.groups[index].parent
            }
        }
        self.mapWaits = mapWaits
        self.hasMaps = flat.groups.contains { $0.fanOut?.map != nil }
        self.mapRemaining = mapRemaining
        self.pendingMaps = pendingMaps
        let hasConditions =
            flat.groups.contains { $0.condition != nil || $0.requirement != nil }
            || flat.leaves.contains { $0.condition != nil || $0.requirement != nil }
        self.hasConditions = hasConditions
        self.decidedByCondition = hasConditions ? Self.decidedByCondition(flat, nodeByPath: nodeByPath) : [:]
        self.flat = flat
        self.dependents = dependents
        self.nodeByPath = nodeByPath
        self.remaining = remaining
        self.holdWaits = holdWaits
        self.holdRemaining = holdRemaining
    }
}

/// One accepted group as the scheduler runs it: the plan, and the state of every procedure
/// and nested group. Its job is the group's progress (GroupRun+Progress.swift); the run
/// table holds it and it is changed in place there, never copied on the hot path.
///
/// Invariants:
/// - a child's `remaining` is the number of nodes it still waits for; it is unblocked at 0;
/// - a group's `unfinished` is the number of its procedures not finished; the group (and its
///   outcome, ``outcome(ofGroup:)``) finishes at 0, a nested group before its parent;
/// - a finished child (`stage == .done`) never changes again: cancel is final, and so is
///   every outcome.
struct GroupRun: Sendable {
    /// What never changes once the run is accepted; a reference, so that reading it never
    /// holds a copy of the per-child arrays below (a copy alive during a mutation would make
    /// every mutation copy the whole array).
    var plan: GroupPlan
    /// The index of this run.
    var runIndex: Int { plan.runIndex }
    var id: String { plan.id }
    var name: String { plan.name }
    var fingerprint: Int { plan.fingerprint }
    var submittedAt: Timestamp { plan.submittedAt }
    var sequence: UInt64 { plan.sequence }
    var flat: FlatSpec { plan.flat }
    var dependents: [[Int32]] { plan.dependents }
    var nodeByPath: [String: Int] { plan.nodeByPath }
    var placement: [Int32] { plan.placement }

    var children: [ChildRun]
    var groups: [NestedRun]
    var phase: GroupPhase = .pending
    var reason: String?
    var startedAt: Timestamp?
    var finishedAt: Timestamp?
    /// A client watches it: the scheduler reports every change of its children.
    var watched = false
    /// For a rerun with maps still to be expanded: the earlier run's outputs of their
    /// procedures, by path (Scheduler+Map.swift).
    var reusable: [String: Data]?

    var leafCount: Int { children.count }

    func node(ofGroup group: Int) -> Int { leafCount + group }

    init(plan: GroupPlan) {
        self.plan = plan
        self.children = plan.remaining.map { ChildRun(remaining: $0) }
        self.groups = plan.flat.groups.map { group in
            NestedRun(
                unfinished: group.leaves.count + Int(plan.pendingMaps[group.index]),
                hold: group.holds.isEmpty ? .none : .notRequested, holdWaitsFor: plan.holdRemaining[group.index],
                mapWaitsFor: plan.mapRemaining[group.index] ?? 0)
        }
    }

    /// Fencing tokens an attempt of `leaf` runs under: its own grant's, plus those of the
    /// categories its enclosing groups declare (`exclusive`), which every leaf inside runs
    /// under. The categories a group's hold covers only for a descendant's sake are that
    /// descendant's, with its own token.
    func tokens(forLeaf leaf: Int, own: [String: UInt64]) -> [String: UInt64] {
        var tokens = own
        for group in flat.leaves[leaf].ancestors.reversed() where !groups[group].tokens.isEmpty {
            let declared = flat.groups[group].exclusive
            for category in declared where tokens[category] == nil {
                if let token = groups[group].tokens[category] { tokens[category] = token }
            }
        }
        return tokens
    }
}

extension GroupPlan {
    /// See ``decidedByCondition``: a dependency is decided by conditions when every node that
    /// waits for it itself (the leaf, or an enclosing nested group) has an `if:`.
    static func decidedByCondition(_ flat: FlatSpec, nodeByPath: [String: Int]) -> [Int: Set<Int>] {
        var result: [Int: Set<Int>] = [:]
        for leaf in flat.leaves {
            let groups = leaf.ancestors.filter { $0 != 0 }
            guard leaf.condition != nil || groups.contains(where: { flat.groups[$0].condition != nil }) else {
                continue
            }
            var decided = Set<Int>()
            for path in leaf.waitsFor {
                var owned = false
                var allConditioned = true
                if leaf.waitsFor.prefix(leaf.ownWaitsForCount).contains(path) {
                    owned = true
                    allConditioned = leaf.condition != nil
                }
                for group in groups
                where flat.groups[group].waitsFor.prefix(flat.groups[group].ownWaitsForCount).contains(path) {
                    owned = true
                    if flat.groups[group].condition == nil { allConditioned = false }
                }
                if owned, allConditioned, let node = nodeByPath[path] { decided.insert(node) }
            }
            if !decided.isEmpty { result[leaf.index] = decided }
        }
        return result
    }

    /// Whether `leaf`'s `if:` (or an enclosing group's) decides what the end of `node` means
    /// for it, instead of the default (a failure cancels, a skip skips).
    func conditionDecides(_ leaf: Int, after node: Int) -> Bool {
        hasConditions && decidedByCondition[leaf]?.contains(node) == true
    }

    /// Whether a skip of `node` reaches `leaf` only through sequence order: in a sequence, a
    /// skipped child does not skip the next one (skipped is neither a failure nor a cancel, so
    /// the sequence goes on). True when every node that waits for `node` itself (the leaf or
    /// an enclosing nested group) does so as `node`'s next sibling in a sequence. Only asked
    /// when a dependency was skipped.
    func skipPassesBySequence(_ leaf: Int, after node: Int) -> Bool {
        let target = path(ofNode: node)
        let flatLeaf = flat.leaves[leaf]
        var owners: [(path: String, parent: Int, own: ArraySlice<String>)] = [
            (flatLeaf.path, flatLeaf.group, flatLeaf.waitsFor.prefix(flatLeaf.ownWaitsForCount))
        ]
        for group in flatLeaf.ancestors where group != 0 {
            let flatGroup = flat.groups[group]
            owners.append(
                (flatGroup.path, flatGroup.parent ?? 0, flatGroup.waitsFor.prefix(flatGroup.ownWaitsForCount)))
        }
        var found = false
        for owner in owners where owner.own.contains(target) {
            // Named in `after`, `inject` or an expression, not only followed: the skip holds.
            if names(owner.path, target) { return false }
            let parent = flat.groups[owner.parent]
            guard parent.mode == .sequence, let index = parent.children.firstIndex(of: owner.path), index > 0,
                parent.children[index - 1] == target
            else { return false }
            found = true
        }
        return found
    }

    /// ``conditionDecides(_:after:)`` and ``skipPassesBySequence(_:after:)`` for a map's group
    /// (Scheduler+Map.swift), which decides for the procedures it makes as one of them would:
    /// the owners are the group and its enclosing nested groups.
    func conditionDecides(group: Int, after path: String) -> Bool {
        var owned = false
        for owner in [group] + ancestors(ofGroup: group) where owner != 0 {
            let flatGroup = flat.groups[owner]
            guard flatGroup.waitsFor.prefix(flatGroup.ownWaitsForCount).contains(path) else { continue }
            owned = true
            if flatGroup.condition == nil { return false }
        }
        return owned
    }

    func skipPassesBySequence(group: Int, after target: String) -> Bool {
        var found = false
        for owner in [group] + ancestors(ofGroup: group) where owner != 0 {
            let flatGroup = flat.groups[owner]
            guard flatGroup.waitsFor.prefix(flatGroup.ownWaitsForCount).contains(target) else { continue }
            if names(flatGroup.path, target) { return false }
            let parent = flat.groups[flatGroup.parent ?? 0]
            guard parent.mode == .sequence, let index = parent.children.firstIndex(of: flatGroup.path), index > 0,
                parent.children[index - 1] == target
            else { return false }
            found = true
        }
        return found
    }

    /// Whether the child at `path` names `target`, its sibling, in its own `after`, `inject`
    /// or `if`/`require` (rather than only following it in a sequence).
    func names(_ path: String, _ target: String) -> Bool {
        let slash = path.lastIndex(of: "/")
        let parentPath = slash.map { String(path[..<$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let targetName = target.split(separator: "/").last.map(String.init) ?? target
        guard let child = spec.children(at: parentPath)?.first(where: { $0.name == name }) else { return false }
        if child.dependencyNames.contains(targetName) { return true }
        let expressions: [FlatExpression?]
        if let node = nodeByPath[path], node >= flat.leaves.count {
            let group = flat.groups[node - flat.leaves.count]
            expressions = [group.condition, group.requirement]
        } else if let node = nodeByPath[path] {
            let own = flat.leaves[node].expressions
            expressions = [own?.condition, own?.requirement]
        } else {
            expressions = []
        }
        return expressions.contains { $0?.paths.values.contains(target) == true }
    }

    /// Whether the node at `path` is a map's group (Scheduler+Map.swift).
    func isMap(_ path: String) -> Bool {
        guard let node = nodeByPath[path], node >= flat.leaves.count else { return false }
        return flat.groups[node - flat.leaves.count].fanOut?.map != nil
    }

    /// The path of a node (leaf or group).
    func path(ofNode node: Int) -> String {
        node < flat.leaves.count ? flat.leaves[node].path : flat.groups[node - flat.leaves.count].path
    }

    /// The lock levels for categories `exclusive` of something inside `ancestors` (group
    /// indexes, outermost first): each category from the table of the innermost ancestor that
    /// holds it, else from the cluster table; the cluster first, then outer before inner.
    func lockLevels(for exclusive: [String], ancestors: [Int]) -> [LockLevel] {
        guard !exclusive.isEmpty else { return [] }
        var cluster = Set<String>()
        var scoped: [(Int, Set<String>)] = []
        for category in exclusive {
            if let holder = ancestors.last(where: { flat.groups[$0].holds.contains(category) }) {
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
            + scoped.map { LockLevel(scope: .group(run: runIndex, group: $0.0), categories: $0.1) }
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
}
