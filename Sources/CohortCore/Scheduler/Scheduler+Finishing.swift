import Foundation
import CohortSpec

/// What a finished leaf or group sets off: locks given back, dependents counted down or
/// cancelled (failure policy, injection), groups finished, the run's outcome.
extension Scheduler {
    /// Finishes a leaf for good: releases its locks, updates its groups and propagates.
    mutating func finishLeaf(
        _ slot: Int, _ leaf: Int, _ phase: ChildPhase, message: String? = nil, output: Data? = nil, now: Timestamp
    ) {
        guard runs[slot] != nil, !runs[slot]!.children[leaf].isDone else { return }
        let taskID = runs[slot]!.children[leaf].taskID
        if taskID != 0 { endAttempt(taskID, now: now) }
        runs[slot]!.children[leaf].stage = .done
        runs[slot]!.children[leaf].phase = phase
        runs[slot]!.children[leaf].finishedAt = now
        runs[slot]!.children[leaf].output = output
        runs[slot]!.children[leaf].input = nil
        runs[slot]!.children[leaf].cancelling = nil
        runs[slot]!.children[leaf].attemptErrors = []
        if phase != .succeeded { runs[slot]!.children[leaf].error = message }
        if recordsFinishes { recordFinish(slot, leaf) }
        notifyLeaf(slot, leaf)

        let plan = runs[slot]!.plan
        let path = plan.flat.leaves[leaf].path
        for group in plan.flat.leaves[leaf].ancestors {
            runs[slot]!.groups[group].unfinished -= 1
            switch phase {
            case .failed:
                runs[slot]!.groups[group].failed += 1
                if runs[slot]!.groups[group].firstFailure == nil {
                    runs[slot]!.groups[group].firstFailure = "\"\(path)\" failed: \(message ?? "unknown error")"
                }
            case .cancelled:
                runs[slot]!.groups[group].cancelled += 1
            default: break
            }
        }
        work.append(.nodeFinished(slot: slot, node: leaf))
        // Innermost group first, so a nested group is finished before its parent.
        for group in plan.flat.leaves[leaf].ancestors.reversed() where runs[slot]!.groups[group].unfinished == 0 {
            work.append(.nodeFinished(slot: slot, node: plan.flat.leaves.count + group))
        }
    }

    /// Forgets an attempt: its worker's count, its lock request (granted or waiting) and the
    /// lock requests its procedures made locally.
    mutating func endAttempt(_ taskID: UInt64, now: Timestamp) {
        guard let location = attempts.removeValue(forKey: taskID) else { return }
        runs[location.slot]?.children[location.leaf].taskID = 0
        if location.dispatched, let worker = runs[location.slot]?.children[location.leaf].worker {
            attemptsByWorker[worker]?.remove(taskID)
            membership.addInFlight(-1, to: worker)
        }
        var grants: [LockTable.Grant] = []
        for request in localByAttempt.removeValue(forKey: taskID) ?? [] {
            grants += locks.remove(.local(attempt: taskID, request: request))
        }
        grants += locks.remove(.attempt(taskID))
        handleGrants(grants, now: now)
    }

    /// Carries on with every request a release completed.
    mutating func handleGrants(_ grants: [LockTable.Grant], now: Timestamp) {
        for grant in grants {
            switch grant.holder {
            case .attempt(let taskID):
                guard let location = attempts[taskID],
                    runs[location.slot]?.children[location.leaf].stage == .locking
                else { continue }
                enqueue(location.slot, location.leaf, now: now)
            case .group(let slot, let group):
                holdGranted(slot, group, tokens: grant.tokens, now: now)
            case .local(let taskID, let request):
                guard let location = attempts[taskID], let worker = runs[location.slot]?.children[location.leaf].worker
                else { continue }
                recordLocalGrant(taskID, request: request, tokens: grant.tokens)
                actions.append(.grant(worker, request: request, tokens: grant.tokens))
            }
        }
    }

    /// A leaf or group finished: its dependents count down, and a failure cancels what the
    /// failure policy (or injection) says.
    mutating func nodeFinished(_ slot: Int, _ node: Int, now: Timestamp) {
        guard let plan = runs[slot]?.plan else { return }
        let leafCount = plan.flat.leaves.count
        let succeeded: Bool
        let policy: ChildFailurePolicy
        let parentGroup: Int?
        let verb: String
        var groupCancelled = false
        if node < leafCount {
            let child = runs[slot]!.children[node]
            succeeded = child.phase == .succeeded
            verb = child.phase == .failed ? "failed" : "was cancelled"
            parentGroup = plan.flat.leaves[node].group
            policy = plan.flat.groups[plan.flat.leaves[node].group].onChildFailure
            groupCancelled = child.cancelCause == .group
        } else {
            let group = node - leafCount
            finishGroup(slot, group, now: now)
            guard runs[slot] != nil, group != 0 else { return }
            let state = runs[slot]!.groups[group]
            succeeded = state.phase == .succeeded
            verb = state.phase == .failed ? "failed" : "was cancelled"
            parentGroup = plan.flat.groups[group].parent
            policy = parentGroup.map { plan.flat.groups[$0].onChildFailure } ?? .cancelDependents
            groupCancelled = state.cancelReason != nil
        }
        let path = plan.path(ofNode: node)

        if !succeeded, policy == .cancelGroup, !groupCancelled, let parentGroup {
            let reason = "cancelled because \"\(path)\" \(verb) (onChildFailure: cancel-group)"
            for leaf in plan.flat.groups[parentGroup].leaves {
                cancelLeaf(slot, leaf, reason: reason, cause: .propagated, now: now)
            }
        }
        for dependent in plan.dependents[node] {
            let leaf = Int(dependent)
            guard runs[slot] != nil, !runs[slot]!.children[leaf].isDone else { continue }
            runs[slot]!.children[leaf].remaining -= 1
            if !succeeded {
                if node < leafCount, plan.flat.leaves[leaf].inject.contains(where: { $0.producer == node }) {
                    cancelLeaf(slot, leaf, reason: "producer \"\(path)\" \(verb)", cause: .propagated, now: now)
                    continue
                }
                if policy == .cancelDependents {
                    cancelLeaf(slot, leaf, reason: "dependency \"\(path)\" \(verb)", cause: .propagated, now: now)
                    continue
                }
            }
            if runs[slot]!.children[leaf].remaining == 0 {
                work.append(.unblocked(slot: slot, leaf: leaf))
            } else if runs[slot]!.watched {
                notifyLeaf(slot, leaf)
            }
        }
    }

    /// Every procedure of a group finished: its outcome, its hold given back; for the top
    /// level, the run's outcome.
    private mutating func finishGroup(_ slot: Int, _ group: Int, now: Timestamp) {
        guard let state = runs[slot]?.groups[group], !state.phase.isFinished else { return }
        let id = runs[slot]!.plan.id
        let phase: GroupPhase =
            state.cancelReason != nil ? .cancelled : state.failed > 0 ? .failed : state.cancelled > 0 ? .cancelled : .succeeded
        runs[slot]!.groups[group].phase = phase
        runs[slot]!.groups[group].finishedAt = now
        runs[slot]!.groups[group].waitingForHold = []
        if state.hold == .requested || state.hold == .granted {
            runs[slot]!.groups[group].hold = .released
            handleGrants(locks.remove(.group(run: slot, group: group)), now: now)
        }
        guard group == 0 else {
            notifyGroup(slot, group)
            return
        }
        let reason: String? =
            switch phase {
            case .cancelled: state.cancelReason ?? firstCancellation(slot)
            case .failed: state.firstFailure
            default: nil
            }
        runs[slot]!.phase = phase
        runs[slot]!.reason = reason
        runs[slot]!.finishedAt = now
        actions.append(.groupFinished(group: id, phase, reason: reason))
        finishedOrder.append(slot)
        while finishedOrder.count > configuration.finishedGroupRetention, let oldest = finishedOrder.popFirst() {
            if let forgotten = runs.removeValue(forKey: oldest) { runByID[forgotten.id] = nil }
        }
    }

    private func firstCancellation(_ slot: Int) -> String? {
        guard let run = runs[slot] else { return nil }
        guard let leaf = run.children.indices.first(where: { run.children[$0].phase == .cancelled }) else { return nil }
        return "\"\(run.flat.leaves[leaf].path)\" was cancelled: \(run.children[leaf].error ?? "no reason given")"
    }
}
