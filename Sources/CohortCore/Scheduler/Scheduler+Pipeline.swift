import Foundation

/// A leaf's way from "its dependencies finished" to "queued for a worker", and what a
/// finished leaf or group sets off.
extension Scheduler {
    mutating func drainWork(now: Timestamp) {
        while let item = work.popFirst() {
            switch item {
            case .unblocked(let slot, let leaf): leafUnblocked(slot, leaf, now: now)
            case .nodeFinished(let slot, let node): nodeFinished(slot, node, now: now)
            }
        }
    }

    /// Injection, enclosing groups' holds, placement check, own locks, queue.
    private mutating func leafUnblocked(_ slot: Int, _ leaf: Int, now: Timestamp) {
        guard let child = runs[slot]?.children[leaf], !child.isDone else { return }
        guard child.remaining == 0, child.cancelling == nil else { return }
        switch child.stage {
        case .blocked, .awaitingHold, .parked, .retryWait: break
        default: return
        }
        let plan = runs[slot]!.plan

        if !child.injected, !plan.flat.leaves[leaf].inject.isEmpty {
            switch injectedInput(slot, leaf) {
            case .success(let input):
                runs[slot]!.children[leaf].input = input
                runs[slot]!.children[leaf].injected = true
            case .failure(let failure):
                if failure.phase == .cancelled { runs[slot]!.children[leaf].cancelCause = .propagated }
                finishLeaf(slot, leaf, failure.phase, message: failure.message, now: now)
                return
            }
        }

        for group in plan.flat.leaves[leaf].ancestors {
            switch runs[slot]!.groups[group].hold {
            case .none, .granted:
                continue
            case .notRequested:
                if requestHold(slot, group, now: now) { continue }
                fallthrough
            case .requested:
                runs[slot]!.groups[group].waitingForHold.append(Int32(leaf))
                setStage(slot, leaf, .awaitingHold, .waiting, now: now)
                return
            case .released:
                // The group finished: nothing inside it may start.
                finishLeaf(slot, leaf, .cancelled, message: "its group finished before it could start", now: now)
                return
            }
        }
        markGroupsStarted(slot, leaf, now: now)
        placeOrPark(slot, leaf, now: now)
    }

    /// Requests a group's hold; true if granted at once.
    private mutating func requestHold(_ slot: Int, _ group: Int, now: Timestamp) -> Bool {
        let plan = runs[slot]!.plan
        let levels = plan.lockLevels(for: plan.flat.groups[group].exclusive, ancestors: plan.ancestors(ofGroup: group))
        let owner = LockOwner(group: plan.id, child: plan.flat.groups[group].path)
        runs[slot]!.groups[group].hold = .requested
        guard let grant = locks.request(.group(run: slot, group: group), levels: levels, owner: owner) else { return false }
        runs[slot]!.groups[group].hold = .granted
        runs[slot]!.groups[group].tokens = grant.tokens
        return true
    }

    /// A group's hold came through: its waiting leaves go on.
    mutating func holdGranted(_ slot: Int, _ group: Int, tokens: [String: UInt64], now: Timestamp) {
        guard runs[slot] != nil, runs[slot]!.groups[group].hold == .requested else { return }
        runs[slot]!.groups[group].hold = .granted
        runs[slot]!.groups[group].tokens = tokens
        let waiting = runs[slot]!.groups[group].waitingForHold
        runs[slot]!.groups[group].waitingForHold = []
        for leaf in waiting { work.append(.unblocked(slot: slot, leaf: Int(leaf))) }
    }

    /// Marks the leaf's enclosing groups started (and arms their timeouts) the first time one
    /// of their leaves is about to start.
    private mutating func markGroupsStarted(_ slot: Int, _ leaf: Int, now: Timestamp) {
        let plan = runs[slot]!.plan
        for group in plan.flat.leaves[leaf].ancestors where runs[slot]!.groups[group].startedAt == nil {
            runs[slot]!.groups[group].startedAt = now
            runs[slot]!.groups[group].phase = .running
            if group == 0 {
                runs[slot]!.phase = .running
                runs[slot]!.startedAt = now
            } else {
                notifyGroup(slot, group)
            }
            if let timeout = plan.flat.groups[group].timeout {
                timers.schedule(.groupTimeout(slot: slot, group: group), at: now + timeout)
            }
        }
    }

    /// Parks the leaf if no connected worker can run it; otherwise starts an attempt, asks for
    /// its locks and queues it once they are granted.
    mutating func placeOrPark(_ slot: Int, _ leaf: Int, now: Timestamp) {
        let plan = runs[slot]!.plan
        let placement = Int(plan.placement[leaf])
        if capable[placement].isEmpty {
            parked[placement].append(QueueEntry(slot: slot, leaf: Int32(leaf), taskID: 0))
            setStage(slot, leaf, .parked, .waiting, now: now)
            return
        }
        let taskID = beginAttempt(slot, leaf)
        let flatLeaf = plan.flat.leaves[leaf]
        if !flatLeaf.exclusive.isEmpty {
            let levels = plan.lockLevels(for: flatLeaf.exclusive, ancestors: flatLeaf.ancestors)
            let owner = LockOwner(group: plan.id, child: flatLeaf.path, attempt: runs[slot]!.children[leaf].attempt)
            if locks.request(.attempt(taskID), levels: levels, owner: owner) == nil {
                setStage(slot, leaf, .locking, .waiting, now: now)
                return
            }
        }
        enqueue(slot, leaf, now: now)
    }

    /// A new attempt: a fresh id, the next number.
    private mutating func beginAttempt(_ slot: Int, _ leaf: Int) -> UInt64 {
        let taskID = nextTaskID
        nextTaskID += 1
        runs[slot]!.children[leaf].attempt += 1
        runs[slot]!.children[leaf].taskID = taskID
        runs[slot]!.children[leaf].retryAt = nil
        attempts[taskID] = AttemptLocation(slot: slot, leaf: leaf)
        return taskID
    }

    /// Locks held: queue the attempt for placement.
    mutating func enqueue(_ slot: Int, _ leaf: Int, now: Timestamp) {
        let placement = Int(runs[slot]!.plan.placement[leaf])
        queues[placement].append(QueueEntry(slot: slot, leaf: Int32(leaf), taskID: runs[slot]!.children[leaf].taskID))
        queuedCount += 1
        setStage(slot, leaf, .queued, .ready, now: now)
    }

    /// The leaf's input with its producers' outputs injected, or why it cannot be built.
    private func injectedInput(_ slot: Int, _ leaf: Int) -> Result<JSONValue, InjectionFailure> {
        let plan = runs[slot]!.plan
        var input = plan.flat.leaves[leaf].input
        for injection in plan.flat.leaves[leaf].inject {
            let producer = runs[slot]!.children[injection.producer]
            switch producer.phase {
            case .succeeded: break
            case .failed:
                return .failure(.init(.cancelled, "producer \"\(injection.producerPath)\" failed"))
            default:
                return .failure(.init(.cancelled, "producer \"\(injection.producerPath)\" was cancelled"))
            }
            let output: JSONValue
            do {
                output = try JSONValue(jsonData: producer.output ?? Data("null".utf8))
            } catch {
                return .failure(.init(.failed, "producer \"\(injection.producerPath)\" returned output that is not JSON"))
            }
            guard let selected = output.select(injection.select) else {
                return .failure(
                    .init(.failed, "producer \"\(injection.producerPath)\" output has nothing at \"\(injection.select)\""))
            }
            input.set(injection.into, to: selected)
        }
        return .success(input)
    }

    // MARK: Finishing

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
        if phase != .succeeded { runs[slot]!.children[leaf].error = message }
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
            if let worker = runs[location.slot]?.children[location.leaf].worker {
                let holder = LockHolder.local(worker: worker, request: request)
                localRequests[holder] = nil
                grants += locks.remove(holder)
            }
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
            case .local(let worker, let request):
                actions.append(.grant(worker, request: request, tokens: grant.tokens))
            }
        }
    }

    /// A leaf or group finished: its dependents count down, and a failure cancels what the
    /// failure policy (or injection) says.
    private mutating func nodeFinished(_ slot: Int, _ node: Int, now: Timestamp) {
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

    // MARK: Status changes

    mutating func setStage(_ slot: Int, _ leaf: Int, _ stage: ChildRun.Stage, _ phase: ChildPhase, now: Timestamp) {
        runs[slot]!.children[leaf].stage = stage
        let changed = runs[slot]!.children[leaf].phase != phase
        runs[slot]!.children[leaf].phase = phase
        if changed || stage == .awaitingHold || stage == .parked || stage == .locking { notifyLeaf(slot, leaf) }
    }

    mutating func notifyLeaf(_ slot: Int, _ leaf: Int) {
        guard let run = runs[slot], run.watched else { return }
        actions.append(.childChanged(group: run.id, leafSnapshot(run, leaf)))
    }

    mutating func notifyGroup(_ slot: Int, _ group: Int) {
        guard let run = runs[slot], run.watched, group != 0 else { return }
        actions.append(.childChanged(group: run.id, groupSnapshot(run, group)))
    }
}

/// Why a consumer's input could not be built.
struct InjectionFailure: Error {
    var phase: ChildPhase
    var message: String
    init(_ phase: ChildPhase, _ message: String) {
        self.phase = phase
        self.message = message
    }
}
