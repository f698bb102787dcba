import Foundation

/// Attempts reporting from workers: started, finished; retries.
extension Scheduler {
    /// An attempt started running on `worker`.
    ///
    /// - Throws: ``SchedulerError`` `superseded` if the attempt is not current or not this
    ///   worker's (the shell answers the worker with an error and carries on).
    public mutating func taskStarted(_ ref: AttemptRef, worker: WorkerID, now: Timestamp) throws(SchedulerError)
        -> [SchedulerAction]
    {
        claimOrphan(ref, by: worker)
        let location = try current(ref, on: worker)
        membership.heard(worker, now: now)
        let (slot, leaf) = (location.slot, location.leaf)
        guard runs[slot]!.children[leaf].stage == .dispatched else { return [] }
        runs[slot]!.children[leaf].stage = .started
        runs[slot]!.children[leaf].startedAt = now
        if runs[slot]!.children[leaf].cancelling == nil {
            runs[slot]!.children[leaf].phase = .running
        }
        notifyLeaf(slot, leaf)
        return takeActions()
    }

    /// An attempt finished on `worker` with `outcome`.
    ///
    /// A failure (or a worker-side timeout, `timed out`) is retried while the child's retry
    /// budget lasts, after the policy's backoff; otherwise the child finishes with the
    /// outcome. An attempt that was being cancelled finishes the child cancelled (or
    /// succeeded, if it completed before the cancel reached it).
    /// `startedAt` is when the worker says the attempt started; it stands in for a missing
    /// ``taskStarted(_:worker:now:)`` (that report is optional on the wire).
    /// - Throws: ``SchedulerError`` `superseded` if the attempt is not current or not this worker's.
    public mutating func taskFinished(
        _ ref: AttemptRef, outcome: AttemptOutcome, worker: WorkerID, startedAt: Timestamp? = nil,
        outputTruncated: Bool = false, now: Timestamp
    ) throws(SchedulerError) -> [SchedulerAction] {
        claimOrphan(ref, by: worker)
        let location = try current(ref, on: worker)
        membership.heard(worker, now: now)
        let (slot, leaf) = (location.slot, location.leaf)
        if runs[slot]!.children[leaf].startedAt == nil {
            runs[slot]!.children[leaf].startedAt = min(startedAt ?? now, now)
        }
        runs[slot]!.children[leaf].counted += 1
        let cancelling = runs[slot]!.children[leaf].cancelling
        switch outcome {
        case .succeeded(let output):
            runs[slot]!.children[leaf].outputTruncated = outputTruncated
            finishLeaf(slot, leaf, .succeeded, output: output, now: now)
        case .failed(let error) where cancelling == nil:
            retryOrFinish(slot, leaf, .failed, message: error, now: now)
        case .cancelled(let reason) where cancelling == nil:
            if reason == "timed out" {
                retryOrFinish(slot, leaf, .cancelled, message: reason, now: now)
            } else {
                runs[slot]!.children[leaf].cancelCause = runs[slot]!.children[leaf].cancelCause ?? .explicit
                finishLeaf(slot, leaf, .cancelled, message: reason, now: now)
            }
        case .failed, .cancelled:
            finishLeaf(slot, leaf, .cancelled, message: cancelling, now: now)
        }
        settle(now: now)
        return takeActions()
    }

    /// The attempt `ref` names, if it is current and runs on `worker`.
    func current(_ ref: AttemptRef, on worker: WorkerID) throws(SchedulerError) -> AttemptLocation {
        guard let location = attempts[ref.id], location.dispatched,
            let child = runs[location.slot]?.children[location.leaf], child.attempt == ref.attempt
        else {
            throw SchedulerError(.superseded, "attempt \(ref) is not current")
        }
        guard child.worker == worker else {
            throw SchedulerError(.superseded, "attempt \(ref) does not run on \(worker)")
        }
        return location
    }

    /// The child's retry budget: attempts in all, the first included.
    func budget(_ slot: Int, _ leaf: Int) -> UInt32 {
        UInt32(clamping: max(runs[slot]!.flat.leaves[leaf].retry?.attempts ?? 1, 1))
    }

    /// Ends the current attempt; starts another after the backoff if the budget allows,
    /// else finishes the child with `phase`.
    mutating func retryOrFinish(_ slot: Int, _ leaf: Int, _ phase: ChildPhase, message: String, now: Timestamp) {
        let child = runs[slot]!.children[leaf]
        let group = runs[slot]!.flat.leaves[leaf].ancestors
        let cancelled = group.contains { runs[slot]!.groups[$0].cancelReason != nil }
        guard child.counted < budget(slot, leaf), !cancelled, let policy = runs[slot]!.flat.leaves[leaf].retry else {
            finishLeaf(slot, leaf, phase, message: everyAttemptsError(slot, leaf, last: message), now: now)
            return
        }
        endAttempt(child.taskID, now: now)
        let delay = policy.delay(afterFailedAttempt: Int(child.counted), unitRandom: random.unit())
        runs[slot]!.children[leaf].error = message
        runs[slot]!.children[leaf].attemptErrors.append("attempt \(child.attempt): \(message)")
        runs[slot]!.children[leaf].retryAt = now + delay
        setStage(slot, leaf, .retryWait, .waiting, now: now)
        if delay <= .zero {
            work.append(.unblocked(slot: slot, leaf: leaf))
        } else {
            timers.schedule(.retry(slot: slot, leaf: leaf, attempt: child.attempt), at: now + delay)
        }
    }

    /// The final error of a child whose attempt ended with `last`: `last` alone after a single
    /// attempt, else every attempt's error, `attempt 1: exit code 2; attempt 2: timed out; …`.
    func everyAttemptsError(_ slot: Int, _ leaf: Int, last: String) -> String {
        let child = runs[slot]!.children[leaf]
        guard !child.attemptErrors.isEmpty else { return last }
        return (child.attemptErrors + ["attempt \(child.attempt): \(last)"]).joined(separator: "; ")
    }

    /// Passes time: due retries start, groups past their timeout are cancelled (`timed out`),
    /// silent workers are declared lost.
    public mutating func tick(now: Timestamp) -> [SchedulerAction] {
        while let event = timers.popDue(now: now) {
            switch event {
            case .retry(let slot, let leaf, let attempt):
                guard let child = runs[slot]?.children[leaf], child.stage == .retryWait, child.attempt == attempt else {
                    continue
                }
                work.append(.unblocked(slot: slot, leaf: leaf))
            case .groupTimeout(let slot, let group):
                guard let state = runs[slot]?.groups[group], !state.phase.isFinished else { continue }
                cancelGroup(slot, group, reason: "timed out", now: now)
            }
        }
        if let orphanDeadline, orphanDeadline <= now { expireOrphans(now: now) }
        for worker in membership.expired(now: now) {
            loseWorker(worker, reason: "missed its heartbeats for \(membership.silenceLimit)", now: now)
        }
        settle(now: now)
        return takeActions()
    }
}
