/// Lock requests a worker makes for procedures that a running attempt creates locally
/// (`MutuallyExclusive` inside a local group): they go through the same cluster-wide table.
extension Scheduler {
    /// A running attempt's worker asks for `categories`, all at once.
    ///
    /// Categories the attempt holds itself are granted from the attempt's own table (its
    /// local procedures exclude each other, not the attempt); those an enclosing group holds,
    /// from that group's table; the rest from the cluster table. The grant (now or later) is
    /// a ``SchedulerAction/grant(_:request:tokens:)``; a request from an attempt that is not
    /// running there, or with an id in use, is denied.
    public mutating func lockRequested(
        _ request: UInt64, by worker: WorkerID, for ref: AttemptRef, categories: [String], now: Timestamp
    ) -> [SchedulerAction] {
        membership.heard(worker, now: now)
        let holder = LockHolder.local(worker: worker, request: request)
        guard let location = try? current(ref, on: worker),
            runs[location.slot]!.children[location.leaf].cancelling == nil
        else {
            return [.deny(worker, request: request, .denied, reason: "attempt \(ref) is not running on \(worker)")]
        }
        guard localRequests[holder] == nil else {
            return [.deny(worker, request: request, .denied, reason: "lock request \(request) is already in use")]
        }
        let plan = runs[location.slot]!.plan
        let leaf = plan.flat.leaves[location.leaf]
        var attemptScoped = Set<String>()
        var others: [String] = []
        for category in Set(categories) {
            if leaf.exclusive.contains(category) { attemptScoped.insert(category) } else { others.append(category) }
        }
        let levels =
            plan.lockLevels(for: others.sorted(), ancestors: leaf.ancestors)
            + [LockLevel(scope: .attempt(ref.id), categories: attemptScoped)]
        let owner = LockOwner(group: plan.id, child: leaf.path, attempt: ref.attempt, worker: worker)
        localRequests[holder] = ref.id
        localByAttempt[ref.id, default: []].append(request)
        if let grant = locks.request(holder, levels: levels, owner: owner) {
            return [.grant(worker, request: request, tokens: grant.tokens)]
        }
        return []
    }

    /// The worker gives back a grant (or withdraws a request not granted yet); whatever that
    /// makes possible is granted.
    public mutating func lockReleased(_ request: UInt64, by worker: WorkerID, now: Timestamp) -> [SchedulerAction] {
        membership.heard(worker, now: now)
        let holder = LockHolder.local(worker: worker, request: request)
        guard let taskID = localRequests.removeValue(forKey: holder) else { return [] }
        localByAttempt[taskID]?.removeAll { $0 == request }
        if localByAttempt[taskID]?.isEmpty == true { localByAttempt[taskID] = nil }
        handleGrants(locks.remove(holder), now: now)
        settle(now: now)
        return takeActions()
    }

    /// The worker withdraws a request (its waiter was cancelled). Withdrawing a request that
    /// was granted meanwhile releases it; it never affects another holder.
    public mutating func lockWithdrawn(_ request: UInt64, by worker: WorkerID, now: Timestamp) -> [SchedulerAction] {
        lockReleased(request, by: worker, now: now)
    }

    /// An attempt is being cancelled: its local requests that wait are withdrawn for it, and
    /// the worker is told (`cancelled`). Granted ones stay until the attempt finishes.
    mutating func withdrawLocalRequests(of taskID: UInt64, worker: WorkerID, now: Timestamp) {
        guard let requests = localByAttempt[taskID] else { return }
        var kept: [UInt64] = []
        for request in requests {
            let holder = LockHolder.local(worker: worker, request: request)
            if locks.state(of: holder).granted {
                kept.append(request)
                continue
            }
            localRequests[holder] = nil
            handleGrants(locks.remove(holder), now: now)
            actions.append(.deny(worker, request: request, .cancelled, reason: "its attempt is being cancelled"))
        }
        localByAttempt[taskID] = kept.isEmpty ? nil : kept
    }
}
