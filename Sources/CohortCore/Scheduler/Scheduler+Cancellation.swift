/// Cancelling groups and children.
extension Scheduler {
    /// Cancels a whole group: every attempt in flight gets a cancel naming it, nothing pending
    /// ever starts, waiting lock requests are withdrawn; the group finishes `cancelled` once
    /// every running attempt has reported back. Cancelling a finished group does nothing.
    ///
    /// - Throws: ``SchedulerError`` `notFound` for an unknown group.
    public mutating func cancelGroup(_ id: String, reason: CancellationReason, now: Timestamp) throws(SchedulerError)
        -> [SchedulerAction]
    {
        guard let runIndex = runs.index(of: id) else { throw SchedulerError(.notFound, "no group \"\(id)\"") }
        if emitsRecords { actions.append(.record(.cancelRequested(group: id, path: "", reason: reason, at: now))) }
        cancelGroup(runIndex, 0, reason: reason, now: now)
        settle(now: now)
        return takeActions()
    }

    /// Cancels one child: a procedure (its dependents follow as its group's `onChildFailure`
    /// says) or a nested group (everything inside it). `path` `""` is the whole group.
    ///
    /// - Throws: ``SchedulerError`` `notFound` for an unknown group or path.
    public mutating func cancelChild(_ id: String, path: String, reason: CancellationReason, now: Timestamp)
        throws(SchedulerError)
        -> [SchedulerAction]
    {
        guard let runIndex = runs.index(of: id), let plan = runs[runIndex]?.plan else {
            throw SchedulerError(.notFound, "no group \"\(id)\"")
        }
        guard let node = plan.nodeByPath[path] else {
            throw SchedulerError(.notFound, "group \"\(id)\" has no child \"\(path)\"")
        }
        if emitsRecords {
            actions.append(.record(.cancelRequested(group: id, path: path, reason: reason, at: now)))
        }
        if node < plan.flat.leaves.count {
            cancelLeaf(runIndex, node, reason: reason, cause: .explicit, now: now)
        } else {
            cancelGroup(runIndex, node - plan.flat.leaves.count, reason: reason, now: now)
        }
        settle(now: now)
        return takeActions()
    }

    /// Whether a procedure of group `id` (within the child at `path`; nil or `""` for the
    /// whole group) was sent to a worker that has not yet reported it started or finished.
    /// While one is, a cancel is not final: the worker may still start it before the cancel
    /// reaches it. The coordinator acknowledges a cancel only once this is false, so that no
    /// pending child starts after a client was told its cancel was accepted.
    public func hasUnconfirmedDispatches(_ id: String, path: String?) -> Bool {
        guard let runIndex = runs.index(of: id), let run = runs[runIndex] else { return false }
        let plan = run.plan
        let leaves: Range<Int>
        if let path, !path.isEmpty {
            guard let node = plan.nodeByPath[path] else { return false }
            leaves =
                node < plan.flat.leaves.count
                ? node..<(node + 1) : plan.flat.groups[node - plan.flat.leaves.count].leaves
        } else {
            leaves = plan.flat.groups[0].leaves
        }
        return leaves.contains { run.children[$0].stage == .dispatched }
    }

    /// Cancels group `group` of a run (0: the whole run) and everything inside it.
    mutating func cancelGroup(_ runIndex: Int, _ group: Int, reason: CancellationReason, now: Timestamp) {
        guard let state = runs[runIndex]?.groups[group], !state.phase.isFinished else { return }
        guard let plan = runs[runIndex]?.plan else { return }
        if state.cancelReason == nil { runs[runIndex]?.groups[group].cancelReason = reason }
        // Inner groups count as cancelled too (their outcome is `cancelled`, not `failed`).
        for inner in plan.flat.groups.indices where inner != group && plan.isWithin(inner, group) {
            if runs[runIndex]?.groups[inner].cancelReason == nil,
                runs[runIndex]?.groups[inner].phase.isFinished == false
            {
                runs[runIndex]?.groups[inner].cancelReason = reason
            }
        }
        for leaf in plan.flat.groups[group].leaves {
            cancelLeaf(runIndex, leaf, reason: reason, cause: .group, now: now)
        }
        // A map inside that has not fanned out ends now, without waiting for its producer.
        for inner in plan.flat.groups.indices
        where plan.flat.groups[inner].mapPending && (inner == group || plan.isWithin(inner, group)) {
            work.append(.mapReady(runIndex: runIndex, group: inner))
        }
    }

    /// Cancels one leaf: at once if no worker has it, else by a cancel to the worker that
    /// names the attempt (the leaf finishes when the worker reports back).
    mutating func cancelLeaf(
        _ runIndex: Int, _ leaf: Int, reason: CancellationReason, cause: CancelCause, now: Timestamp
    ) {
        guard let child = runs[runIndex]?.children[leaf], !child.isDone else { return }
        if child.cancelCause == nil { runs[runIndex]?.children[leaf].cancelCause = cause }
        switch child.stage {
        case .dispatched, .started:
            guard child.cancelling == nil, let worker = child.worker else { return }
            runs[runIndex]?.children[leaf].cancelling = reason
            guard let plan = runs[runIndex]?.plan else { return }
            let ref = AttemptRef(
                id: child.attemptID, group: plan.id, path: plan.flat.leaves[leaf].path, attempt: child.attempt)
            actions.append(.cancel(worker, ref, reason: reason))
            withdrawLocalRequests(of: child.attemptID, worker: worker, now: now)
        default:
            finishLeaf(runIndex, leaf, .cancelled, reason: reason, now: now)
        }
    }
}

/// Running attempts, as attempt tokens need them.
extension Scheduler {
    /// Whether `ref` names the current attempt of its child and that attempt is on a worker
    /// and has not ended (a cancel may be under way): what makes its attempt token valid.
    /// With `worker`, the attempt must also be on that worker session.
    public func isRunning(_ ref: AttemptRef, on worker: SessionID? = nil) -> Bool {
        // Field by field through the run table: binding the whole run, or the whole child,
        // would copy (retain and release) every one of its fields.
        guard let location = attempts[ref.id], location.dispatched, runs[location.runIndex]?.id == ref.group,
            location.leaf < runs[location.runIndex]?.children.count ?? 0,
            runs[location.runIndex]?.flat.leaves[location.leaf].path == ref.path,
            runs[location.runIndex]?.children[location.leaf].attemptID == ref.id,
            runs[location.runIndex]?.children[location.leaf].attempt == ref.attempt,
            runs[location.runIndex]?.children[location.leaf].isDone == false
        else { return false }
        return worker == nil || runs[location.runIndex]?.children[location.leaf].worker == worker
    }

    /// Those of `tokens` whose attempts still run (``isRunning(_:on:)``), all in one call.
    public func running<Key: Hashable>(_ tokens: [Key: AttemptRef]) -> [Key: AttemptRef] {
        tokens.filter { isRunning($0.value) }
    }
}
