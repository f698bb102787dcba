import CohortSpec
import Foundation

/// What a finished leaf or group sets off: locks given back, dependents counted down or
/// cancelled (failure policy, injection), groups finished, the run's outcome.
extension Scheduler {
    /// Finishes a leaf for good: releases its locks, updates its groups and propagates.
    /// `at` is when it finished, if not `now` (a worker's report of a result that waited).
    mutating func finishLeaf(
        _ runIndex: Int, _ leaf: Int, _ phase: ChildPhase, message: String? = nil, reason: CancellationReason? = nil,
        output: Data? = nil, at finishedAt: Timestamp? = nil, now: Timestamp
    ) {
        guard let attemptID = runs[runIndex]?.children[leaf].attemptID, runs[runIndex]?.children[leaf].isDone == false
        else { return }
        if attemptID != .none { endAttempt(attemptID, now: now) }
        if runs[runIndex]?.children[leaf].admitted == true { leaveMap(runIndex, leaf) }
        runs[runIndex]?.finishLeaf(
            leaf, phase, message: message ?? reason?.text, reason: reason, output: output, now: finishedAt ?? now,
            work: &work)
        if emitsRecords { recordFinish(runIndex, leaf) }
        if observes, let run = runs[runIndex] {
            observe(.childFinished(kind: run.flat.leaves[leaf].run, run.children[leaf].phase))
        }
        notifyLeaf(runIndex, leaf)
    }

    /// Forgets an attempt: its worker's count, its lock request (granted or waiting) and the
    /// lock requests its procedures made locally.
    mutating func endAttempt(_ attemptID: AttemptID, now: Timestamp) {
        guard let location = attempts.removeValue(forKey: attemptID) else { return }
        runs[location.runIndex]?.children[location.leaf].attemptID = .none
        if location.dispatched, let worker = runs[location.runIndex]?.children[location.leaf].worker {
            attempts.bySession[worker]?.remove(attemptID)
            membership.addInFlight(-1, to: worker)
        }
        var grants: [LockTable.Grant] = []
        for request in attempts.localRequests.removeValue(forKey: attemptID) ?? [] {
            grants += removeLock(.local(attempt: attemptID, request: request), now: now)
        }
        #if DELIBERATE_BUGS
            if keepsEndedAttemptsGrants { return handleGrants(grants, now: now) }
        #endif
        grants += removeLock(.attempt(attemptID), now: now)
        handleGrants(grants, now: now)
    }

    /// Carries on with every request a release completed.
    mutating func handleGrants(_ grants: [LockTable.Grant], now: Timestamp) {
        for grant in grants {
            switch grant.holder {
            case .attempt(let attemptID):
                guard let location = attempts[attemptID],
                    runs[location.runIndex]?.children[location.leaf].stage == .locking
                else { continue }
                enqueue(location.runIndex, location.leaf, now: now)
            case .group(let runIndex, let group):
                holdGranted(runIndex, group, tokens: grant.tokens, now: now)
            case .local(let attemptID, let request):
                guard let location = attempts[attemptID],
                    let worker = runs[location.runIndex]?.children[location.leaf].worker
                else { continue }
                recordLocalGrant(attemptID, request: request, tokens: grant.tokens)
                actions.append(.grant(worker, request: request, tokens: grant.tokens))
            }
        }
    }

    /// A leaf or group finished: its dependents count down, and a failure cancels what the
    /// failure policy (or injection) says.
    mutating func nodeFinished(_ runIndex: Int, _ node: Int, now: Timestamp) {
        guard let plan = runs[runIndex]?.plan else { return }
        for group in plan.holdWaits[node] ?? [] { outsideNodeFinished(runIndex, Int(group)) }
        if !plan.mapWaits.isEmpty {
            for group in plan.mapWaits[node] ?? [] { mapDependencyFinished(runIndex, Int(group)) }
        }
        if node >= plan.flat.leaves.count {
            let group = node - plan.flat.leaves.count
            finishGroup(runIndex, group, now: now)
            guard group != 0 else { return }
        }
        guard let end = nodeEnd(runIndex, node) else { return }
        if !end.succeeded, !end.skipped, end.policy == .cancelGroup, !end.groupCancelled, let parentGroup = end.parent {
            let reason = CancellationReason.dependencyFailed(
                path: end.path, cancelled: !end.failed, policy: .cancelGroup)
            for leaf in plan.flat.groups[parentGroup].leaves {
                cancelLeaf(runIndex, leaf, reason: reason, cause: .propagated, now: now)
            }
            // Nothing may be added to it any more (Scheduler+Growing.swift).
            if runs[runIndex]?.groups[parentGroup].cancelledByPolicy == nil {
                runs[runIndex]?.groups[parentGroup].cancelledByPolicy = reason
            }
            // A map inside that has not fanned out never will.
            for inner in plan.flat.groups.indices
            where plan.flat.groups[inner].mapPending && plan.isWithin(inner, parentGroup) {
                if runs[runIndex]?.groups[inner].cancelReason == nil {
                    runs[runIndex]?.groups[inner].cancelReason = reason
                }
                work.append(.mapReady(runIndex: runIndex, group: inner))
            }
        }
        for dependent in plan.dependents[node] {
            let leaf = Int(dependent)
            guard runs[runIndex]?.children[leaf].isDone == false else { continue }
            runs[runIndex]?.children[leaf].remaining -= 1
            if dependencyEnded(runIndex, leaf, node, end, now: now) { continue }
            if runs[runIndex]?.children[leaf].remaining == 0 {
                work.append(.unblocked(runIndex: runIndex, leaf: leaf))
            } else if runs[runIndex]?.watched == true {
                notifyLeaf(runIndex, leaf)
            }
        }
    }

    /// How a finished node (leaf or nested group) ended, as what waits for it sees it.
    struct NodeEnd {
        var succeeded: Bool
        var failed: Bool
        var skipped: Bool
        /// The `onChildFailure` of the group the node is in.
        var policy: ChildFailurePolicy
        var parent: Int?
        /// It ended because its group (or itself, for a group) was cancelled.
        var groupCancelled: Bool
        var path: String
    }

    /// How finished node `node` ended; nil for the top level or an unknown run.
    func nodeEnd(_ runIndex: Int, _ node: Int) -> NodeEnd? {
        guard let run = runs[runIndex] else { return nil }
        let plan = run.plan
        let leafCount = plan.flat.leaves.count
        if node < leafCount {
            let child = run.children[node]
            let parent = plan.flat.leaves[node].group
            return NodeEnd(
                succeeded: child.phase == .succeeded, failed: child.phase == .failed, skipped: child.phase == .skipped,
                policy: plan.flat.groups[parent].onChildFailure, parent: parent,
                groupCancelled: child.cancelCause == .group, path: plan.path(ofNode: node))
        }
        let group = node - leafCount
        guard group != 0 else { return nil }
        let state = run.groups[group]
        let parent = plan.flat.groups[group].parent
        return NodeEnd(
            succeeded: state.phase == .succeeded && !state.wasSkipped, failed: state.phase == .failed,
            skipped: state.wasSkipped, policy: parent.map { plan.flat.groups[$0].onChildFailure } ?? .cancelDependents,
            parent: parent, groupCancelled: state.cancelReason != nil, path: plan.path(ofNode: node))
    }

    /// What the end of `node` does to `leaf`, which waits for it (its count already went
    /// down): nothing if it succeeded or the leaf's `if:` decides; else the leaf is skipped
    /// (a skipped dependency, GitHub Actions' rule), cancelled (a failed producer it injects
    /// from, or the `cancel-dependents` policy), or goes on (`continue`). Returns whether the
    /// leaf ended.
    mutating func dependencyEnded(_ runIndex: Int, _ leaf: Int, _ node: Int, _ end: NodeEnd, now: Timestamp) -> Bool {
        guard !end.succeeded, let plan = runs[runIndex]?.plan, !plan.conditionDecides(leaf, after: node) else {
            return false
        }
        if end.skipped {
            // A dependent of a skipped child is skipped too, unless its own `if:` decides (then
            // it is exempt above), or it only follows the skipped child in a sequence (which
            // goes on).
            guard !plan.skipPassesBySequence(leaf, after: node) else { return false }
            finishLeaf(runIndex, leaf, .skipped, reason: .skipped("dependency \"\(end.path)\" was skipped"), now: now)
            return true
        }
        if node < plan.flat.leaves.count,
            plan.flat.leaves[leaf].inject.contains(where: { $0.producer == node && $0.gathers == nil })
        {
            cancelLeaf(
                runIndex, leaf,
                reason: end.failed ? .producerFailed(path: end.path) : .producerCancelled(path: end.path),
                cause: .propagated, now: now)
            return true
        }
        guard end.policy == .cancelDependents else { return false }
        cancelLeaf(
            runIndex, leaf, reason: .dependencyFailed(path: end.path, cancelled: !end.failed, policy: end.policy),
            cause: .propagated, now: now)
        return true
    }

    /// A node outside a holding group that its leaves wait for finished: once the last has,
    /// the leaves waiting for the group's hold ask for it.
    private mutating func outsideNodeFinished(_ runIndex: Int, _ group: Int) {
        guard let state = runs[runIndex]?.groups[group] else { return }
        runs[runIndex]?.groups[group].holdWaitsFor -= 1
        guard state.holdWaitsFor == 1, state.hold == .notRequested else { return }
        runs[runIndex]?.groups[group].waitingForHold = []
        for leaf in state.waitingForHold { work.append(.unblocked(runIndex: runIndex, leaf: Int(leaf))) }
    }

    /// Every procedure of a group finished: its outcome, its hold given back; for the top
    /// level, the run's outcome.
    mutating func finishGroup(_ runIndex: Int, _ group: Int, now: Timestamp) {
        guard let state = runs[runIndex]?.groups[group], let id = runs[runIndex]?.id, !state.phase.isFinished else {
            return
        }
        let phase = runs[runIndex]?.outcome(ofGroup: group) ?? .cancelled
        runs[runIndex]?.groups[group].phase = phase
        // Every procedure inside skipped, and every map inside that ended without procedures
        // too (a group of skipped children reads as skipped).
        if group != 0, phase == .succeeded, state.skipped + Int(state.skippedMaps) > 0,
            let plan = runs[runIndex]?.plan, state.skipped == plan.flat.groups[group].leaves.count,
            state.skippedMaps == state.emptyMaps
        {
            runs[runIndex]?.groups[group].wasSkipped = true
        }
        runs[runIndex]?.groups[group].finishedAt = now
        runs[runIndex]?.groups[group].waitingForHold = []
        if state.hold == .requested || state.hold == .granted {
            runs[runIndex]?.groups[group].hold = .released
            handleGrants(removeLock(.group(run: runIndex, group: group), now: now), now: now)
        }
        guard group == 0 else {
            notifyGroup(runIndex, group)
            return
        }
        let reason: String? =
            switch phase {
            case .cancelled: state.cancelReason?.text ?? runs[runIndex]?.firstCancellation()
            case .failed: state.firstFailure
            default: nil
            }
        if let limits = runs[runIndex]?.plan.limits, !limits.isEmpty { locks.undeclare(limits) }
        runs[runIndex]?.phase = phase
        runs[runIndex]?.reason = reason
        runs[runIndex]?.finishedAt = now
        actions.append(.groupFinished(group: id, phase, reason: reason))
        if emitsRecords {
            let code = phase == .cancelled ? state.cancelReason?.code : nil
            actions.append(.record(.groupFinished(id: id, phase, reason: reason, code: code, at: now)))
        }
        runs.finished(runIndex, retention: configuration.finishedGroupRetention)
    }
}
