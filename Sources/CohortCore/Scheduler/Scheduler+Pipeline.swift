import CohortSpec
import Foundation

/// A leaf's way from "its dependencies finished" to "queued for a worker".
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

    /// Marks the leaf's enclosing groups started (and arms nested groups' timeouts; the top
    /// level's runs from its submission) the first time one of their leaves is about to start.
    mutating func markGroupsStarted(_ slot: Int, _ leaf: Int, now: Timestamp) {
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
            if group != 0, let timeout = plan.flat.groups[group].timeout {
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
