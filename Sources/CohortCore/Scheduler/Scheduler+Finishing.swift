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
        runs[runIndex]?.finishLeaf(
            leaf, phase, message: reason?.text ?? message, reason: reason, output: output, now: finishedAt ?? now,
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
        #if DEBUG
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
        let leafCount = plan.flat.leaves.count
        let succeeded: Bool
        let policy: ChildFailurePolicy
        let parentGroup: Int?
        let failed: Bool
        let skipped: Bool
        var groupCancelled = false
        if node < leafCount {
            guard let child = runs[runIndex]?.children[node] else { return }
            succeeded = child.phase == .succeeded
            failed = child.phase == .failed
            skipped = child.phase == .skipped
            parentGroup = plan.flat.leaves[node].group
            policy = plan.flat.groups[plan.flat.leaves[node].group].onChildFailure
            groupCancelled = child.cancelCause == .group
        } else {
            let group = node - leafCount
            finishGroup(runIndex, group, now: now)
            guard group != 0, let state = runs[runIndex]?.groups[group] else { return }
            succeeded = state.phase == .succeeded && !state.wasSkipped
            failed = state.phase == .failed
            skipped = state.wasSkipped
            parentGroup = plan.flat.groups[group].parent
            policy = parentGroup.map { plan.flat.groups[$0].onChildFailure } ?? .cancelDependents
            groupCancelled = state.cancelReason != nil
        }
        let path = plan.path(ofNode: node)

        if !succeeded, !skipped, policy == .cancelGroup, !groupCancelled, let parentGroup {
            let reason = CancellationReason.dependencyFailed(path: path, cancelled: !failed, policy: .cancelGroup)
            for leaf in plan.flat.groups[parentGroup].leaves {
                cancelLeaf(runIndex, leaf, reason: reason, cause: .propagated, now: now)
            }
        }
        for dependent in plan.dependents[node] {
            let leaf = Int(dependent)
            guard runs[runIndex]?.children[leaf].isDone == false else { continue }
            runs[runIndex]?.children[leaf].remaining -= 1
            if !succeeded, !plan.conditionDecides(leaf, after: node) {
                if skipped {
                    // GitHub Actions' rule: a dependent of a skipped child is skipped too,
                    // unless its own `if:` decides (then it is exempt above), or it only
                    // follows the skipped child in a sequence (which goes on).
                    if !plan.skipPassesBySequence(leaf, after: node) {
                        finishLeaf(
                            runIndex, leaf, .skipped, reason: .skipped("dependency \"\(path)\" was skipped"), now: now)
                        continue
                    }
                } else if node < leafCount,
                    plan.flat.leaves[leaf].inject.contains(where: { $0.producer == node && $0.gathers == nil })
                {
                    cancelLeaf(
                        runIndex, leaf, reason: failed ? .producerFailed(path: path) : .producerCancelled(path: path),
                        cause: .propagated, now: now)
                    continue
                }
                if !skipped, policy == .cancelDependents {
                    cancelLeaf(
                        runIndex, leaf, reason: .dependencyFailed(path: path, cancelled: !failed, policy: policy),
                        cause: .propagated, now: now)
                    continue
                }
            }
            if runs[runIndex]?.children[leaf].remaining == 0 {
                work.append(.unblocked(runIndex: runIndex, leaf: leaf))
            } else if runs[runIndex]?.watched == true {
                notifyLeaf(runIndex, leaf)
            }
        }
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
    private mutating func finishGroup(_ runIndex: Int, _ group: Int, now: Timestamp) {
        guard let state = runs[runIndex]?.groups[group], let id = runs[runIndex]?.id, !state.phase.isFinished else {
            return
        }
        let phase = runs[runIndex]?.outcome(ofGroup: group) ?? .cancelled
        runs[runIndex]?.groups[group].phase = phase
        if group != 0, phase == .succeeded, state.skipped > 0, let plan = runs[runIndex]?.plan,
            runs[runIndex]?.groups[group].skipped == plan.flat.groups[group].leaves.count
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
        if emitsRecords { actions.append(.record(.groupFinished(id: id, phase, reason: reason, at: now))) }
        runs.finished(runIndex, retention: configuration.finishedGroupRetention)
    }
}
