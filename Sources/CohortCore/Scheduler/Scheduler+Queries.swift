import CohortSpec
import Foundation

/// What clients ask about: groups, children, results, workers, locks.
extension Scheduler {
    /// Every known group (running, and finished ones still kept), oldest submission first,
    /// without children.
    public func groupOverviews() -> [GroupSnapshot] {
        runs.values.sorted { $0.sequence < $1.sequence }.map { overview($0) }
    }

    /// The groups held (running, and finished ones still kept) that `query` selects, newest
    /// submission first, at most its ``GroupQuery/effectiveLimit``; without children.
    public func groupOverviews(matching query: GroupQuery) -> [GroupSnapshot] {
        query.merge(held: runs.values.map { overview($0) }.filter(query.matches), journaled: [])
    }

    /// One group with every child (nested groups and procedures), depth-first in spec order.
    /// - Throws: ``SchedulerError`` `notFound`.
    public func groupSnapshot(_ id: String) throws(SchedulerError) -> GroupSnapshot {
        guard let runIndex = runs.index(of: id), let run = runs[runIndex] else {
            throw SchedulerError(.notFound, "no group \"\(id)\"")
        }
        var snapshot = overview(run)
        snapshot.children.reserveCapacity(run.leafCount + run.flat.groups.count - 1)
        appendChildren(of: 0, in: run, to: &snapshot.children)
        return snapshot
    }

    /// The state a group (`path` nil or `""`) or one child of it has finished in; nil while it
    /// has not finished, or for an unknown group or path. Costs one node, not a snapshot.
    public func finishedPhase(_ id: String, path: String?) -> ChildPhase? {
        guard let runIndex = runs.index(of: id), let run = runs[runIndex] else { return nil }
        guard let node = run.nodeByPath[path ?? ""] else { return nil }
        let phase =
            node < run.leafCount ? leafSnapshot(run, node).phase : groupSnapshot(run, node - run.leafCount).phase
        return phase.isFinished ? phase : nil
    }

    /// The CURVE key (Z85) of the client that submitted group `id`: `.some(nil)` for a group
    /// submitted without CURVE, `nil` for no such group.
    public func groupOwner(_ id: String) -> String?? {
        guard let runIndex = runs.index(of: id), let run = runs[runIndex] else { return nil }
        return .some(run.plan.owner)
    }

    /// One child's status (a procedure or nested group).
    /// - Throws: ``SchedulerError`` `notFound`.
    public func childSnapshot(_ id: String, path: String) throws(SchedulerError) -> ChildSnapshot {
        guard let runIndex = runs.index(of: id), let run = runs[runIndex] else {
            throw SchedulerError(.notFound, "no group \"\(id)\"")
        }
        guard let node = run.nodeByPath[path], path != "" else {
            throw SchedulerError(.notFound, "group \"\(id)\" has no child \"\(path)\"")
        }
        return node < run.leafCount ? leafSnapshot(run, node) : groupSnapshot(run, node - run.leafCount)
    }

    /// The attempt of procedure `path` that is on a worker now (sent to it, or started), with
    /// its id and worker; nil while none is (before the first, between a retry's attempts,
    /// once finished), or for an unknown group or path. Costs one node.
    public func liveAttempt(_ id: String, path: String) -> (attempt: UInt32, id: AttemptID, worker: SessionID?)? {
        guard let runIndex = runs.index(of: id), let run = runs[runIndex], let node = run.nodeByPath[path],
            node < run.leafCount
        else { return nil }
        let child = run.children[node]
        guard child.stage == .dispatched || child.stage == .started else { return nil }
        return (child.sentAttempt, child.attemptID, child.worker)
    }

    /// A finished child's outcome; for a nested group or the whole group (`path` nil or
    /// `""`): succeeded with an object of every procedure's output by path, or the group's
    /// failure or cancellation.
    /// - Throws: ``SchedulerError`` `notFound`, also if it has not finished (docs/protocol.md §7).
    public func result(_ id: String, path: String?) throws(SchedulerError) -> AttemptOutcome {
        guard let runIndex = runs.index(of: id), let run = runs[runIndex] else {
            throw SchedulerError(.notFound, "no group \"\(id)\"")
        }
        let path = path ?? ""
        guard let node = run.nodeByPath[path] else {
            throw SchedulerError(.notFound, "group \"\(id)\" has no child \"\(path)\"")
        }
        if node < run.leafCount {
            let child = run.children[node]
            switch child.phase {
            case .succeeded: return .succeeded(output: child.output ?? Data("null".utf8))
            case .failed: return .failed(error: child.error ?? "failed")
            case .cancelled: return .cancelled(reason: child.cancelReason ?? .custom(child.error ?? "cancelled"))
            case .skipped: return .cancelled(reason: child.cancelReason ?? .skipped(child.error ?? "skipped"))
            default: throw SchedulerError(.notFound, "\"\(path)\" in group \"\(id)\" has not finished (\(child.phase))")
            }
        }
        let group = node - run.leafCount
        let state = run.groups[group]
        let name = path.isEmpty ? "group \"\(id)\"" : "\"\(path)\" in group \"\(id)\""
        if state.wasSkipped { return .cancelled(reason: .skipped("every child of \(name) was skipped")) }
        switch state.phase {
        case .succeeded:
            var outputs: [String: JSONValue] = [:]
            for leaf in run.flat.groups[group].leaves {
                let data = run.children[leaf].output ?? Data("null".utf8)
                outputs[run.flat.leaves[leaf].path] = (try? JSONValue(jsonData: data)) ?? .null
            }
            return .succeeded(output: JSONValue.object(outputs).jsonData())
        case .failed:
            return .failed(error: (group == 0 ? run.reason : state.firstFailure) ?? "failed")
        case .cancelled:
            // A group that was cancelled reads as its cancel (a group's reason is its cancel's text
            // when it has one, see finishGroup); one that ended cancelled because its children
            // were, as the words it finished with.
            if let reason = state.cancelReason { return .cancelled(reason: reason) }
            return .cancelled(reason: .custom((group == 0 ? run.reason : nil) ?? "cancelled"))
        case .pending, .running:
            throw SchedulerError(.notFound, "\(name) has not finished (\(state.phase))")
        }
    }

    /// Why no connected worker could run some of `flat`'s procedures (a kind nobody offers,
    /// or not with the labels it requires), one line per reason; empty if every one could run
    /// now. What a submission's warnings say, without submitting.
    public func unplaceable(_ flat: FlatSpec) -> [String] {
        var reasons: [String] = []
        var seen = Set<PlacementClass>()
        for leaf in flat.leaves {
            let placement = PlacementClass(kind: leaf.run, requires: leaf.requires.sorted(), exclusive: false)
            guard seen.insert(placement).inserted,
                let reason = Placement.unplaceableReason(placement, membership: membership),
                !reasons.contains(reason)
            else { continue }
            reasons.append(reason)
        }
        return reasons
    }

    /// Connected workers by id, then recently departed ones.
    public func workerRecords() -> [WorkerRecord] {
        membership.workers.values.sorted { $0.id < $1.id } + membership.departed
    }

    /// The cluster lock table, category by category, with worker names resolved by the caller.
    public func lockSnapshot() -> [LockSnapshot] { locks.snapshot() }

    /// A worker session's name, also after it left.
    public func workerName(_ id: SessionID) -> String? { workerNames[id] }

    // MARK: Building snapshots

    private func overview(_ run: GroupRun) -> GroupSnapshot {
        var snapshot = GroupSnapshot(
            id: run.id, name: run.name, phase: run.phase, submittedAt: run.submittedAt, startedAt: run.startedAt,
            finishedAt: run.finishedAt, reason: run.reason, children: [])
        snapshot.priority = run.plan.priority
        return snapshot
    }

    private func appendChildren(of group: Int, in run: GroupRun, to list: inout [ChildSnapshot]) {
        for path in run.flat.groups[group].children {
            guard let node = run.nodeByPath[path] else { continue }
            if node < run.leafCount {
                list.append(leafSnapshot(run, node))
            } else {
                list.append(groupSnapshot(run, node - run.leafCount))
                appendChildren(of: node - run.leafCount, in: run, to: &list)
            }
        }
    }

    func leafSnapshot(_ run: GroupRun, _ leaf: Int) -> ChildSnapshot {
        let child = run.children[leaf]
        let flatLeaf = run.flat.leaves[leaf]
        var phase = child.phase
        var reason: String?
        switch child.stage {
        case .blocked:
            let waits = flatLeaf.waitsFor.filter { path in
                guard let node = run.nodeByPath[path] else { return false }
                return node < run.leafCount
                    ? !run.children[node].isDone : !run.groups[node - run.leafCount].phase.isFinished
            }
            reason = waits.isEmpty ? nil : "waiting for " + waits.map { "\"\($0)\"" }.joined(separator: ", ")
        case .awaitingHold:
            let group = flatLeaf.ancestors.first {
                run.groups[$0].hold == .requested
                    || (run.groups[$0].hold == .notRequested && run.groups[$0].holdWaitsFor > 0)
            }
            reason = group.map { holdReason(run, $0) }
        case .parked:
            reason =
                Placement.unplaceableReason(placement.classes[Int(run.placement[leaf])], membership: membership)
                ?? "waiting for a worker"
        case .locking:
            reason = lockReason(.attempt(child.attemptID), categories: flatLeaf.exclusive)
        case .queued:
            if run.placement.indices.contains(leaf),
                let why = Placement.unplaceableReason(
                    placement.classes[Int(run.placement[leaf])], membership: membership)
            {
                phase = .waiting
                reason = why
            }
        case .retryWait where child.repeatWait:
            let max = flatLeaf.repeating.map { " of at most \($0.max)" } ?? ""
            reason = "repeating after run \(child.repeatedRuns)\(max): \(child.error ?? "until was false")"
        case .retryWait:
            reason = "retrying after attempt \(child.attempt) ended: \(child.error ?? "failed")"
        case .throttled:
            let group = run.flat.groups[flatLeaf.group]
            let limit = group.fanOut?.map?.map.maxParallel ?? 0
            reason = "waiting for a place: map \"\(group.path)\" runs at most \(limit) at a time (maxParallel)"
        case .dispatched, .started, .done:
            break
        }
        return ChildSnapshot(
            name: flatLeaf.name, path: flatLeaf.path, isGroup: false, phase: phase, worker: child.worker,
            workerName: child.worker.flatMap { workerNames[$0] }, attempt: child.sentAttempt,
            error: child.isDone || (child.stage == .retryWait && !child.repeatWait)
                ? child.error : child.cancelling.map { "cancelling: \($0.text)" },
            startedAt: child.startedAt, finishedAt: child.finishedAt, waitingReason: reason,
            outputTruncated: child.outputTruncated,
            dependsOn: ownDependencies(flatLeaf.waitsFor, parent: run.flat.groups[flatLeaf.group]), kind: flatLeaf.run,
            earlierAttempts: child.earlier ?? [])
    }

    /// What a node waits for itself: `waitsFor` without what its enclosing group waits for
    /// (which `waitsFor` repeats).
    private func ownDependencies(_ waitsFor: [String], parent: FlatGroup?) -> [String] {
        guard let parent, !parent.waitsFor.isEmpty else { return waitsFor }
        return waitsFor.filter { !parent.waitsFor.contains($0) }
    }

    func groupSnapshot(_ run: GroupRun, _ group: Int) -> ChildSnapshot {
        let state = run.groups[group]
        let flatGroup = run.flat.groups[group]
        let error: String? =
            switch state.phase {
            case .failed: state.firstFailure
            case .cancelled: state.cancelReason?.text ?? state.endReason ?? "cancelled"
            case .succeeded where state.wasSkipped: state.endReason
            default: nil
            }
        var phase: ChildPhase = .pending
        var reason: String?
        switch state.phase {
        case .pending:
            if state.hold == .requested {
                phase = .waiting
                reason = holdReason(run, group)
            }
        case .running: phase = .running
        case .succeeded: phase = state.wasSkipped ? .skipped : .succeeded
        case .failed: phase = .failed
        case .cancelled: phase = .cancelled
        }
        return ChildSnapshot(
            name: flatGroup.name, path: flatGroup.path, isGroup: true, phase: phase, error: error,
            startedAt: state.startedAt, finishedAt: state.finishedAt, waitingReason: reason,
            dependsOn: ownDependencies(flatGroup.waitsFor, parent: flatGroup.parent.map { run.flat.groups[$0] }))
    }

    private func holdReason(_ run: GroupRun, _ group: Int) -> String {
        let name = run.flat.groups[group].path.isEmpty ? "the group" : "group \"\(run.flat.groups[group].path)\""
        if run.groups[group].hold == .notRequested {
            return "\(name) takes its locks (\(run.flat.groups[group].holds.joined(separator: ", "))) once what its "
                + "children wait for outside it has finished"
        }
        let why = lockReason(.group(run: run.runIndex, group: group), categories: run.flat.groups[group].holds)
        return "\(name) \(why)"
    }

    private func lockReason(_ holder: LockHolder, categories: [String]) -> String {
        for category in categories {
            if let current = locks.holder(of: category), current != holder {
                return "waiting for lock \(category) held by \(describe(current))"
            }
        }
        return "waiting for lock " + categories.joined(separator: ", ")
    }

    private func describe(_ holder: LockHolder) -> String {
        switch holder {
        case .attempt(let attemptID):
            guard let location = attempts[attemptID], let run = runs[location.runIndex] else { return "an attempt" }
            return "\(run.id)/\(run.flat.leaves[location.leaf].path)"
        case .group(let runIndex, let group):
            guard let run = runs[runIndex] else { return "a group" }
            let path = run.flat.groups[group].path
            return path.isEmpty ? run.id : "\(run.id)/\(path)"
        case .local(let attemptID, _):
            guard let location = attempts[attemptID], let run = runs[location.runIndex] else { return "a procedure" }
            let worker = run.children[location.leaf].worker
            return "a procedure of \(run.id)/\(run.flat.leaves[location.leaf].path) on "
                + (worker.map { workerNames[$0] ?? $0.description } ?? "its worker")
        }
    }
}
