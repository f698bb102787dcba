import Foundation

/// Routing between the placement part and the rest: unparking after membership changes,
/// filling workers from the queues, and the dispatch itself.
extension Scheduler {
    /// After a worker joined, left or started draining: the classes' workers are recomputed
    /// and the leaves a newly capable class can now run go on.
    mutating func membershipChanged(now: Timestamp) {
        for entry in placement.refresh(membership) {
            let leaf = Int(entry.leaf)
            guard runs[entry.runIndex]?.children[leaf].stage == .parked else { continue }
            placeOrPark(entry.runIndex, leaf, now: now)
        }
    }

    /// Places queued attempts on workers with room, class by class, least loaded worker first.
    mutating func schedule(now: Timestamp) {
        guard let round = placement.startRound() else { return }
        if placement.ranksAcrossClasses, round.count > 1 {
            scheduleByRank(now: now)
            return
        }
        for offset in 0..<round.count {
            let index = (round.start + offset) % round.count
            guard placement.hasQueued(index) else { continue }
            fill(index, now: now)
            if placement.queuedCount == 0 { break }
        }
    }

    /// Places queued attempts one at a time, the best-ranked head across classes first (some
    /// group has a priority): a class that finds no worker sits out the rest of the round.
    private mutating func scheduleByRank(now: Timestamp) {
        var full = Set<Int>()
        while placement.queuedCount > 0, let index = placement.bestRankedClass(skipping: full) {
            guard let entry = placement.first(in: index) else { continue }
            let leaf = Int(entry.leaf)
            guard let child = runs[entry.runIndex]?.children[leaf], child.stage == .queued,
                child.attemptID == entry.attemptID
            else {
                placement.removeFirst(in: index)
                continue
            }
            guard
                let worker = placement.pickWorker(
                    index, membership: membership, prefetch: configuration.prefetch,
                    shortAttempt: configuration.shortAttempt)
            else {
                full.insert(index)
                continue
            }
            placement.removeFirst(in: index)
            dispatch(entry.runIndex, leaf, to: worker, now: now)
        }
    }

    private mutating func fill(_ index: Int, now: Timestamp) {
        while let entry = placement.first(in: index) {
            let leaf = Int(entry.leaf)
            guard let child = runs[entry.runIndex]?.children[leaf], child.stage == .queued,
                child.attemptID == entry.attemptID
            else {
                placement.removeFirst(in: index)
                continue
            }
            guard
                let worker = placement.pickWorker(
                    index, membership: membership, prefetch: configuration.prefetch,
                    shortAttempt: configuration.shortAttempt)
            else { return }
            placement.removeFirst(in: index)
            dispatch(entry.runIndex, leaf, to: worker, now: now)
        }
    }

    /// Sends the leaf's current attempt to `worker`: its record (with a journal), then the
    /// dispatch with its final input and fencing tokens.
    private mutating func dispatch(_ runIndex: Int, _ leaf: Int, to worker: SessionID, now: Timestamp) {
        guard let plan = runs[runIndex]?.plan, let attemptID = runs[runIndex]?.children[leaf].attemptID,
            let attempt = runs[runIndex]?.children[leaf].attempt
        else { return }
        attempts[attemptID]?.dispatched = true
        attempts.move(attemptID, from: nil, to: worker)
        membership.addInFlight(1, to: worker)
        runs[runIndex]?.children[leaf].worker = worker
        runs[runIndex]?.children[leaf].sentAttempt = attempt
        runs[runIndex]?.children[leaf].stage = .dispatched
        runs[runIndex]?.children[leaf].startedAt = nil
        runs[runIndex]?.children[leaf].dispatchedAt = now
        let flatLeaf = plan.flat.leaves[leaf]
        let ref = AttemptRef(id: attemptID, group: plan.id, path: flatLeaf.path, attempt: attempt)
        var own: [String: UInt64] = [:]
        if !flatLeaf.exclusive.isEmpty {
            own = locks.tokens(of: .attempt(attemptID)) ?? [:]
            locks.setOwner(
                LockOwner(group: plan.id, child: flatLeaf.path, attempt: ref.attempt, worker: worker),
                of: .attempt(attemptID))
        }
        let input = (runs[runIndex]?.children[leaf].input ?? flatLeaf.input).jsonData()
        let tokens = runs[runIndex]?.tokens(forLeaf: leaf, own: own) ?? own
        if emitsRecords {
            actions.append(
                .record(
                    .dispatched(
                        ChildRecord(
                            group: ref.group, path: ref.path, attempt: ref.attempt, attemptID: attemptID,
                            state: .inFlight,
                            worker: workerNames[worker], tokens: tokens,
                            losses: UInt32(runs[runIndex]?.children[leaf].losses ?? 0),
                            counted: runs[runIndex]?.children[leaf].counted))))
        }
        actions.append(
            .dispatch(
                worker,
                DispatchOrder(
                    ref: ref, kind: flatLeaf.run, input: input, tokens: tokens, timeout: flatLeaf.timeout,
                    holds: flatLeaf.exclusive)))
        notifyLeaf(runIndex, leaf)
    }
}
