import CohortSpec
import Foundation

/// A leaf's way from "its dependencies finished" to "queued for a worker".
extension Scheduler {
    mutating func drainWork(now: Timestamp) {
        while let item = work.popFirst() {
            switch item {
            case .unblocked(let runIndex, let leaf): leafUnblocked(runIndex, leaf, now: now)
            case .nodeFinished(let runIndex, let node): nodeFinished(runIndex, node, now: now)
            case .mapReady(let runIndex, let group): expandMap(runIndex, group, now: now)
            }
        }
    }

    /// Injection, enclosing groups' holds, placement check, own locks, queue.
    private mutating func leafUnblocked(_ runIndex: Int, _ leaf: Int, now: Timestamp) {
        guard let child = runs[runIndex]?.children[leaf], !child.isDone else { return }
        guard child.remaining == 0, child.cancelling == nil else { return }
        switch child.stage {
        case .blocked, .awaitingHold, .parked, .retryWait, .throttled: break
        default: return
        }
        guard let plan = runs[runIndex]?.plan else { return }
        // `if:` and `require:` (its own and its enclosing groups'), once, before anything else.
        if plan.hasConditions, !child.conditionsChecked, !passConditions(runIndex, leaf, now: now) { return }

        if !child.injected, !plan.flat.leaves[leaf].inject.isEmpty {
            switch runs[runIndex]?.injectedInput(leaf) ?? .failure(InjectionFailure(.groupFinished)) {
            case .success(let input):
                runs[runIndex]?.children[leaf].input = input
                runs[runIndex]?.children[leaf].injected = true
            case .failure(let failure):
                if failure.phase == .cancelled { runs[runIndex]?.children[leaf].cancelCause = .propagated }
                if failure.reason?.code == .skipped {
                    finishLeaf(runIndex, leaf, .skipped, reason: failure.reason, now: now)
                    return
                }
                finishLeaf(runIndex, leaf, failure.phase, message: failure.message, reason: failure.reason, now: now)
                return
            }
        }

        for group in plan.flat.leaves[leaf].ancestors {
            guard let hold = runs[runIndex]?.groups[group].hold else { return }
            switch hold {
            case .none, .granted:
                continue
            case .notRequested:
                if runs[runIndex]?.groups[group].holdWaitsFor == 0, requestHold(runIndex, group, now: now) { continue }
                fallthrough
            case .requested:
                runs[runIndex]?.groups[group].waitingForHold.append(Int32(leaf))
                setStage(runIndex, leaf, .awaitingHold, .waiting, now: now)
                return
            case .released:
                // The group finished: nothing inside it may start.
                finishLeaf(runIndex, leaf, .cancelled, reason: .groupFinished, now: now)
                return
            }
        }
        if plan.hasMaps, !child.admitted,
            let limit = plan.flat.groups[plan.flat.leaves[leaf].group].fanOut?.map?.map.maxParallel,
            !admitToMap(runIndex, leaf, limit: limit)
        {
            setStage(runIndex, leaf, .throttled, .waiting, now: now)
            return
        }
        markGroupsStarted(runIndex, leaf, now: now)
        placeOrPark(runIndex, leaf, now: now)
    }

    /// Requests a group's hold; true if granted at once.
    private mutating func requestHold(_ runIndex: Int, _ group: Int, now: Timestamp) -> Bool {
        guard let plan = runs[runIndex]?.plan else { return false }
        let levels = plan.lockLevels(for: plan.flat.groups[group].holds, ancestors: plan.ancestors(ofGroup: group))
        let owner = LockOwner(group: plan.id, child: plan.flat.groups[group].path)
        runs[runIndex]?.groups[group].hold = .requested
        guard
            let grant = requestLock(
                .group(run: runIndex, group: group), levels: levels, owner: owner, rank: rank(runIndex, now: now),
                now: now)
        else {
            return false
        }
        runs[runIndex]?.groups[group].hold = .granted
        runs[runIndex]?.groups[group].tokens = grant.tokens
        return true
    }

    /// A group's hold came through: its waiting leaves go on.
    mutating func holdGranted(_ runIndex: Int, _ group: Int, tokens: [String: UInt64], now: Timestamp) {
        guard let state = runs[runIndex]?.groups[group], state.hold == .requested else { return }
        runs[runIndex]?.groups[group].hold = .granted
        runs[runIndex]?.groups[group].tokens = tokens
        let waiting = state.waitingForHold
        runs[runIndex]?.groups[group].waitingForHold = []
        for leaf in waiting { work.append(.unblocked(runIndex: runIndex, leaf: Int(leaf))) }
    }

    /// Marks the leaf's enclosing groups started (and arms nested groups' timeouts; the top
    /// level's runs from its submission) the first time one of their leaves is about to start.
    mutating func markGroupsStarted(_ runIndex: Int, _ leaf: Int, now: Timestamp) {
        guard let plan = runs[runIndex]?.plan else { return }
        for group in plan.flat.leaves[leaf].ancestors where runs[runIndex]?.groups[group].startedAt == nil {
            runs[runIndex]?.groups[group].startedAt = now
            runs[runIndex]?.groups[group].phase = .running
            if group == 0 {
                runs[runIndex]?.phase = .running
                runs[runIndex]?.startedAt = now
            } else {
                notifyGroup(runIndex, group)
            }
            if group != 0, let timeout = plan.flat.groups[group].timeout {
                attempts.timers.schedule(.groupTimeout(runIndex: runIndex, group: group), at: now + timeout)
            }
        }
    }

    /// Parks the leaf if no connected worker can run it; otherwise starts an attempt, asks for
    /// its locks and queues it once they are granted.
    mutating func placeOrPark(_ runIndex: Int, _ leaf: Int, now: Timestamp) {
        guard let plan = runs[runIndex]?.plan else { return }
        let placementClass = Int(plan.placement[leaf])
        if !placement.canRun(placementClass) {
            placement.park(runIndex: runIndex, leaf: leaf, in: placementClass)
            setStage(runIndex, leaf, .parked, .waiting, now: now)
            return
        }
        let attemptID = beginAttempt(runIndex, leaf)
        let flatLeaf = plan.flat.leaves[leaf]
        if !flatLeaf.exclusive.isEmpty {
            let levels = plan.lockLevels(for: flatLeaf.exclusive, ancestors: flatLeaf.ancestors)
            let owner = LockOwner(
                group: plan.id, child: flatLeaf.path, attempt: runs[runIndex]?.children[leaf].attempt ?? 0)
            if requestLock(
                .attempt(attemptID), levels: levels, owner: owner, rank: rank(runIndex, now: now), now: now) == nil
            {
                setStage(runIndex, leaf, .locking, .waiting, now: now)
                return
            }
        }
        enqueue(runIndex, leaf, now: now)
    }

    /// A new attempt: a fresh id, the next number.
    private mutating func beginAttempt(_ runIndex: Int, _ leaf: Int) -> AttemptID {
        let attemptID = attempts.begin(runIndex: runIndex, leaf: leaf)
        runs[runIndex]?.children[leaf].attempt += 1
        runs[runIndex]?.children[leaf].attemptID = attemptID
        runs[runIndex]?.children[leaf].retryAt = nil
        runs[runIndex]?.children[leaf].repeatWait = false
        return attemptID
    }

    /// Locks held: queue the attempt for placement.
    mutating func enqueue(_ runIndex: Int, _ leaf: Int, now: Timestamp) {
        guard let placementClass = runs[runIndex]?.placement[leaf],
            let attemptID = runs[runIndex]?.children[leaf].attemptID
        else { return }
        placement.enqueue(
            runIndex: runIndex, leaf: leaf, attemptID: attemptID, rank: rank(runIndex, now: now),
            prioritized: runs[runIndex]?.plan.priority != 0, in: Int(placementClass))
        setStage(runIndex, leaf, .queued, .ready, now: now)
    }

    // MARK: Status changes

    mutating func setStage(_ runIndex: Int, _ leaf: Int, _ stage: ChildRun.Stage, _ phase: ChildPhase, now: Timestamp) {
        runs[runIndex]?.children[leaf].stage = stage
        let changed = runs[runIndex]?.children[leaf].phase != phase
        runs[runIndex]?.children[leaf].phase = phase
        if changed || stage == .awaitingHold || stage == .parked || stage == .locking || stage == .throttled {
            notifyLeaf(runIndex, leaf)
        }
    }

    mutating func notifyLeaf(_ runIndex: Int, _ leaf: Int) {
        guard runs[runIndex]?.watched == true, let run = runs[runIndex] else { return }
        actions.append(.childChanged(group: run.id, leafSnapshot(run, leaf)))
    }

    mutating func notifyGroup(_ runIndex: Int, _ group: Int) {
        guard group != 0, runs[runIndex]?.watched == true, let run = runs[runIndex] else { return }
        actions.append(.childChanged(group: run.id, groupSnapshot(run, group)))
    }
}
