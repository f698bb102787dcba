import CohortSpec

/// Worker sessions: joining, heartbeats, draining, leaving and being lost.
extension Scheduler {
    /// A worker session is ready for work.
    ///
    /// `running` lists attempts the worker still holds from an earlier session (after a
    /// reconnect), started or still queued: current ones move to this session, unknown or
    /// superseded ones get a cancel. `started` names those of them the worker says have
    /// started; the others may still start there, so a cancel that covers one is not final
    /// (``hasUnconfirmedDispatches(_:path:)``) until the worker reports it started or finished.
    /// An earlier session of the same worker name is then declared lost. A worker that
    /// reconnects while draining says so (`draining`): it is draining from the start, so no
    /// work is placed there between its READY and its `draining` message.
    public mutating func workerReady(
        _ id: SessionID, name: String, host: String, labels: [String], slots: Int, kinds: [String],
        running: [AttemptRef] = [], started: Set<AttemptID> = [], draining: Bool = false, now: Timestamp
    ) -> [SchedulerAction] {
        let previous = membership.session(named: name).flatMap { $0 == id ? nil : $0 }
        membership.join(
            WorkerRecord(id: id, name: name, host: host, labels: labels, kinds: Set(kinds), slots: slots, now: now))
        if draining { membership.setStopping(id) }
        workerNames[id] = name
        for ref in running { adopt(ref, by: id, started: started.contains(ref.id), now: now) }
        if let previous {
            loseWorker(previous, reason: "replaced by a new session of \(name)", loss: .replaced, now: now)
        }
        membershipChanged(now: now)
        settle(now: now)
        return takeActions()
    }

    /// Moves a still-running attempt to the worker's new session, or cancels it if unknown.
    /// Only an attempt of an earlier session of the same worker, or of a session before a
    /// restart (restored from the journal), is adopted, and its group must match as well as its
    /// id: a coordinator without a journal numbers attempts (and generated group ids) from 1
    /// again after a restart, so what a worker held before may name an attempt this
    /// coordinator gave another worker.
    /// It counts as started only if the worker says so (`started`) or said so before: an
    /// attempt still queued there may yet start, and a cancel is acknowledged only once no
    /// attempt it covers can (found by the simulation, seed 89: an adopted attempt the worker
    /// had queued was taken as started, a cancel of it was acknowledged at once, and the
    /// worker started it before the cancel reached it).
    private mutating func adopt(_ ref: AttemptRef, by worker: SessionID, started: Bool, now: Timestamp) {
        guard let location = attempts[ref.id], location.dispatched, runs[location.runIndex]?.id == ref.group,
            let child = runs[location.runIndex]?.children[location.leaf], child.attempt == ref.attempt,
            let old = child.worker, Self.isPastSession(old) || workerNames[old] == workerNames[worker]
        else {
            actions.append(.cancel(worker, ref, reason: supersededReason(ref)))
            return
        }
        attempts.orphans.remove(ref.id)
        attempts.move(ref.id, from: old, to: worker)
        membership.addInFlight(-1, to: old)
        membership.addInFlight(1, to: worker)
        runs[location.runIndex]?.children[location.leaf].worker = worker
        if child.stage == .dispatched, started {
            runs[location.runIndex]?.children[location.leaf].stage = .started
            if child.cancelling == nil { runs[location.runIndex]?.children[location.leaf].phase = .running }
        }
        if let reason = child.cancelling { actions.append(.cancel(worker, ref, reason: reason)) }
    }

    /// Why an attempt a worker still runs is not adopted: `superseded by attempt 3`, or unknown.
    func supersededReason(_ ref: AttemptRef) -> CancellationReason {
        if let runIndex = runs.index(of: ref.group), let run = runs[runIndex], let node = run.nodeByPath[ref.path],
            node < run.leafCount,
            run.children[node].attempt > ref.attempt
        {
            return .superseded(byAttempt: run.children[node].attempt)
        }
        return .unknownAttempt
    }

    /// The worker said something (any message counts as a heartbeat).
    public mutating func workerHeard(_ id: SessionID, now: Timestamp) {
        membership.heard(id, now: now)
    }

    /// The worker drains itself (it is stopping): it takes no new work; what it runs finishes
    /// there, then it leaves.
    public mutating func workerDraining(_ id: SessionID, now: Timestamp) -> [SchedulerAction] {
        membership.heard(id, now: now)
        membership.setStopping(id)
        membershipChanged(now: now)
        settle(now: now)
        return takeActions()
    }

    /// An operator drains the worker of session `id` (`cohort drain`): it takes no new work,
    /// what it runs finishes there, and it stays connected and idle. The drain belongs to the
    /// worker's name: a new session of it (a reconnect, or its process restarted) is drained
    /// too, until ``workerUndrained(_:now:)`` (a restarted coordinator forgets drains).
    public mutating func workerDrainedByOperator(_ id: SessionID, now: Timestamp) -> [SchedulerAction] {
        guard let name = membership.workers[id]?.name else { return [] }
        membership.operatorDrain(name)
        membershipChanged(now: now)
        settle(now: now)
        return takeActions()
    }

    /// An operator gives a drained worker work again (`cohort undrain`); `worker` is its name,
    /// or the session id of a connected one (`w-3`). A worker drained but not connected now
    /// is no longer drained when it comes back.
    /// - Throws: ``SchedulerError`` `notFound` if no worker of that name or id is connected
    ///   or drained; `invalidRequest` if it is connected but not drained by an operator, or
    ///   is stopping itself (a worker that drains itself leaves; undrain cannot keep it).
    public mutating func workerUndrained(_ worker: String, now: Timestamp) throws(SchedulerError)
        -> [SchedulerAction]
    {
        let connected = membership.workers.values.sorted { $0.id < $1.id }.first {
            $0.name == worker || $0.id.description == worker
        }
        let name = connected?.name ?? worker
        guard membership.operatorDrains.contains(name) else {
            guard let connected else {
                throw SchedulerError(.notFound, "no worker named \"\(worker)\" is connected or drained")
            }
            if connected.stopping {
                throw SchedulerError(
                    .invalidRequest,
                    "worker \"\(connected.name)\" is draining because it is stopping (SIGTERM); undrain cannot keep it")
            }
            throw SchedulerError(.invalidRequest, "worker \"\(connected.name)\" is not drained")
        }
        membership.operatorUndrain(name)
        membershipChanged(now: now)
        settle(now: now)
        return takeActions()
    }

    /// Whether an operator drained the worker `name` (``workerDrainedByOperator(_:now:)``).
    public func isDrainedByOperator(_ name: String) -> Bool {
        membership.operatorDrains.contains(name)
    }

    /// The worker left (said goodbye, or its connection is gone): as lost.
    ///
    /// `handedBack`: the worker stopped its attempts itself before it left (it said
    /// `disconnect` after a drain timeout or a stop), so they get new attempts at no cost; a
    /// worker that is lost (silent, unreachable, killed) costs each attempt it had started
    /// one of its child's worker losses (``SchedulerConfiguration/maxWorkerLosses``).
    public mutating func workerLost(
        _ id: SessionID, reason: String, handedBack: Bool = false, now: Timestamp
    ) -> [SchedulerAction] {
        loseWorker(id, reason: reason, loss: .left, handedBack: handedBack, now: now)
        settle(now: now)
        return takeActions()
    }

    /// Revokes the session's grants and lock requests; each of its attempts gets a new attempt
    /// or finishes: cancelled if it was being cancelled; failed, naming the worker and every
    /// attempt's error, if its child's group was cancelled, its `onWorkerLoss` is `fail`, or
    /// it has lost more workers than `maxWorkerLosses`. An attempt that never started (or was
    /// handed back) costs nothing; one that started costs a worker loss, never a retry.
    mutating func loseWorker(
        _ id: SessionID, reason: String, loss: WorkerLoss, handedBack: Bool = false, now: Timestamp
    ) {
        guard let record = membership.remove(id) else { return }
        #if DELIBERATE_BUGS
            // SchedulerMutation.keepLostWorkerGrants: the session's attempts end, their grants stay.
            keepsEndedAttemptsGrants = mutated(.keepLostWorkerGrants)
            defer { keepsEndedAttemptsGrants = false }
        #endif
        let attemptIDs = (attempts.bySession.removeValue(forKey: id) ?? []).sorted()
        for attemptID in attemptIDs {
            // The worker is gone: its counts and local requests go with it.
            attempts[attemptID]?.dispatched = false
            loseAttempt(
                attemptID, message: "worker \(record.name) (\(id)) was lost: \(reason)", costsALoss: !handedBack,
                now: now)
        }
        membershipChanged(now: now)
        actions.append(.sessionLost(id, loss))
    }

    /// An attempt whose worker was lost, or stopped it because its lease ended: a new attempt,
    /// or the child finishes: cancelled if it was being cancelled; failed, naming the worker
    /// and every attempt's error, if its group was cancelled, its `onWorkerLoss` is `fail`, or
    /// it has lost more workers than `maxWorkerLosses`. An attempt that never started (or was
    /// handed back, `costsALoss` false) costs nothing; one that started costs a worker loss,
    /// never a retry.
    mutating func loseAttempt(_ attemptID: AttemptID, message: String, costsALoss: Bool, now: Timestamp) {
        guard let location = attempts[attemptID], let run = runs[location.runIndex] else { return }
        let (runIndex, leaf) = (location.runIndex, location.leaf)
        let child = run.children[leaf]
        if let cancelling = child.cancelling {
            finishLeaf(runIndex, leaf, .cancelled, reason: cancelling, now: now)
            return
        }
        let lost = child.stage == .started && costsALoss
        let losses = Int(child.losses) + (lost ? 1 : 0)
        if lost { runs[runIndex]?.children[leaf].losses = UInt8(clamping: losses) }
        if lost, let failure = lossFailure(losses, policy: run.flat.leaves[leaf].onWorkerLoss, message) {
            finishLeaf(runIndex, leaf, .failed, message: everyAttemptsError(runIndex, leaf, last: failure), now: now)
        } else if run.isInCancelledGroup(leaf) {
            finishLeaf(runIndex, leaf, .failed, message: everyAttemptsError(runIndex, leaf, last: message), now: now)
        } else {
            endForRetry(runIndex, leaf, attemptID, .lost, message: message, countsAsError: lost, now: now)
            if observes { observe(.attemptRerunAfterWorkerLoss) }
            work.append(.unblocked(runIndex: runIndex, leaf: leaf))
        }
    }

    /// The error of a child whose attempt's worker was lost, if that loss fails it: its
    /// `onWorkerLoss` is `fail`, or it has lost more workers than `maxWorkerLosses`.
    func lossFailure(_ losses: Int, policy: WorkerLossPolicy, _ message: String) -> String? {
        switch policy {
        case .fail:
            "\(message) (onWorkerLoss: fail)"
        case .retry where losses > configuration.maxWorkerLosses:
            "\(message) (\(losses) workers lost while it ran; maxWorkerLosses is \(configuration.maxWorkerLosses))"
        case .retry:
            nil
        }
    }
}
