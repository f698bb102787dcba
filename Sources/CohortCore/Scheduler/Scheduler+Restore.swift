import Foundation

/// The journal's side of the scheduler: what finished (to write down), and rebuilding the
/// state a restarted coordinator finds in its journal.
///
/// Restoring follows the journal's records, not a guess:
/// - every group is accepted again with its spec, id and submission order, so `--id`
///   resubmissions stay idempotent;
/// - children that had finished keep their outcome, output, attempt number and worker (their
///   dependents and consumers go on as if nothing happened);
/// - attempts that were in flight become *orphans*: they keep their id, number and lock grants
///   (the same fencing tokens), the grants their procedures took on their worker (local
///   `MutuallyExclusive`) included, and wait for a worker to report them (in READY's
///   `running`, or by a result). An orphan nobody reports within the grace period gets a new
///   attempt, which does not count against the child's retry budget (losing the coordinator
///   is not the child's failure), and its grants are revoked: the next holder's token is
///   larger (the epoch is part of every token);
/// - cancels asked for before the restart are applied again.
extension Scheduler {
    /// A past worker session, as restored attempts and outcomes name it: ids from 2⁶² up,
    /// which a coordinator's session counter never reaches.
    static let pastSessionBase: UInt64 = 1 << 62

    /// Whether `worker` is a session of an earlier coordinator incarnation.
    static func isPastSession(_ worker: SessionID) -> Bool { worker.rawValue >= pastSessionBase }

    /// Records a leaf that just finished (its phase, output, error and times are set): its
    /// outcome, output, the latest attempt sent to a worker and that worker.
    mutating func recordFinish(_ runIndex: Int, _ leaf: Int) {
        guard let child = runs[runIndex]?.children[leaf], let group = runs[runIndex]?.id,
            let path = runs[runIndex]?.flat.leaves[leaf].path
        else { return }
        actions.append(
            .record(
                .finished(
                    ChildRecord(
                        group: group, path: path, attempt: child.sentAttempt,
                        attemptID: .none, state: .finished(child.phase), output: child.output,
                        outputTruncated: child.outputTruncated, error: child.phase == .succeeded ? nil : child.error,
                        cancelReason: child.phase == .cancelled || child.phase == .skipped ? child.cancelReason : nil,
                        worker: child.worker.flatMap { workerNames[$0] },
                        startedAt: child.startedAt, finishedAt: child.finishedAt))))
    }

    /// How many restored attempts no worker has reported yet.
    public var orphanCount: Int { attempts.orphans.count }

    /// Rebuilds the journal's groups. Call it once, on a fresh scheduler, before any worker joins.
    ///
    /// `lastTokens` are the journaled fencing counters (kept so `cohort locks` goes on from
    /// them; the epoch's token floor already makes every new token larger). Attempts in flight
    /// wait `grace` for a worker to report them. Returns the actions the replay produced
    /// (`groupFinished` and its record, of groups whose last child had finished, cancels for orphans being
    /// cancelled, which reach them once a worker reports them).
    public mutating func restore(
        _ groups: [RestoredGroup], lastTokens: [String: UInt64], grace: Duration, now: Timestamp
    ) -> [SchedulerAction] {
        locks.lastTokens = lastTokens
        #if DELIBERATE_BUGS
            // SchedulerMutation.noTokenRaiseAfterRestart: neither the journal's counters nor the
            // epoch's floor: tokens start over.
            if mutated(.noTokenRaiseAfterRestart) {
                locks.lastTokens = [:]
                locks.tokenFloor = 0
            }
        #endif
        var pastSessions: [String: SessionID] = [:]
        func session(_ name: String?) -> SessionID? {
            guard let name else { return nil }
            if let id = pastSessions[name] { return id }
            let id = SessionID(Self.pastSessionBase + UInt64(pastSessions.count))
            pastSessions[name] = id
            workerNames[id] = name
            return id
        }
        var finishes: [(runIndex: Int, leaf: Int, record: ChildRecord, phase: ChildPhase)] = []
        var cancels: [(runIndex: Int, path: String, reason: CancellationReason)] = []
        let restored = groups.sorted(by: { $0.sequence < $1.sequence }).filter { runs.index(of: $0.id) == nil }
        // Every unfinished group's limits are in force before any grant is restored: a grant of
        // an earlier group may hold a unit of a category a later group declares (as it did).
        for group in restored where group.outcome == nil { locks.declare(group.spec.limits) }
        for group in restored {
            runs.submissions = max(runs.submissions, group.sequence)
            let plan = addRun(
                group.spec, id: group.id, flat: group.spec.flattened(), sequence: group.sequence, owner: group.owner,
                submittedAt: group.submittedAt, declaresLimits: group.outcome != nil)
            // Children added while it ran, in order, before any record: their indexes follow
            // the submitted children's as they did (Scheduler+Growing.swift).
            for addition in group.additions {
                guard let spec = runs[plan.runIndex]?.plan.spec,
                    let grown = try? spec.adding(addition.children, into: addition.into, limits: Self.replayLimits)
                else { continue }
                // A map's fan-out is an addition into the map, made by the scheduler itself.
                _ = try? grow(
                    plan.runIndex, grown: grown, into: addition.into,
                    expandsMap: runs[plan.runIndex]?.plan.isMap(addition.into) == true, now: group.submittedAt)
            }
            guard let plan = runs[plan.runIndex]?.plan else { continue }
            for record in group.children {
                guard let leaf = plan.nodeByPath[record.path] else { continue }
                // A map that ended without procedures: its outcome is replayed in its place.
                if leaf >= plan.flat.leaves.count, case .finished(let phase) = record.state {
                    let group = leaf - plan.flat.leaves.count
                    guard plan.flat.groups[group].mapPending else { continue }
                    runs[plan.runIndex]?.groups[group].mapEndJournaled = true
                    finishes.append((plan.runIndex, leaf, record, phase))
                    continue
                }
                guard leaf < plan.flat.leaves.count else { continue }
                runs[plan.runIndex]?.children[leaf].attempt = record.attempt
                runs[plan.runIndex]?.children[leaf].sentAttempt = record.attempt
                runs[plan.runIndex]?.children[leaf].losses = UInt8(clamping: record.losses)
                runs[plan.runIndex]?.children[leaf].counted =
                    record.counted ?? (record.attempt - min(record.losses, record.attempt))
                runs[plan.runIndex]?.children[leaf].worker = session(record.worker)
                runs[plan.runIndex]?.children[leaf].startedAt = record.startedAt
                switch record.state {
                case .inFlight:
                    if plan.flat.leaves[leaf].repeating != nil {
                        // The runs before this attempt are not journaled: every earlier
                        // attempt that did not count against the current run's retry budget
                        // is taken for a run (a lost one too: an attempt a restart gave up on
                        // may have been a run), so `max` is never exceeded (a restart after
                        // retries or losses may stop the repeat early; simulation, seed 47).
                        let earlier = Int(record.attempt) - 1 - Int(record.counted ?? 0)
                        runs[plan.runIndex]?.children[leaf].repeatedRuns = UInt32(max(earlier, 0))
                    }
                    runs[plan.runIndex]?.children[leaf].conditionsChecked = true
                    restoreOrphan(plan, leaf, record, now: now)
                case .finished(let phase):
                    finishes.append((plan.runIndex, leaf, record, phase))
                }
            }
            for record in group.localLocks { restoreLocalGrant(record) }
            cancels += group.cancels.map { (plan.runIndex, $0.path, $0.reason) }
        }
        // Outcomes in the order they happened, so propagation replays as it ran. A map may fan
        // out during the replay (when its fan-out was not journaled yet) and move later leaves:
        // each finish finds its leaf by path.
        finishes.sort { ($0.record.finishedAt ?? now) < ($1.record.finishedAt ?? now) }
        for finish in finishes {
            guard let leaf = runs[finish.runIndex]?.plan.nodeByPath[finish.record.path] else { continue }
            guard let leafCount = runs[finish.runIndex]?.leafCount, leaf < leafCount else {
                replayMapEnd(finish.runIndex, leaf, finish.record, finish.phase, cancelledPaths: cancels, now: now)
                continue
            }
            runs[finish.runIndex]?.children[leaf].outputTruncated = finish.record.outputTruncated
            finishLeaf(
                finish.runIndex, leaf, finish.phase, message: finish.record.error,
                reason: finish.record.cancelReason
                    ?? (finish.phase == .skipped ? .skipped(finish.record.error ?? "skipped") : nil),
                output: finish.record.output, now: finish.record.finishedAt ?? now)
            drainWork(now: finish.record.finishedAt ?? now)
        }
        for cancel in cancels {
            guard let plan = runs[cancel.runIndex]?.plan, let node = plan.nodeByPath[cancel.path] else { continue }
            if node < plan.flat.leaves.count {
                cancelLeaf(cancel.runIndex, node, reason: cancel.reason, cause: .explicit, now: now)
            } else {
                cancelGroup(cancel.runIndex, node - plan.flat.leaves.count, reason: cancel.reason, now: now)
            }
        }
        settle(now: now)
        // A group the journal says finished has finished: its outcome was announced and is
        // final, even if the replay left a child unfinished (a record the journal does not
        // hold): what is left ends cancelled, its hold and orphans go, and it is never
        // announced again (found by the simulation: a restored group finished a second time).
        for group in groups {
            guard group.outcome != nil, let runIndex = runs.index(of: group.id), let run = runs[runIndex],
                !run.phase.isFinished
            else { continue }
            for leaf in 0..<run.leafCount where runs[runIndex]?.children[leaf].isDone == false {
                finishLeaf(runIndex, leaf, .cancelled, reason: .groupFinished, now: now)
            }
            for group in run.flat.groups.indices where run.flat.groups[group].mapPending {
                if runs[runIndex]?.groups[group].cancelReason == nil {
                    runs[runIndex]?.groups[group].cancelReason = .groupFinished
                }
                work.append(.mapReady(runIndex: runIndex, group: group))
            }
            drainWork(now: now)
        }
        // Finished groups keep the outcome, time and reason they finished with.
        for group in groups {
            guard let outcome = group.outcome, let runIndex = runs.index(of: group.id),
                runs[runIndex]?.phase.isFinished == true
            else { continue }
            runs[runIndex]?.phase = outcome.phase
            runs[runIndex]?.groups[0].phase = outcome.phase
            runs[runIndex]?.reason = outcome.reason
            // Its own cancel's code and words, as its result read before the restart (a cancel
            // asked for is also replayed; a timeout is not).
            if outcome.phase == .cancelled, let code = group.outcomeCode, let reason = outcome.reason {
                runs[runIndex]?.groups[0].cancelReason = CancellationReason(code: code, text: reason)
            }
            runs[runIndex]?.finishedAt = outcome.finishedAt
            runs[runIndex]?.groups[0].finishedAt = outcome.finishedAt
        }
        if !attempts.orphans.isEmpty { attempts.orphanDeadline = now + grace }
        // The replay's finishes and local grants are the journal's own; a child the restore
        // ends (a cancel asked for before the restart and applied again, a group the journal
        // says finished) is new to it, and its outcome is journaled before anything that
        // depends on it runs (found by the simulation, seed 39: a dependent ran while its
        // dependency's outcome was nowhere on disk). A group the replay finishes is new to
        // it, unless the journal already has its outcome (then neither its record nor its
        // announcement is new: the restarted coordinator does not log "group finished" again
        // for every finished group it reloads).
        let finishedBefore = Set(groups.filter { $0.outcome != nil }.map(\.id))
        var journaledFinishes: Set<String> = []
        for group in groups {
            for child in group.children {
                if case .finished = child.state { journaledFinishes.insert("\(group.id)/\(child.path)") }
            }
        }
        actions.removeAll {
            switch $0 {
            case .record(.finished(let child)): journaledFinishes.contains("\(child.group)/\(child.path)")
            case .record(.localLock): true
            case .record(.groupFinished(let id, _, _, _, _)), .groupFinished(let id, _, _): finishedBefore.contains(id)
            default: false
            }
        }
        return takeActions()
    }

    /// A map's journaled end without procedures, replayed at its time among the outcomes.
    private mutating func replayMapEnd(
        _ runIndex: Int, _ node: Int, _ record: ChildRecord, _ phase: ChildPhase,
        cancelledPaths: [(runIndex: Int, path: String, reason: CancellationReason)], now: Timestamp
    ) {
        guard let leafCount = runs[runIndex]?.leafCount, node >= leafCount,
            runs[runIndex]?.groups[node - leafCount].mapEndJournaled == true
        else { return }
        let end: MapEnd =
            switch phase {
            case .skipped: .skipped(record.error ?? "skipped")
            case .failed: .failed(record.error ?? "failed")
            case .cancelled: .cancelled(record.cancelReason ?? .custom(record.error ?? "cancelled"))
            default: .succeeded
            }
        // Cancelled with its group (a journaled cancel covers it, applied again after the
        // replay) rather than as a consequence: its end does not set off `cancel-group`.
        if phase == .cancelled, let path = runs[runIndex]?.plan.path(ofNode: node),
            cancelledPaths.contains(where: {
                $0.runIndex == runIndex && ($0.path.isEmpty || path == $0.path || path.hasPrefix($0.path + "/"))
            })
        {
            runs[runIndex]?.groups[node - leafCount].cancelReason =
                record.cancelReason ?? .custom(record.error ?? "cancelled")
        }
        endMap(runIndex, node - leafCount, end, now: record.finishedAt ?? now)
        drainWork(now: record.finishedAt ?? now)
    }

    /// An attempt that was in flight: current again, on its past session, with its grants.
    private mutating func restoreOrphan(_ plan: GroupPlan, _ leaf: Int, _ record: ChildRecord, now: Timestamp) {
        let runIndex = plan.runIndex
        let flatLeaf = plan.flat.leaves[leaf]
        markGroupsStarted(runIndex, leaf, now: now)
        // Enclosing groups' holds first, outermost first: the attempt's own levels may be in
        // their tables. A hold that cannot be restored stops the walk: a group inside it would
        // take its categories from the table of a group that holds nothing (found by the
        // simulation, seed 37: that inner grant went when the outer group's next failed restore
        // removed its table, the inner group still counted as holding, and its child and a
        // sibling of the group took one category from two tables at once).
        for group in flatLeaf.ancestors {
            let hold = runs[runIndex]?.groups[group].hold
            if hold == NestedRun.Hold.none || hold == .granted { continue }
            guard hold == .notRequested else { break }
            let exclusive = plan.flat.groups[group].holds
            let levels = plan.lockLevels(for: exclusive, ancestors: plan.ancestors(ofGroup: group))
            let owner = LockOwner(group: plan.id, child: plan.flat.groups[group].path)
            let tokens = record.tokens.filter { exclusive.contains($0.key) }
            guard
                locks.restoreGrant(
                    .group(run: runIndex, group: group), levels: levels, owner: owner, tokens: tokens, at: now)
            else { break }
            runs[runIndex]?.groups[group].hold = .granted
            runs[runIndex]?.groups[group].tokens = locks.tokens(of: .group(run: runIndex, group: group)) ?? [:]
        }
        let worker = runs[runIndex]?.children[leaf].worker ?? SessionID(Self.pastSessionBase - 1)
        // The journal says how many earlier attempts used up the retry budget (an older journal
        // does not: then every earlier attempt but the lost ones counts).
        runs[runIndex]?.children[leaf].counted =
            record.counted ?? (record.attempt - 1 - min(record.losses, record.attempt - 1))
        var restored = flatLeaf.ancestors.allSatisfy { runs[runIndex]?.groups[$0].hold != .notRequested }
        if restored, !flatLeaf.exclusive.isEmpty {
            let levels = plan.lockLevels(for: flatLeaf.exclusive, ancestors: flatLeaf.ancestors)
            let owner = LockOwner(group: plan.id, child: flatLeaf.path, attempt: record.attempt, worker: worker)
            let tokens = record.tokens.filter { flatLeaf.exclusive.contains($0.key) }
            restored = locks.restoreGrant(
                .attempt(record.attemptID), levels: levels, owner: owner, tokens: tokens, at: now)
        }
        guard restored else {
            guard countUnreportedRun(runIndex, leaf, now: now) else { return }
            // Its locks cannot be held again as they were (a journal of an earlier release,
            // whose group holds covered less, now crosses another grant): the attempt is not
            // restored (a worker that reports it is told it was superseded) and the child
            // runs again, at no cost, once it can take its locks.
            setStage(runIndex, leaf, .retryWait, .waiting, now: now)
            work.append(.unblocked(runIndex: runIndex, leaf: leaf))
            return
        }
        runs[runIndex]?.children[leaf].worker = worker
        runs[runIndex]?.children[leaf].attemptID = record.attemptID
        // A map's procedure that was running held one of the map's places.
        if plan.flat.groups[flatLeaf.group].fanOut?.map?.map.maxParallel != nil {
            runs[runIndex]?.children[leaf].admitted = true
            runs[runIndex]?.groups[flatLeaf.group].mapRunning += 1
        }
        // It was in flight when the coordinator stopped, so status shows it running; but the
        // journal does not say whether its worker had started it, so it is not confirmed
        // started (`dispatched`) until a worker reports it: a cancel that covers it is not
        // final until then (or until the grace ends and it is given up).
        runs[runIndex]?.children[leaf].stage = .dispatched
        runs[runIndex]?.children[leaf].phase = .running
        // Its input is not journaled: a next attempt injects it again from the producers'
        // journaled outputs (`injected` stays false).
        attempts.restore(record.attemptID, runIndex: runIndex, leaf: leaf, on: worker)
    }

    /// A restored attempt of a repeating leaf that will not be reported (its grace ended, or
    /// its locks could not be restored) is taken for a run: the journal cannot tell an attempt
    /// in flight from a run that succeeded (with `until` false) just before the coordinator
    /// stopped, so `max` is never exceeded (found by the simulation, seed 4). Returns false if
    /// that was the last run (the leaf has failed).
    private mutating func countUnreportedRun(_ runIndex: Int, _ leaf: Int, now: Timestamp) -> Bool {
        guard let repeating = runs[runIndex]?.flat.leaves[leaf].repeating, let child = runs[runIndex]?.children[leaf]
        else { return true }
        let runsDone = Int(child.repeatedRuns) + 1
        runs[runIndex]?.children[leaf].repeatedRuns = UInt32(runsDone)
        guard runsDone >= repeating.max else { return true }
        finishLeaf(
            runIndex, leaf, .failed,
            message: "repeat: until \"\(repeating.until.text)\" was not found true within \(repeating.max) runs "
                + "(max \(repeating.max)); the last run's result was lost when the coordinator restarted",
            now: now)
        return false
    }

    /// A worker reports a restored attempt by its result (or start) without having listed it in
    /// READY (it finished while the coordinator was away): the worker adopts it first.
    mutating func claimOrphan(_ ref: AttemptRef, by worker: SessionID) {
        guard attempts.orphans.contains(ref.id), let location = attempts[ref.id],
            let child = runs[location.runIndex]?.children[location.leaf], child.attempt == ref.attempt,
            let old = child.worker, Self.isPastSession(old)
        else { return }
        attempts.orphans.remove(ref.id)
        attempts.move(ref.id, from: old, to: worker)
        membership.addInFlight(1, to: worker)
        runs[location.runIndex]?.children[location.leaf].worker = worker
    }

    /// A result for a restored attempt that arrived on a connection without a session: a
    /// worker's result sent while the coordinator was down reaches the restarted one before
    /// the worker has said HELLO again. The attempt's id names it (ids are unique across
    /// incarnations), so it is accepted as its past session's.
    /// - Throws: ``SchedulerError`` `notFound` unless `ref` is an orphan; what
    ///   ``attemptFinished(_:outcome:worker:startedAt:finishedAt:outputTruncated:now:)`` throws.
    public mutating func orphanFinished(
        _ ref: AttemptRef, outcome: AttemptOutcome, startedAt: Timestamp? = nil, finishedAt: Timestamp? = nil,
        outputTruncated: Bool = false, now: Timestamp
    ) throws(SchedulerError) -> [SchedulerAction] {
        guard attempts.orphans.contains(ref.id), let location = attempts[ref.id],
            let worker = runs[location.runIndex]?.children[location.leaf].worker
        else { throw SchedulerError(.notFound, "attempt \(ref) is not a restored attempt awaiting its worker") }
        return try attemptFinished(
            ref, outcome: outcome, worker: worker, startedAt: startedAt, finishedAt: finishedAt,
            outputTruncated: outputTruncated, now: now)
    }

    /// The grace period is over: every orphan nobody reported gets a new attempt (or, if it was
    /// being cancelled, finishes cancelled).
    mutating func expireOrphans(now: Timestamp) {
        attempts.orphanDeadline = nil
        let expired = attempts.orphans.sorted()
        attempts.orphans = []
        for attemptID in expired {
            guard let location = attempts[attemptID], let child = runs[location.runIndex]?.children[location.leaf]
            else {
                continue
            }
            let (runIndex, leaf) = (location.runIndex, location.leaf)
            if let worker = child.worker { attempts.bySession[worker]?.remove(attemptID) }
            attempts[attemptID]?.dispatched = false
            if let cancelling = child.cancelling {
                finishLeaf(runIndex, leaf, .cancelled, reason: cancelling, now: now)
                continue
            }
            // Its worker is gone as far as anyone can tell: a worker loss, like any other.
            let message = "attempt \(child.attempt) was not reported by any worker after the coordinator restarted"
            guard countUnreportedRun(runIndex, leaf, now: now) else { continue }
            let losses = Int(child.losses) + 1
            runs[runIndex]?.children[leaf].losses = UInt8(clamping: losses)
            if let failure = lossFailure(
                losses, policy: runs[runIndex]?.flat.leaves[leaf].onWorkerLoss ?? .retry, message)
            {
                finishLeaf(
                    runIndex, leaf, .failed, message: everyAttemptsError(runIndex, leaf, last: failure), now: now)
                continue
            }
            endForRetry(runIndex, leaf, attemptID, .lost, message: message, countsAsError: true, now: now)
            work.append(.unblocked(runIndex: runIndex, leaf: leaf))
        }
    }
}
