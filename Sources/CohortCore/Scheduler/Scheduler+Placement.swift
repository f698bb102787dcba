import DequeModule
import Foundation

/// What a queued attempt needs from a worker: its kind, its labels, and whether it holds its
/// own locks (then it goes only to a free slot, never into a prefetch window, so a granted
/// lock does not wait in a worker's queue behind other attempts).
struct PlacementClass: Hashable, Sendable {
    var kind: String
    /// Sorted.
    var requires: [String]
    var exclusive: Bool
}

/// An attempt waiting in a placement queue (or parked). Stale entries (the child moved on,
/// was cancelled or has a newer attempt) are skipped when met.
struct QueueEntry: Sendable {
    var runIndex: Int
    var leaf: Int32
    /// The attempt queued; 0 for a parked leaf (it has no attempt yet).
    var attemptID: UInt64
}

extension Scheduler {
    /// The class's index, adding it (and what it needs) the first time.
    mutating func classID(_ placement: PlacementClass) -> Int32 {
        if let index = classIndex[placement] { return index }
        let index = Int32(classes.count)
        classes.append(placement)
        classIndex[placement] = index
        queues.append([])
        parked.append([])
        capable.append(capableWorkers(for: placement))
        turns.append(0)
        return index
    }

    /// Ready workers that offer the class's kind and labels, by id.
    func capableWorkers(for placement: PlacementClass) -> [SessionID] {
        membership.workers.values
            .filter { $0.state == .ready && $0.offers(kind: placement.kind, labels: placement.requires) }
            .map(\.id).sorted()
    }

    /// Recomputes which workers serve which class after a worker joined, left or started
    /// draining, and unparks the leaves a newly capable class can now run.
    mutating func membershipChanged(now: Timestamp) {
        for index in classes.indices {
            capable[index] = capableWorkers(for: classes[index])
            guard !capable[index].isEmpty, !parked[index].isEmpty else { continue }
            let entries = parked[index]
            parked[index] = []
            for entry in entries {
                let leaf = Int(entry.leaf)
                guard runs[entry.runIndex]?.children[leaf].stage == .parked else { continue }
                placeOrPark(entry.runIndex, leaf, now: now)
            }
        }
    }

    /// Places queued attempts on workers with room, class by class (starting at a rotating
    /// class, so no class starves another), least loaded worker first, equally loaded
    /// workers in turn.
    mutating func schedule(now: Timestamp) {
        guard queuedCount > 0, !classes.isEmpty else { return }
        let count = classes.count
        rotation = (rotation + 1) % count
        for offset in 0..<count {
            let index = (rotation + offset) % count
            guard !queues[index].isEmpty else { continue }
            fill(index, now: now)
            if queuedCount == 0 { break }
        }
    }

    private mutating func fill(_ index: Int, now: Timestamp) {
        while let entry = queues[index].first {
            let leaf = Int(entry.leaf)
            guard let child = runs[entry.runIndex]?.children[leaf], child.stage == .queued, child.attemptID == entry.attemptID else {
                queues[index].removeFirst()
                queuedCount -= 1
                continue
            }
            guard let worker = pickWorker(index) else { return }
            queues[index].removeFirst()
            queuedCount -= 1
            dispatch(entry.runIndex, leaf, to: worker, now: now)
        }
    }

    /// The least loaded capable worker with room for one more attempt of the class.
    ///
    /// Lower load (in flight per slot) wins, then fewer in flight. Equally loaded workers take
    /// turns: the search starts after the worker the class last chose, so work that runs one
    /// at a time (a shared `exclusive` category, a chain) does not always land on the same
    /// worker just because every worker is idle when it is placed.
    private mutating func pickWorker(_ index: Int) -> SessionID? {
        let extra = classes[index].exclusive ? 0 : configuration.prefetch
        let candidates = capable[index]
        guard !candidates.isEmpty else { return nil }
        let start = turns[index] % candidates.count
        var best: (position: Int, record: WorkerRecord)?
        for offset in 0..<candidates.count {
            let position = (start + offset) % candidates.count
            guard let record = membership.workers[candidates[position]], record.state == .ready,
                record.inFlight < record.slots + extra
            else { continue }
            if let current = best?.record {
                let lhs = record.inFlight * max(current.slots, 1)
                let rhs = current.inFlight * max(record.slots, 1)
                guard lhs < rhs || (lhs == rhs && record.inFlight < current.inFlight) else { continue }
            }
            best = (position, record)
        }
        guard let best else { return nil }
        turns[index] = best.position + 1
        return best.record.id
    }

    private mutating func dispatch(_ runIndex: Int, _ leaf: Int, to worker: SessionID, now: Timestamp) {
        guard let plan = runs[runIndex]?.plan, let attemptID = runs[runIndex]?.children[leaf].attemptID,
            let attempt = runs[runIndex]?.children[leaf].attempt
        else { return }
        attempts[attemptID]?.dispatched = true
        attemptsByWorker[worker, default: []].insert(attemptID)
        membership.addInFlight(1, to: worker)
        runs[runIndex]?.children[leaf].worker = worker
        runs[runIndex]?.children[leaf].sentAttempt = attempt
        runs[runIndex]?.children[leaf].stage = .dispatched
        runs[runIndex]?.children[leaf].startedAt = nil
        let flatLeaf = plan.flat.leaves[leaf]
        let ref = AttemptRef(id: attemptID, group: plan.id, path: flatLeaf.path, attempt: attempt)
        var own: [String: UInt64] = [:]
        if !flatLeaf.exclusive.isEmpty {
            own = locks.tokens(of: .attempt(attemptID)) ?? [:]
            locks.setOwner(
                LockOwner(group: plan.id, child: flatLeaf.path, attempt: ref.attempt, worker: worker), of: .attempt(attemptID))
        }
        let input = (runs[runIndex]?.children[leaf].input ?? flatLeaf.input).jsonData()
        let tokens = runs[runIndex]?.tokens(forLeaf: leaf, own: own) ?? own
        if emitsRecords {
            actions.append(
                .record(
                    .dispatched(
                        ChildRecord(
                            group: ref.group, path: ref.path, attempt: ref.attempt, attemptID: attemptID, state: .inFlight,
                            worker: workerNames[worker], tokens: tokens))))
        }
        actions.append(
            .dispatch(
                worker,
                DispatchOrder(ref: ref, kind: flatLeaf.run, input: input, tokens: tokens, timeout: flatLeaf.timeout)))
        notifyLeaf(runIndex, leaf)
    }

    /// Warnings for a new run: kinds (or kinds with labels) no connected worker offers.
    func placementWarnings(for run: GroupPlan) -> [String] {
        var warnings: [String] = []
        var seen = Set<Int32>()
        for index in run.placement where seen.insert(index).inserted && capable[Int(index)].isEmpty {
            if let reason = unplaceableReason(classes[Int(index)]), !warnings.contains(reason) { warnings.append(reason) }
        }
        return warnings
    }

    /// Why no connected worker can run the class, or nil if one can.
    func unplaceableReason(_ placement: PlacementClass) -> String? {
        let ready = membership.workers.values.filter { $0.state == .ready }
        let kindOffered = ready.contains { $0.kinds.contains(placement.kind) }
        if !kindOffered { return "no connected worker offers kind \"\(placement.kind)\"" }
        if !ready.contains(where: { $0.offers(kind: placement.kind, labels: placement.requires) }) {
            return "no connected worker offers kind \"\(placement.kind)\" with labels \(placement.requires.joined(separator: ", "))"
        }
        return nil
    }
}
