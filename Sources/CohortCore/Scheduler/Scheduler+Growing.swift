import CohortSpec
import DequeModule

/// Growing groups: children added to a running group (docs/spec.md, "Growing groups";
/// docs/scheduling.md, "Growing groups").
///
/// The mechanism: **insert and renumber**. Added children go at the end of their group's
/// children (the top level or any running nested group), which in the flattened spec is
/// usually in the middle: every later leaf and group moves up. The run's plan is rebuilt from
/// the grown spec (same run index, id, submission time and fingerprint) and every old node is
/// found in it by path. Invariants after a growth:
/// - every old leaf and group is at its new index (same path, same document order), with its
///   state (`ChildRun`, `NestedRun`) unchanged except a group's `unfinished`, which counts the
///   added leaves inside it;
/// - every index held elsewhere — attempt locations, placement queues and parked leaves,
///   retry/repeat and group-timeout timers, pending work, `waitingForHold`, group lock holders
///   and lock scopes, lock timings — names the same node as before;
/// - an addition at the end of the document order (the old append path) moves nothing, so it
///   costs nothing beyond the rebuild.
/// A replay after a restart makes the same additions in the same order before any attempt or
/// grant is restored, so it gives the same indexes.
extension Scheduler {
    /// Limits for additions replayed from the journal: they were checked when made.
    static let replayLimits = SpecLimits(
        maxSpecBytes: .max / 2, maxChildrenPerGroup: .max / 2, maxTotalChildren: .max / 2, maxNestingDepth: .max / 2,
        maxDocumentDepth: .max / 2, maxNodes: .max / 2, maxRetryAttempts: .max / 2, maxNameLength: .max / 2)

    /// The spec group `id` runs now: the submitted one with every addition in place.
    /// - Throws: ``SchedulerError`` `notFound` for an unknown group.
    public func runningSpec(_ id: String) throws(SchedulerError) -> GroupSpec {
        guard let runIndex = runs.index(of: id), let run = runs[runIndex] else {
            throw SchedulerError(.notFound, "no group \"\(id)\"")
        }
        return run.plan.spec
    }

    /// Adds `children` to group `id` (into the nested group at `path`, `""` the top level).
    /// `grown` is the running spec with them in place, validated
    /// (`runningSpec(id).adding(children, into: path)`). The added children run exactly like
    /// submitted ones, and the group finishes only after them.
    ///
    /// - Returns: the added nodes' paths in document order, and the actions (a record first).
    /// - Throws: ``SchedulerError``: `notFound` for an unknown group or path; `invalidRequest`
    ///   for a group (or nested group) that has finished or is being cancelled, or an addition
    ///   that would break the lock rules.
    public mutating func addChildren(
        _ id: String, children: [ChildSpec], into path: String, grown: GroupSpec, now: Timestamp
    ) throws(SchedulerError) -> (paths: [String], actions: [SchedulerAction]) {
        let runIndex = try checkGrowable(id, into: path)
        let paths = try grow(runIndex, grown: grown, into: path, now: now)
        if emitsRecords {
            actions.append(.record(.childrenAdded(group: id, into: path, children: children, at: now)))
        }
        settle(now: now)
        return (paths, takeActions())
    }

    /// Whether children may be added to group `id` (into its nested group at `path`) now:
    /// its run index if so. The coordinator asks before it validates the grown spec, so that a
    /// finished group is refused as finished.
    /// - Throws: ``SchedulerError`` as ``addChildren(_:children:into:grown:now:)``.
    @discardableResult
    public func checkGrowable(_ id: String, into path: String) throws(SchedulerError) -> Int {
        guard let runIndex = runs.index(of: id), let run = runs[runIndex] else {
            throw SchedulerError(.notFound, "no group \"\(id)\"")
        }
        guard !run.phase.isFinished else {
            throw SchedulerError(
                .invalidRequest,
                "group \"\(id)\" has finished (\(run.phase.rawValue)); nothing can be added to a finished group")
        }
        _ = try growthTarget(run, path)
        return runIndex
    }

    /// The index of the group at `path` (`""`: the top level) that children may be added to.
    private func growthTarget(_ run: GroupRun, _ path: String) throws(SchedulerError) -> Int {
        let plan = run.plan
        let target: Int
        if path.isEmpty {
            target = 0
        } else {
            guard let node = plan.nodeByPath[path] else {
                throw SchedulerError(.notFound, "group \"\(plan.id)\" has no nested group \"\(path)\"")
            }
            guard node >= plan.flat.leaves.count else {
                throw SchedulerError(
                    .invalidRequest, "\"\(path)\" is a procedure, not a nested group: children go into groups")
            }
            target = node - plan.flat.leaves.count
            if plan.flat.groups[target].fanOut?.map != nil {
                throw SchedulerError(
                    .invalidRequest,
                    "\"\(path)\" is a map: its procedures are made from its producer's list; add children beside it instead"
                )
            }
        }
        if target != 0, run.groups[target].phase.isFinished {
            throw SchedulerError(
                .invalidRequest,
                "nested group \"\(path)\" of group \"\(plan.id)\" has finished (\(run.groups[target].phase.rawValue)); nothing can be added to it"
            )
        }
        for group in plan.ancestors(ofGroup: target) + [target] {
            guard let reason = run.groups[group].cancelReason ?? run.groups[group].cancelledByPolicy else { continue }
            throw SchedulerError(
                .invalidRequest,
                "group \"\(plan.id)\" is being cancelled (\(reason.text)); nothing can be added to it")
        }
        return target
    }

    /// Grows run `runIndex` to `grown` (its spec with children added to the group at `path`);
    /// the caller settles. Shared with the journal's replay.
    ///
    /// The plan is rebuilt from the grown spec. Every old leaf and group keeps its path and its
    /// document order, so each has a new index (`leafMap[old]`, `groupMap[old]`, both
    /// increasing); the per-leaf and per-group state moves to the new indexes and every index
    /// the scheduler holds elsewhere is renumbered (``renumber(_:leaves:groups:oldLeafCount:)``).
    ///
    /// `expandsMap`: the addition is a map's procedures (or none: the map ends without any),
    /// made by the scheduler itself (Scheduler+Map.swift), which has checked what it needs.
    @discardableResult
    mutating func grow(
        _ runIndex: Int, grown: GroupSpec, into path: String, expandsMap: Bool = false, now: Timestamp
    ) throws(SchedulerError) -> [String] {
        guard let run = runs[runIndex] else { throw SchedulerError(.notFound, "no such group") }
        let plan = run.plan
        let old = plan.flat
        if !expandsMap { _ = try growthTarget(run, path) }
        let flat = flatForPlan(grown)
        let (leafMap, groupMap) = try Self.keptPlaces(old: old, new: flat, expandsMap: expandsMap)
        var isNewLeaf = [Bool](repeating: true, count: flat.leaves.count)
        for leaf in leafMap { isNewLeaf[leaf] = false }
        var isNewGroup = [Bool](repeating: true, count: flat.groups.count)
        for group in groupMap { isNewGroup[group] = false }
        let added = flat.leaves.indices.filter { isNewLeaf[$0] }
        let addedGroups = flat.groups.indices.filter { isNewGroup[$0] }
        // A map's procedures wait only for what the map waited for, which has finished (and
        // which an enclosing hold waited for too): only the categories are checked.
        try Self.checkHolds(old: old, new: flat, groupMap: groupMap, added: expandsMap ? [] : added)

        var placementClasses = [Int32](repeating: 0, count: flat.leaves.count)
        for (oldLeaf, leaf) in leafMap.enumerated() { placementClasses[leaf] = plan.placement[oldLeaf] }
        for leaf in added {
            let spec = flat.leaves[leaf]
            placementClasses[leaf] = placement.classID(
                PlacementClass(kind: spec.run, requires: spec.requires.sorted(), exclusive: !spec.exclusive.isEmpty),
                membership: membership)
        }
        let grownPlan = GroupPlan(
            runIndex: runIndex, id: plan.id, spec: grown, flat: flat, placement: placementClasses,
            sequence: plan.sequence, owner: plan.owner, now: plan.submittedAt, fingerprint: plan.fingerprint)
        // The per-leaf and per-group state in the new order: the old entries at their new
        // indexes, fresh ones for the added nodes.
        var children = grownPlan.remaining.map { ChildRun(remaining: $0) }
        for (oldLeaf, leaf) in leafMap.enumerated() { children[leaf] = run.children[oldLeaf] }
        var groups = flat.groups.map { group in
            NestedRun(
                unfinished: group.leaves.count + Int(grownPlan.pendingMaps[group.index]),
                hold: group.holds.isEmpty ? .none : .notRequested, holdWaitsFor: grownPlan.holdRemaining[group.index],
                mapWaitsFor: grownPlan.mapRemaining[group.index] ?? 0)
        }
        // Groups whose last procedure this growth takes away: a map that ends without any.
        var emptied: [Int] = []
        for (oldGroup, group) in groupMap.enumerated() {
            var state = run.groups[oldGroup]
            let before = state.unfinished
            state.unfinished +=
                flat.groups[group].leaves.count - old.groups[oldGroup].leaves.count
                + Int(grownPlan.pendingMaps[group]) - Int(plan.pendingMaps[oldGroup])
            if before > 0, state.unfinished == 0 { emptied.append(group) }
            state.waitingForHold = state.waitingForHold.map { Int32(leafMap[Int($0)]) }
            if !state.mapQueue.isEmpty { state.mapQueue = Deque(state.mapQueue.map { Int32(leafMap[Int($0)]) }) }
            groups[group] = state
        }
        runs[runIndex]?.plan = grownPlan
        runs[runIndex]?.children = children
        runs[runIndex]?.groups = groups
        renumber(runIndex, leaves: leafMap, groups: groupMap, oldLeafCount: old.leaves.count)

        // What the new nodes wait for that has finished already counts as finished for them.
        for (node, holding) in grownPlan.holdWaits where isFinished(runIndex, node) {
            for group in holding where isNewGroup[Int(group)] {
                runs[runIndex]?.groups[Int(group)].holdWaitsFor -= 1
            }
        }
        for (node, maps) in grownPlan.mapWaits where isFinished(runIndex, node) {
            for group in maps where isNewGroup[Int(group)] {
                runs[runIndex]?.groups[Int(group)].mapWaitsFor -= 1
            }
        }
        for group in addedGroups where flat.groups[group].mapPending && runs[runIndex]?.groups[group].mapWaitsFor == 0 {
            work.append(.mapReady(runIndex: runIndex, group: group))
        }
        // Innermost first: a nested group finishes before its parent.
        for group in emptied.sorted(by: >) {
            work.append(.nodeFinished(runIndex: runIndex, node: flat.leaves.count + group))
        }
        for leaf in added {
            for waited in flat.leaves[leaf].waitsFor {
                guard let node = grownPlan.nodeByPath[waited], isFinished(runIndex, node) else { continue }
                dependencyFinishedBefore(runIndex, leaf, node, now: now)
            }
            guard runs[runIndex]?.children[leaf].isDone == false else { continue }
            if runs[runIndex]?.children[leaf].remaining == 0 {
                work.append(.unblocked(runIndex: runIndex, leaf: leaf))
            } else {
                runs[runIndex]?.children[leaf].phase = .waiting
            }
        }
        for group in addedGroups { notifyGroup(runIndex, group) }
        for leaf in added { notifyLeaf(runIndex, leaf) }
        return added.map { flat.leaves[$0].path } + addedGroups.map { flat.groups[$0].path }
    }

    /// Moves every index of run `runIndex` the scheduler holds outside the run's own arrays to
    /// the grown plan's: attempts, placement queues and parked leaves, timers, pending work,
    /// group lock holders and scopes, lock timings. An index past the old plan's (a stale entry
    /// of an earlier run that had this run index) moves past the new plan's, so it never names
    /// a node of this run.
    private mutating func renumber(_ runIndex: Int, leaves leafMap: [Int], groups groupMap: [Int], oldLeafCount: Int) {
        guard let run = runs[runIndex] else { return }
        let leafCount = run.leafCount
        let groupCount = run.groups.count
        let leaf = { (old: Int) -> Int in old < leafMap.count ? leafMap[old] : old - leafMap.count + leafCount }
        let group = { (old: Int) -> Int in old < groupMap.count ? groupMap[old] : old - groupMap.count + groupCount }
        let node = { (old: Int) -> Int in old < oldLeafCount ? leaf(old) : leafCount + group(old - oldLeafCount) }
        if !work.isEmpty {
            work = Deque(
                work.map { item in
                    switch item {
                    case .unblocked(let r, let old) where r == runIndex: .unblocked(runIndex: r, leaf: leaf(old))
                    case .nodeFinished(let r, let old) where r == runIndex: .nodeFinished(runIndex: r, node: node(old))
                    case .mapReady(let r, let old) where r == runIndex: .mapReady(runIndex: r, group: group(old))
                    default: item
                    }
                })
        }
        let leavesMove = leafMap.enumerated().contains { $0.offset != $0.element }
        let groupsMove = groupMap.enumerated().contains { $0.offset != $0.element }
        if leavesMove {
            attempts.renumberLeaves(ofRun: runIndex, leaf)
            placement.renumberLeaves(ofRun: runIndex, leaf)
        }
        if leavesMove || groupsMove {
            attempts.timers.renameEvents { event in
                switch event {
                case .retry(let r, let old, let attempt) where r == runIndex:
                    .retry(runIndex: r, leaf: leaf(old), attempt: attempt)
                case .groupTimeout(let r, let old) where r == runIndex: .groupTimeout(runIndex: r, group: group(old))
                default: event
                }
            }
        }
        if groupsMove {
            locks.renumberGroups(ofRun: runIndex, group)
            if !lockTimes.isEmpty {
                var renamed: [LockHolder: LockTiming] = [:]
                for (holder, timing) in lockTimes {
                    if case .group(let r, let old) = holder, r == runIndex {
                        renamed[.group(run: r, group: group(old))] = timing
                    } else {
                        renamed[holder] = timing
                    }
                }
                lockTimes = renamed
            }
        }
    }

    /// Whether node `node` (leaf or group) of run `runIndex` has finished.
    private func isFinished(_ runIndex: Int, _ node: Int) -> Bool {
        guard let run = runs[runIndex] else { return false }
        if node < run.leafCount { return run.children[node].isDone }
        return run.groups[node - run.leafCount].phase.isFinished
    }

    /// An added leaf waits for a node that finished before it was added: what the node's
    /// finishing did to its dependents then (``nodeFinished(_:_:now:)``) is done to it now.
    private mutating func dependencyFinishedBefore(_ runIndex: Int, _ leaf: Int, _ node: Int, now: Timestamp) {
        guard runs[runIndex]?.children[leaf].isDone == false else { return }
        runs[runIndex]?.children[leaf].remaining -= 1
        guard let end = nodeEnd(runIndex, node) else { return }
        _ = dependencyEnded(runIndex, leaf, node, end, now: now)
    }

    /// The spec flattened for a plan (as ``addRun(_:id:flat:sequence:owner:submittedAt:declaresLimits:)``
    /// does, deliberate bugs of the simulation included).
    func flatForPlan(_ spec: GroupSpec) -> FlatSpec {
        var flat = spec.flattened()
        #if DELIBERATE_BUGS
            // SchedulerMutation.deadlockHolds, as in addRun.
            if mutated(.deadlockHolds) {
                for index in flat.groups.indices { flat.groups[index].holds = flat.groups[index].exclusive }
            }
        #endif
        return flat
    }

    /// Where the old leaves and groups are in the grown spec: every one must still be there,
    /// by path, in the same document order (an addition only inserts), waiting for the same
    /// nodes (a name in `after`, `inject` or an expression is looked up among siblings first:
    /// an added child must not take over a name an existing child uses for another), and
    /// something must be added (or a map expanded). Returns old index → new index, for leaves
    /// and for groups.
    private static func keptPlaces(old: FlatSpec, new: FlatSpec, expandsMap: Bool) throws(SchedulerError) -> (
        leaves: [Int], groups: [Int]
    ) {
        var leafByPath: [String: Int] = [:]
        for leaf in new.leaves { leafByPath[leaf.path] = leaf.index }
        var groupByPath: [String: Int] = [:]
        for group in new.groups { groupByPath[group.path] = group.index }
        let leaves = old.leaves.map { leafByPath[$0.path] ?? -1 }
        let groups = old.groups.map { groupByPath[$0.path] ?? -1 }
        func kept(_ map: [Int]) -> Bool {
            map.allSatisfy { $0 >= 0 } && zip(map, map.dropFirst()).allSatisfy { $0 < $1 }
        }
        guard kept(leaves), kept(groups) else {
            throw SchedulerError(.invalidRequest, "the grown spec does not keep every existing child in place")
        }
        guard expandsMap || new.leaves.count > old.leaves.count || new.groups.count > old.groups.count else {
            throw SchedulerError(.invalidRequest, "there are no children to add")
        }
        func shadowing(_ path: String, _ before: [String], _ after: [String]) -> SchedulerError? {
            guard before != after else { return nil }
            let moved = zip(before, after).first { $0 != $1 }
            let detail = moved.map { " (\"\($0.0)\" would now be \"\($0.1)\")" } ?? ""
            return SchedulerError(
                .invalidRequest,
                "an added child would change what \"\(path)\" waits for\(detail): a name is looked up among siblings first; give the added child another name"
            )
        }
        for (index, leaf) in leaves.enumerated() {
            let before = old.leaves[index]
            let after = new.leaves[leaf]
            if let error = shadowing(before.path, before.waitsFor, after.waitsFor) { throw error }
            if let error = shadowing(
                before.path, before.inject.map(\.producerPath), after.inject.map(\.producerPath))
            {
                throw error
            }
        }
        for (index, group) in groups.enumerated() {
            if let error = shadowing(old.groups[index].path, old.groups[index].waitsFor, new.groups[group].waitsFor) {
                throw error
            }
        }
        return (leaves, groups)
    }

    /// The locks' deadlock-freedom (docs/scheduling.md, "Why locks never deadlock"): a group
    /// that holds categories holds everything its descendants declare, taken at once, and
    /// nothing inside waits for anything outside while it holds. An added child inside such a
    /// group may use only the categories it already holds, and wait only for nodes inside it.
    private static func checkHolds(old: FlatSpec, new: FlatSpec, groupMap: [Int], added: [Int]) throws(SchedulerError) {
        var oldGroup: [Int: Int] = [:]
        for (index, group) in groupMap.enumerated() { oldGroup[group] = index }
        for (index, group) in groupMap.enumerated() where new.groups[group].holds != old.groups[index].holds {
            let extra = new.groups[group].holds.filter { !old.groups[index].holds.contains($0) }
            let name = old.groups[index].path.isEmpty ? "the top-level group" : "group \"\(old.groups[index].path)\""
            throw SchedulerError(
                .invalidRequest,
                "a child added inside \(name), which holds \(old.groups[index].holds), may use only those categories; the children added use \(extra)"
            )
        }
        for leaf in added.map({ new.leaves[$0] }) {
            for ancestor in leaf.ancestors {
                guard let index = oldGroup[ancestor], !old.groups[index].holds.isEmpty else { continue }
                let inside = old.groups[index].path
                // What the holding group waits for itself, its hold waits for too.
                let outside = Set(old.groups[index].waitsFor)
                for waited in leaf.waitsFor
                where !(inside.isEmpty || waited.hasPrefix(inside + "/")) && !outside.contains(waited) {
                    throw SchedulerError(
                        .invalidRequest,
                        "\"\(leaf.path)\" may not wait for \"\(waited)\": it is added inside group \"\(inside)\", which holds \(old.groups[index].holds), and a child inside a holding group may wait only for children inside it"
                    )
                }
            }
        }
    }
}
