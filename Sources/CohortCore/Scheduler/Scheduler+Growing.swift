import CohortSpec

/// Growing groups: children added to a running group (docs/spec.md, "Growing groups";
/// docs/scheduling.md, "Growing groups").
///
/// The mechanism: **append**. Added children go at the end of their group's children, and
/// only where that is also the end of the whole spec's document order (the top level, or a
/// nested group that is last in document order), so the grown spec flattens to the old leaves
/// and groups with the same indexes followed by the new ones. The run's plan is rebuilt from
/// the grown spec (same run index, id, submission time and fingerprint); every per-leaf and
/// per-group reference (attempts, placement queues, lock owners, timers, `waitingForHold`)
/// keeps its index, and the per-leaf and per-group state arrays only grow. A replay after a
/// restart appends the same children in the same order, so it gives the same indexes.
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
    ///   for a group (or nested group) that has finished or is being cancelled, a nested group
    ///   that is not last in document order, or an addition that would break the lock rules.
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
        }
        if target != 0, run.groups[target].phase.isFinished {
            throw SchedulerError(
                .invalidRequest,
                "nested group \"\(path)\" of group \"\(plan.id)\" has finished (\(run.groups[target].phase.rawValue)); nothing can be added to it"
            )
        }
        for group in plan.ancestors(ofGroup: target) + [target] where run.groups[group].cancelReason != nil {
            throw SchedulerError(
                .invalidRequest,
                "group \"\(plan.id)\" is being cancelled (\(run.groups[group].cancelReason?.text ?? "")); nothing can be added to it"
            )
        }
        return target
    }

    /// Grows run `runIndex` to `grown` (its spec with children appended to the group at
    /// `path`); the caller settles. Shared with the journal's replay.
    @discardableResult
    mutating func grow(_ runIndex: Int, grown: GroupSpec, into path: String, now: Timestamp) throws(SchedulerError)
        -> [String]
    {
        guard let run = runs[runIndex] else { throw SchedulerError(.notFound, "no such group") }
        let plan = run.plan
        let old = plan.flat
        let target = try growthTarget(run, path)
        let flat = grown.flattened()
        try Self.checkAppended(old: old, new: flat, target: target, path: path)
        try Self.checkHolds(old: old, new: flat)

        var placementClasses = plan.placement
        for leaf in flat.leaves[old.leaves.count...] {
            placementClasses.append(
                placement.classID(
                    PlacementClass(
                        kind: leaf.run, requires: leaf.requires.sorted(), exclusive: !leaf.exclusive.isEmpty),
                    membership: membership))
        }
        let grownPlan = GroupPlan(
            runIndex: runIndex, id: plan.id, spec: grown, flat: flat, placement: placementClasses,
            sequence: plan.sequence, owner: plan.owner, now: plan.submittedAt, fingerprint: plan.fingerprint)
        runs[runIndex]?.plan = grownPlan
        for group in old.groups.indices {
            runs[runIndex]?.groups[group].unfinished += flat.groups[group].leaves.count - old.groups[group].leaves.count
        }
        for group in flat.groups[old.groups.count...] {
            runs[runIndex]?.groups.append(
                NestedRun(
                    unfinished: group.leaves.count, hold: group.holds.isEmpty ? .none : .notRequested,
                    holdWaitsFor: grownPlan.holdRemaining[group.index]))
        }
        let added = old.leaves.count..<flat.leaves.count
        for leaf in added { runs[runIndex]?.children.append(ChildRun(remaining: grownPlan.remaining[leaf])) }
        // What the new nodes wait for that has finished already counts as finished for them.
        for (node, groups) in grownPlan.holdWaits where isFinished(runIndex, node) {
            for group in groups where Int(group) >= old.groups.count {
                runs[runIndex]?.groups[Int(group)].holdWaitsFor -= 1
            }
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
        for group in old.groups.count..<flat.groups.count { notifyGroup(runIndex, group) }
        for leaf in added { notifyLeaf(runIndex, leaf) }
        return flat.leaves[added].map(\.path) + flat.groups[old.groups.count...].map(\.path)
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
        guard let run = runs[runIndex], !run.children[leaf].isDone else { return }
        let plan = run.plan
        runs[runIndex]?.children[leaf].remaining -= 1
        let succeeded: Bool
        let failed: Bool
        let policy: ChildFailurePolicy
        if node < run.leafCount {
            succeeded = run.children[node].phase == .succeeded
            failed = run.children[node].phase == .failed
            policy = plan.flat.groups[plan.flat.leaves[node].group].onChildFailure
        } else {
            let group = node - run.leafCount
            succeeded = run.groups[group].phase == .succeeded
            failed = run.groups[group].phase == .failed
            policy = plan.flat.groups[group].parent.map { plan.flat.groups[$0].onChildFailure } ?? .cancelDependents
        }
        guard !succeeded else { return }
        let path = plan.path(ofNode: node)
        if node < run.leafCount, plan.flat.leaves[leaf].inject.contains(where: { $0.producer == node }) {
            cancelLeaf(
                runIndex, leaf, reason: failed ? .producerFailed(path: path) : .producerCancelled(path: path),
                cause: .propagated, now: now)
        } else if policy != .continue {
            cancelLeaf(
                runIndex, leaf, reason: .dependencyFailed(path: path, cancelled: !failed, policy: .cancelDependents),
                cause: .propagated, now: now)
        }
    }

    /// The grown spec must flatten to the old leaves and groups, same paths and indexes,
    /// followed by the new ones: the target group must be last in document order.
    private static func checkAppended(old: FlatSpec, new: FlatSpec, target: Int, path: String) throws(SchedulerError) {
        let prefix =
            new.leaves.count >= old.leaves.count && new.groups.count >= old.groups.count
            && zip(old.leaves, new.leaves).allSatisfy { $0.path == $1.path }
            && zip(old.groups, new.groups).allSatisfy { $0.path == $1.path }
        guard prefix else {
            throw SchedulerError(
                .invalidRequest,
                "children can be added only to a group that is last in document order: nested group \"\(path)\" is followed by other children (add them to the top level, or to the last nested group)"
            )
        }
        guard new.leaves.count > old.leaves.count || new.groups.count > old.groups.count else {
            throw SchedulerError(.invalidRequest, "there are no children to add")
        }
    }

    /// The locks' deadlock-freedom (docs/scheduling.md, "Why locks never deadlock"): a group
    /// that holds categories holds everything its descendants declare, taken at once, and
    /// nothing inside waits for anything outside while it holds. An added child inside such a
    /// group may use only the categories it already holds, and wait only for nodes inside it.
    private static func checkHolds(old: FlatSpec, new: FlatSpec) throws(SchedulerError) {
        for group in old.groups.indices where new.groups[group].holds != old.groups[group].holds {
            let extra = new.groups[group].holds.filter { !old.groups[group].holds.contains($0) }
            let name = old.groups[group].path.isEmpty ? "the top-level group" : "group \"\(old.groups[group].path)\""
            throw SchedulerError(
                .invalidRequest,
                "a child added inside \(name), which holds \(old.groups[group].holds), may use only those categories; the children added use \(extra)"
            )
        }
        for leaf in new.leaves[old.leaves.count...] {
            for ancestor in leaf.ancestors where ancestor < old.groups.count && !old.groups[ancestor].holds.isEmpty {
                let inside = old.groups[ancestor].path
                for waited in leaf.waitsFor where !(inside.isEmpty || waited.hasPrefix(inside + "/")) {
                    throw SchedulerError(
                        .invalidRequest,
                        "\"\(leaf.path)\" may not wait for \"\(waited)\": it is added inside group \"\(inside)\", which holds \(old.groups[ancestor].holds), and a child inside a holding group may wait only for children inside it"
                    )
                }
            }
        }
    }
}
