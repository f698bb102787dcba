import Foundation

/// Attempts reporting from workers: started, finished; retries.
extension Scheduler {
    /// An attempt started running on `worker`.
    ///
    /// - Throws: ``SchedulerError`` `superseded` if the attempt is not current or not this
    ///   worker's (the shell answers the worker with an error and carries on).
    public mutating func attemptStarted(_ ref: AttemptRef, worker: SessionID, now: Timestamp) throws(SchedulerError)
        -> [SchedulerAction]
    {
        claimOrphan(ref, by: worker)
        let location = try current(ref, on: worker)
        membership.heard(worker, now: now)
        let (runIndex, leaf) = (location.runIndex, location.leaf)
        guard runs[runIndex]?.children[leaf].stage == .dispatched else { return [] }
        runs[runIndex]?.children[leaf].stage = .started
        runs[runIndex]?.children[leaf].startedAt = now
        if observes, let dispatchedAt = runs[runIndex]?.children[leaf].dispatchedAt {
            observe(.attemptStarted(waited: now - dispatchedAt))
        }
        if runs[runIndex]?.children[leaf].cancelling == nil {
            runs[runIndex]?.children[leaf].phase = .running
        }
        notifyLeaf(runIndex, leaf)
        return takeActions()
    }

    /// An attempt finished on `worker` with `outcome`.
    ///
    /// A failure (or a worker-side timeout, ``CancellationReason/timedOut``) is retried while the child's retry
    /// budget lasts, after the policy's backoff; otherwise the child finishes with the
    /// outcome. An attempt that was being cancelled finishes the child cancelled (or
    /// succeeded, if it completed before the cancel reached it).
    /// `startedAt` is when the worker says the attempt started; it stands in for a missing
    /// ``attemptStarted(_:worker:now:)`` (that report is optional on the wire). `finishedAt` is
    /// when the worker says it finished, which the child keeps (within its start and `now`):
    /// a result that waited for a restarted coordinator keeps the time it really finished.
    /// - Throws: ``SchedulerError`` `superseded` if the attempt is not current or not this worker's.
    public mutating func attemptFinished(
        _ ref: AttemptRef, outcome: AttemptOutcome, worker: SessionID, startedAt: Timestamp? = nil,
        finishedAt: Timestamp? = nil, outputTruncated: Bool = false, now: Timestamp
    ) throws(SchedulerError) -> [SchedulerAction] {
        // A restored attempt its worker reports after the restart (not one adopted by READY).
        let restored = attempts.orphans.contains(ref.id)
        claimOrphan(ref, by: worker)
        let location = try current(ref, on: worker)
        membership.heard(worker, now: now)
        let (runIndex, leaf) = (location.runIndex, location.leaf)
        // Started: it reported its start, or its result says when it started. One that never
        // started (stopped or cancelled before) has no run time to observe.
        let didStart = runs[runIndex]?.children[leaf].startedAt != nil || startedAt != nil
        if runs[runIndex]?.children[leaf].startedAt == nil {
            runs[runIndex]?.children[leaf].startedAt = min(startedAt ?? now, now)
        }
        let finished = finishedAt.map { max(min($0, now), runs[runIndex]?.children[leaf].startedAt ?? $0) }
        if didStart, let started = runs[runIndex]?.children[leaf].startedAt {
            // The worker's own times where it gave both (one clock), else the coordinator's.
            let ran = (finished ?? now) - started
            membership.noteRun(startedAt.flatMap { start in finishedAt.map { $0 - start } } ?? ran, on: worker)
            if observes { observe(.attemptFinished(ran: ran)) }
        }
        let cancelling = runs[runIndex]?.children[leaf].cancelling
        if case .cancelled(let reason) = outcome, reason.code == .workerLost, cancelling == nil {
            // Its worker stopped it when its lease ended: a worker loss, not the child's
            // failure; free if it never started (the worker gives no start), or if the lease
            // ended because the coordinator was away (a restored attempt: losing the
            // coordinator is not the child's failure either).
            if startedAt != nil { runs[runIndex]?.children[leaf].stage = .started }
            loseAttempt(ref.id, message: reason.text, costsALoss: !restored, now: now)
            settle(now: now)
            return takeActions()
        }
        runs[runIndex]?.children[leaf].counted += 1
        switch outcome {
        case .succeeded(let output):
            runs[runIndex]?.children[leaf].outputTruncated = outputTruncated
            if let repeating = runs[runIndex]?.flat.leaves[leaf].repeating {
                if let cancelling {
                    // Cancelled while it ran: a repeat that has not come true does not succeed.
                    finishLeaf(runIndex, leaf, .cancelled, reason: cancelling, at: finished, now: now)
                } else {
                    repeatOrFinish(runIndex, leaf, repeating, output: output, at: finished, now: now)
                }
            } else {
                finishLeaf(runIndex, leaf, .succeeded, output: output, at: finished, now: now)
            }
        case .failed(let error) where cancelling == nil:
            retryOrFinish(runIndex, leaf, .failed, message: error, at: finished, now: now)
        case .cancelled(let reason) where cancelling == nil:
            if reason.code == .timedOut {
                retryOrFinish(
                    runIndex, leaf, .cancelled, message: reason.text, reason: reason, at: finished, now: now)
            } else {
                if runs[runIndex]?.children[leaf].cancelCause == nil {
                    runs[runIndex]?.children[leaf].cancelCause = .explicit
                }
                finishLeaf(runIndex, leaf, .cancelled, reason: reason, at: finished, now: now)
            }
        case .failed, .cancelled:
            finishLeaf(
                runIndex, leaf, .cancelled, message: cancelling?.text, reason: cancelling, at: finished, now: now)
        }
        settle(now: now)
        return takeActions()
    }

    /// The attempt `ref` names, if it is current and runs on `worker`.
    func current(_ ref: AttemptRef, on worker: SessionID) throws(SchedulerError) -> AttemptLocation {
        #if DELIBERATE_BUGS
            // SchedulerMutation.acceptSupersededResult: the child's current attempt, whichever
            // attempt the report names and whichever worker sends it.
            if mutated(.acceptSupersededResult), let runIndex = runs.index(of: ref.group),
                let node = runs[runIndex]?.nodeByPath[ref.path], node < runs[runIndex]?.leafCount ?? 0,
                let attemptID = runs[runIndex]?.children[node].attemptID, let location = attempts[attemptID],
                location.dispatched
            {
                return location
            }
        #endif
        // The group too: without a journal, a restarted coordinator's ids start from 1 again.
        guard let location = attempts[ref.id], location.dispatched, runs[location.runIndex]?.id == ref.group,
            let child = runs[location.runIndex]?.children[location.leaf], child.attempt == ref.attempt,
            child.attemptID == ref.id
        else {
            throw SchedulerError(.superseded, "attempt \(ref) is not current")
        }
        guard child.worker == worker else {
            throw SchedulerError(.superseded, "attempt \(ref) does not run on \(worker)")
        }
        return location
    }

    /// The child's retry budget: attempts in all, the first included.
    func budget(_ runIndex: Int, _ leaf: Int) -> UInt32 {
        runs[runIndex]?.retryBudget(leaf) ?? 1
    }

    /// Ends the current attempt; starts another after the backoff if the budget allows,
    /// else finishes the child with `phase`.
    /// `reason` is the cancellation's, for a worker-side timeout; `at`, when the attempt ended
    /// (`now` if nil), the child's finish time if it finishes.
    mutating func retryOrFinish(
        _ runIndex: Int, _ leaf: Int, _ phase: ChildPhase, message: String, reason: CancellationReason? = nil,
        at finishedAt: Timestamp? = nil, now: Timestamp
    ) {
        guard let child = runs[runIndex]?.children[leaf], let cancelled = runs[runIndex]?.isInCancelledGroup(leaf)
        else { return }
        guard child.counted < budget(runIndex, leaf), !cancelled, let policy = runs[runIndex]?.flat.leaves[leaf].retry
        else {
            // After several attempts the child's error reads as every attempt's, its own words;
            // the reason stays how the last one ended (a timeout keeps `timedOut` as its code,
            // however many attempts timed out before).
            let error = everyAttemptsError(runIndex, leaf, last: message)
            finishLeaf(runIndex, leaf, phase, message: error, reason: reason, at: finishedAt, now: now)
            return
        }
        endForRetry(
            runIndex, leaf, child.attemptID, reason?.code == .timedOut ? .timedOut : .failed, message: message,
            countsAsError: true, at: finishedAt, now: now)
        let delay = policy.delay(afterFailedAttempt: Int(child.counted), unitRandom: random.unit())
        runs[runIndex]?.children[leaf].retryAt = now + delay
        if delay <= .zero {
            work.append(.unblocked(runIndex: runIndex, leaf: leaf))
        } else {
            attempts.timers.schedule(.retry(runIndex: runIndex, leaf: leaf, attempt: child.attempt), at: now + delay)
        }
    }

    /// Ends the child's current attempt `attemptID`, which another attempt will follow: the
    /// child waits for its retry (`retryWait`) with `message` as its error, and the attempt is
    /// kept among its earlier attempts (``EndedAttempt``) if it was sent to a worker. `countsAsError`: `message` is
    /// one of the errors the child's final error names. `at`: when it ended (`now` if nil).
    /// Every way an attempt ends before another (a retried failure or timeout, a lost worker,
    /// an ended lease, an orphan nobody reported) goes through here.
    mutating func endForRetry(
        _ runIndex: Int, _ leaf: Int, _ attemptID: AttemptID, _ ending: EndedAttempt.Ending, message: String,
        countsAsError: Bool, at finishedAt: Timestamp? = nil, now: Timestamp
    ) {
        guard let child = runs[runIndex]?.children[leaf] else { return }
        if let worker = child.worker, child.sentAttempt == child.attempt, child.attempt > 0 {
            runs[runIndex]?.children[leaf].keepEarlier(
                EndedAttempt(
                    attempt: child.attempt, worker: workerNames[worker] ?? worker.description,
                    startedAt: child.startedAt, finishedAt: finishedAt ?? now, ending: ending, error: message))
        }
        endAttempt(attemptID, now: now)
        runs[runIndex]?.children[leaf].error = message
        if countsAsError {
            runs[runIndex]?.children[leaf].attemptErrors.append("attempt \(child.attempt): \(message)")
        }
        setStage(runIndex, leaf, .retryWait, .waiting, now: now)
    }

    /// The final error of a child whose attempt ended with `last`: `last` alone after a single
    /// attempt, else every attempt's error, `attempt 1: exit code 2; attempt 2: timed out; …`.
    func everyAttemptsError(_ runIndex: Int, _ leaf: Int, last: String) -> String {
        runs[runIndex]?.everyAttemptsError(leaf, last: last) ?? last
    }

    /// Passes time: due retries start, groups past their timeout are cancelled (`timed out`),
    /// silent workers are declared lost.
    public mutating func tick(now: Timestamp) -> [SchedulerAction] {
        while let event = attempts.timers.popDue(now: now) {
            switch event {
            case .retry(let runIndex, let leaf, let attempt):
                guard let child = runs[runIndex]?.children[leaf], child.stage == .retryWait, child.attempt == attempt
                else {
                    continue
                }
                work.append(.unblocked(runIndex: runIndex, leaf: leaf))
            case .groupTimeout(let runIndex, let group):
                guard let state = runs[runIndex]?.groups[group], !state.phase.isFinished else { continue }
                cancelGroup(runIndex, group, reason: .timedOut, now: now)
            }
        }
        if let deadline = attempts.orphanDeadline, deadline <= now { expireOrphans(now: now) }
        for worker in membership.expired(now: now) {
            loseWorker(worker, reason: "missed its heartbeats for \(membership.silenceLimit)", loss: .silent, now: now)
        }
        settle(now: now)
        return takeActions()
    }
}
