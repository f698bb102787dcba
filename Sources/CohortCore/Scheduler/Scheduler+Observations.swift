/// Observations for metrics (``SchedulerObservation``) and the state counted
/// (``SchedulerSummary``). Nothing here changes a decision: with ``observes`` off (the
/// default) the lock helpers only forward to the lock table.
extension Scheduler {
    /// Hands every observation gathered since the last call to `body`, oldest first, and
    /// forgets them. Call it once per loop turn while ``observes`` is on.
    public mutating func drainObservations(_ body: (SchedulerObservation) -> Void) {
        guard !observations.isEmpty else { return }
        for observation in observations { body(observation) }
        observations.removeAll(keepingCapacity: true)
    }

    /// The scheduler's state, counted (groups by state, waiting and ready children, locks,
    /// workers and slots). Walks the unfinished groups' children: call it about once a second.
    public mutating func summary() -> SchedulerSummary {
        var summary = SchedulerSummary()
        runs.forEachRun { run in
            summary.groups[run.phase, default: 0] += 1
            guard !run.phase.isFinished else { return }
            for child in run.children {
                switch child.stage {
                case .blocked: summary.waiting[.dependencies, default: 0] += 1
                case .awaitingHold, .locking: summary.waiting[.lock, default: 0] += 1
                case .parked: summary.waiting[.label, default: 0] += 1
                case .retryWait: summary.waiting[.retry, default: 0] += 1
                case .queued: summary.ready += 1
                case .dispatched: summary.dispatched += 1
                case .started: summary.running += 1
                case .done: break
                }
            }
        }
        let counts = locks.requestCounts
        summary.lockHolders = counts.granted
        summary.lockWaiters = counts.waiting
        for record in membership.workers.values {
            summary.workers[record.state, default: 0] += 1
            summary.slots += record.slots
            summary.slotsInUse += min(max(record.inFlight, 0), record.slots)
        }
        // Timings of holders the lock table dropped with their scope's owner.
        if observes, lockTimes.count > counts.granted + counts.waiting {
            let locks = self.locks
            lockTimes = lockTimes.filter { locks.state(of: $0.key).exists }
        }
        return summary
    }

    /// How many lock requests the scheduler keeps the times of (while ``observes`` is on).
    /// Right after ``summary()`` it is at most the lock table's requests (granted and
    /// waiting): the bookkeeping is bounded by the table (the simulation checks it).
    public var lockTimingCount: Int { lockTimes.count }

    // MARK: Reporting, from the scheduler's events

    mutating func observe(_ observation: SchedulerObservation) {
        observations.append(observation)
    }

    /// Requests a lock for `holder` (``LockTable/request(_:levels:owner:)``), timing it.
    mutating func requestLock(
        _ holder: LockHolder, levels: [LockLevel], owner: LockOwner?, rank: Int64, now: Timestamp
    ) -> LockTable.Grant? {
        let grant = locks.request(holder, levels: levels, owner: owner, at: now, rank: rank)
        guard observes else { return grant }
        var categories: [String] = []
        for level in levels { categories.append(contentsOf: level.categories) }
        lockTimes[holder] = LockTiming(requestedAt: now, grantedAt: grant == nil ? nil : now, categories: categories)
        if grant != nil {
            for category in categories { observe(.lockGranted(category: category, waited: .zero)) }
        }
        return grant
    }

    /// Releases or withdraws `holder`'s request (``LockTable/remove(_:)``), timing it and the
    /// requests it completes.
    mutating func removeLock(_ holder: LockHolder, now: Timestamp) -> [LockTable.Grant] {
        let grants = locks.remove(holder, at: now)
        guard observes else { return grants }
        if let timing = lockTimes.removeValue(forKey: holder), let grantedAt = timing.grantedAt {
            for category in timing.categories { observe(.lockReleased(category: category, held: now - grantedAt)) }
        }
        for grant in grants {
            guard var timing = lockTimes[grant.holder], timing.grantedAt == nil else { continue }
            timing.grantedAt = now
            lockTimes[grant.holder] = timing
            for category in timing.categories {
                observe(.lockGranted(category: category, waited: now - timing.requestedAt))
            }
        }
        return grants
    }
}
