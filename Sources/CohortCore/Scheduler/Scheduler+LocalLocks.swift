import CohortSpec

/// Lock requests a worker makes for procedures that a running attempt creates locally
/// (`MutuallyExclusive` inside a local group): they go through the same cluster-wide table.
///
/// A request belongs to its attempt (``LockHolder/local(attempt:request:)``), not to the
/// worker's session: when the worker reconnects and reports the attempt, its grants and
/// waiting requests carry over to the new session; a restarted coordinator restores the
/// journaled grants of the attempts it restores (``restoreLocalGrant(_:)``). They go when the
/// attempt ends, however it ends (a lost worker, an attempt nobody reported after a restart).
extension Scheduler {
    /// A running attempt's worker asks for `categories`, all at once.
    ///
    /// Categories the attempt holds itself are granted from the attempt's own table (its
    /// local procedures exclude each other, not the attempt); those an enclosing group holds,
    /// from that group's table; the rest from the cluster table. The grant (now or later) is
    /// a ``SchedulerAction/grant(_:request:tokens:)``; a request from an attempt that is not
    /// running there is denied. A request the attempt already made (the worker asks again in
    /// a new session) is answered with its grant again if it has one, else goes on waiting.
    public mutating func lockRequested(
        _ request: UInt64, by worker: SessionID, for ref: AttemptRef, categories: [String], now: Timestamp
    ) -> [SchedulerAction] {
        membership.heard(worker, now: now)
        let holder = LockHolder.local(attempt: ref.id, request: request)
        guard let location = try? current(ref, on: worker),
            runs[location.runIndex]?.children[location.leaf].cancelling == nil
        else {
            return [.deny(worker, request: request, .denied, reason: "attempt \(ref) is not running on \(worker)")]
        }
        if attempts.localRequests[ref.id]?.contains(request) == true {
            guard let tokens = locks.tokens(of: holder) else { return [] }
            return [.grant(worker, request: request, tokens: tokens)]
        }
        guard let plan = runs[location.runIndex]?.plan else { return [] }
        let leaf = plan.flat.leaves[location.leaf]
        if let refusal = Self.uncovered(categories, of: leaf, in: plan.flat) {
            return [.deny(worker, request: request, .denied, reason: refusal)]
        }
        let owner = LockOwner(group: plan.id, child: leaf.path, attempt: ref.attempt, worker: worker)
        attempts.localRequests[ref.id, default: []].append(request)
        if let grant = requestLock(
            holder, levels: localLevels(categories, of: plan, leaf: location.leaf, attemptID: ref.id), owner: owner,
            rank: rank(location.runIndex, now: now), now: now)
        {
            recordLocalGrant(ref.id, request: request, tokens: grant.tokens)
            actions.append(.grant(worker, request: request, tokens: grant.tokens))
        }
        return takeActions()
    }

    /// Why a local request must be refused, if it must: an attempt that holds categories (its
    /// own `exclusive`, or through an enclosing group's hold) may lock locally only what it
    /// holds; waiting for anything else while holding could close a cycle with another holder
    /// (docs/scheduling.md, "Why locks never deadlock"). An attempt that holds nothing may
    /// lock anything.
    static func uncovered(_ categories: [String], of leaf: FlatLeaf, in flat: FlatSpec) -> String? {
        let covering: [String]
        let holder: String
        if !leaf.exclusive.isEmpty {
            covering = leaf.exclusive
            holder = "its exclusive categories"
        } else if let group = leaf.ancestors.last(where: { !flat.groups[$0].holds.isEmpty }) {
            covering = flat.groups[group].holds
            let path = flat.groups[group].path
            holder = "the categories its group \(path.isEmpty ? "" : "\"\(path)\" ")holds"
        } else {
            return nil
        }
        let outside = Set(categories).subtracting(covering).sorted()
        guard !outside.isEmpty else { return nil }
        return "an attempt of \"\(leaf.path)\" may lock only \(holder) (\(covering.joined(separator: ", "))), "
            + "not \(outside.joined(separator: ", ")): declare \(outside.count == 1 ? "it" : "them") in the child's "
            + "`exclusive` (locks taken while holding others could deadlock)"
    }

    /// The levels of a local request: the attempt's own categories from its table, the others
    /// from the enclosing groups' tables or the cluster's.
    private func localLevels(_ categories: some Sequence<String>, of plan: GroupPlan, leaf: Int, attemptID: AttemptID)
        -> [LockLevel]
    {
        let leaf = plan.flat.leaves[leaf]
        var attemptScoped = Set<String>()
        var others: [String] = []
        for category in Set(categories) {
            if leaf.exclusive.contains(category) { attemptScoped.insert(category) } else { others.append(category) }
        }
        return plan.lockLevels(for: others.sorted(), ancestors: leaf.ancestors)
            + [LockLevel(scope: .attempt(attemptID), categories: attemptScoped)]
    }

    /// The worker gives back a grant (or withdraws a request not granted yet); whatever that
    /// makes possible is granted.
    public mutating func lockReleased(_ request: UInt64, by worker: SessionID, now: Timestamp) -> [SchedulerAction] {
        membership.heard(worker, now: now)
        guard
            let attemptID = attempts.bySession[worker]?.first(where: {
                attempts.localRequests[$0]?.contains(request) == true
            })
        else { return [] }
        attempts.localRequests[attemptID]?.removeAll { $0 == request }
        if attempts.localRequests[attemptID]?.isEmpty == true { attempts.localRequests[attemptID] = nil }
        if emitsRecords { actions.append(.record(.localLock(.released(attemptID: attemptID, request: request)))) }
        handleGrants(removeLock(.local(attempt: attemptID, request: request), now: now), now: now)
        settle(now: now)
        return takeActions()
    }

    /// The worker withdraws a request (its waiter was cancelled). Withdrawing a request that
    /// was granted meanwhile releases it; it never affects another holder.
    public mutating func lockWithdrawn(_ request: UInt64, by worker: SessionID, now: Timestamp) -> [SchedulerAction] {
        lockReleased(request, by: worker, now: now)
    }

    /// An attempt is being cancelled: its local requests that wait are withdrawn for it, and
    /// the worker is told (`cancelled`). Granted ones stay until the attempt finishes.
    mutating func withdrawLocalRequests(of attemptID: AttemptID, worker: SessionID, now: Timestamp) {
        guard let requests = attempts.localRequests[attemptID] else { return }
        var kept: [UInt64] = []
        for request in requests {
            let holder = LockHolder.local(attempt: attemptID, request: request)
            if locks.state(of: holder).granted {
                kept.append(request)
                continue
            }
            handleGrants(removeLock(holder, now: now), now: now)
            actions.append(.deny(worker, request: request, .cancelled, reason: "its attempt is being cancelled"))
        }
        attempts.localRequests[attemptID] = kept.isEmpty ? nil : kept
    }

    /// Notes a local grant for the journal.
    mutating func recordLocalGrant(_ attemptID: AttemptID, request: UInt64, tokens: [String: UInt64]) {
        guard emitsRecords, let location = attempts[attemptID], let run = runs[location.runIndex] else { return }
        actions.append(
            .record(
                .localLock(
                    .granted(
                        LocalLockRecord(
                            group: run.plan.id, path: run.flat.leaves[location.leaf].path,
                            attempt: run.children[location.leaf].attempt, attemptID: attemptID, request: request,
                            tokens: tokens)))))
    }

    /// Rebuilds a journaled local grant of a restored attempt with its tokens (at restart, for
    /// orphans only): the attempt carries on if its worker reports it, and the grant with it;
    /// if nobody does, the attempt ends and the grant is revoked with it.
    mutating func restoreLocalGrant(_ record: LocalLockRecord) {
        guard attempts.orphans.contains(record.attemptID), let location = attempts[record.attemptID],
            let run = runs[location.runIndex],
            attempts.localRequests[record.attemptID]?.contains(record.request) != true
        else { return }
        let holder = LockHolder.local(attempt: record.attemptID, request: record.request)
        let owner = LockOwner(
            group: run.plan.id, child: run.flat.leaves[location.leaf].path, attempt: record.attempt,
            worker: run.children[location.leaf].worker)
        let levels = localLevels(record.tokens.keys, of: run.plan, leaf: location.leaf, attemptID: record.attemptID)
        guard locks.restoreGrant(holder, levels: levels, owner: owner, tokens: record.tokens) else { return }
        attempts.localRequests[record.attemptID, default: []].append(record.request)
    }
}
