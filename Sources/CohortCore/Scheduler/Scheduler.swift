import CohortSpec
import DequeModule
import Foundation

/// The cluster's scheduler: a pure state machine that takes events (a submission, a worker
/// joining, an attempt's result, a cancel, the passing of time) and returns everything that
/// follows as one stream of ``SchedulerAction``s: messages (dispatches, cancels, lock grants,
/// watch events), what the journal records (``SchedulerAction/record(_:)``) and worker
/// sessions that ended (``SchedulerAction/sessionLost(_:_:)``).
///
/// It is a thin facade over state machines with one job each, and routes events between them:
/// - ``RunTable`` and ``GroupRun`` — the progress of group runs: dependency counting,
///   outcomes, injection inputs (Runs/, Groups/);
/// - ``Placement`` — placement on workers: queues by class, parked leaves, capable workers,
///   the choice of worker (Placement/);
/// - ``AttemptTable`` — attempts and retries: attempt ids and their sessions, orphans after
///   a restart, retry and timeout timers (Attempts/);
/// - ``LockTable`` — the cluster-wide locks and fencing tokens (Locks/);
/// - ``Membership`` — the worker registry with liveness (Membership/).
/// The `Scheduler+*.swift` extensions are the routing: what an event means for each part.
/// It never touches a socket, a clock or a thread: every event carries `now`.
///
/// What it guarantees (docs/scheduling.md):
/// - a procedure starts only after everything it waits for (`after`, `inject`, sequence
///   order, its enclosing groups' `after`) has finished;
/// - it runs on a ready worker that offers its kind and has all its `requires` labels,
///   least loaded first, with at most `slots + prefetch` attempts per worker;
/// - its `exclusive` categories (and its enclosing groups' holds) are granted before it is
///   dispatched, and the dispatch carries the fencing tokens;
/// - producers' outputs are injected (`select` → `into`) into consumers' inputs; a producer
///   that failed or was cancelled cancels its consumers, naming it;
/// - `onChildFailure` decides what a failure cancels; cancelling a group or a child reaches
///   every attempt (each cancel names its attempt), never starts pending children, withdraws
///   waiting lock requests and finishes the group only after every child has reported back;
/// - a lost worker's attempts get new attempts (within the retry budget; attempts that never
///   started do not count) and its grants are revoked.
///
/// Cost: every event is a few dictionary lookups by attempt id and run index, plus the
/// placement pass over the classes of queued work (kind × labels); nothing scans every child.
public struct Scheduler: Sendable {
    public let configuration: SchedulerConfiguration
    /// The worker registry.
    public internal(set) var membership: Membership
    /// The cluster-wide lock table.
    public internal(set) var locks: LockTable

    /// The progress of group runs.
    var runs = RunTable()
    /// Attempts and retries: attempt ids, their sessions, timers, orphans.
    var attempts: AttemptTable
    /// Every session's worker name, also after it left (for records and snapshots).
    var workerNames: [SessionID: String] = [:]

    /// Placement on workers: queues by class, parked leaves, the choice of worker.
    var placement = Placement()

    /// Retry jitter.
    var random: SplitMix64
    /// Propagation work, processed iteratively so long chains never deepen the stack.
    var work: Deque<Work> = []
    /// Actions gathered during the current event.
    var actions: [SchedulerAction] = []

    // The journal (Scheduler+Restore.swift).
    /// Whether what the journal keeps is reported as ``SchedulerAction/record(_:)`` actions
    /// (the coordinator has a journal). Off, nothing is built for it.
    public var emitsRecords = false

    // Metrics (Scheduler+Observations.swift).
    /// Whether the scheduler reports ``SchedulerObservation``s (the coordinator serves
    /// metrics). Off, nothing is gathered for them.
    public var observes = false
    /// Observations since the last ``drainObservations(_:)``.
    var observations: [SchedulerObservation] = []
    /// When each lock request was made and granted, while ``observes`` is on.
    var lockTimes: [LockHolder: LockTiming] = [:]
    /// Map procedures that started succeeded with an earlier run's output (`cohort rerun`),
    /// counted for ``Acceptance/reused``.
    var mapReuses = 0

    #if DELIBERATE_BUGS
        /// ``SchedulerMutation/keepLostWorkerGrants``: set while a lost session's attempts end.
        var keepsEndedAttemptsGrants = false
    #endif

    public init(configuration: SchedulerConfiguration = SchedulerConfiguration()) {
        self.configuration = configuration
        self.membership = Membership(
            heartbeatInterval: configuration.heartbeatInterval, liveness: configuration.liveness)
        self.locks = LockTable(tokenFloor: configuration.tokenFloor)
        self.locks.configuredLimits = configuration.lockLimits
        // Attempt ids start above the floor too, so a restarted coordinator (a larger epoch)
        // never hands out an id an earlier incarnation used.
        self.attempts = AttemptTable(floor: configuration.tokenFloor)
        self.random = SplitMix64(seed: configuration.randomSeed)
    }

    // MARK: Submission

    /// Accepts a group.
    ///
    /// `spec` must be valid (the coordinator parses and validates every submission with
    /// `SpecParser`). With an `id` that is already known, the same spec is accepted again
    /// idempotently (`alreadySubmitted`, no second copy) and another spec is refused.
    /// `flat` is `spec.flattened()` if the caller already has it (computed off the hot path).
    /// `owner` is the CURVE key (Z85) of the client that submitted it, `nil` without CURVE:
    /// a client key may cancel only groups it owns.
    ///
    /// `reusing` is for `cohort rerun`: the outputs (by path) of the procedures that succeeded
    /// in an earlier run of the same spec. Each of them starts succeeded with that output,
    /// unless something it waits for (all levels) runs again: a procedure the earlier run did
    /// not finish successfully runs again, and so does everything after it
    /// (``Acceptance/reused`` counts the others).
    /// - Throws: ``SchedulerError`` `conflict` for an id reused with another spec,
    ///   `invalidRequest` for an id that is empty, too long or has spaces or control characters.
    public mutating func submit(
        _ spec: GroupSpec, id: String? = nil, flat: FlatSpec? = nil, owner: String? = nil,
        reusing outputs: [String: Data] = [:], now: Timestamp
    ) throws(SchedulerError)
        -> Acceptance
    {
        if let id {
            try Self.checkGroupID(id)
            if let runIndex = runs.index(of: id), let run = runs[runIndex] {
                guard run.fingerprint == spec.hashValue else {
                    throw SchedulerError(.conflict, "group id \"\(id)\" is already used by another spec")
                }
                return Acceptance(id: id, name: run.name, warnings: [], alreadySubmitted: true, actions: [])
            }
        }
        let conflicts = locks.conflicts(with: spec.limits)
        guard conflicts.isEmpty else {
            throw SchedulerError(.conflict, conflicts.map(\.description).joined(separator: "; "))
        }
        let groupID = id ?? freshID(for: spec.name)
        runs.submissions += 1
        let plan = addRun(
            spec, id: groupID, flat: flat ?? spec.flattened(), sequence: runs.submissions, owner: owner,
            submittedAt: now)
        var warnings = placement.warnings(for: plan.placement, membership: membership)
        for (category, limit) in spec.limits.sorted(by: { $0.key < $1.key }) {
            guard let configured = configuration.lockLimits[category], configured != limit else { continue }
            warnings.append(
                "limits.\(category) is \(limit), but the coordinator's configuration sets \(configured), which applies")
        }
        if emitsRecords { actions.append(.record(.submitted(id: groupID, spec: spec, owner: owner, at: now))) }
        let reusesBefore = mapReuses
        var reused = 0
        if !outputs.isEmpty {
            let (count, mapsMadeAgain) = reuse(outputs, in: plan, now: now)
            reused = count
            // A map's procedures are made when it fans out: the earlier run's outputs of those
            // of a map whose producer (or anything else it waits for) did not run again are
            // kept for then (Scheduler+Map.swift).
            let mapPaths = plan.flat.groups.filter { $0.mapPending && !mapsMadeAgain.contains($0.index) }
                .map { $0.path + "/" }
            let kept = outputs.filter { entry in mapPaths.contains { entry.key.hasPrefix($0) } }
            if !kept.isEmpty { runs[plan.runIndex]?.reusable = kept }
        }
        settle(now: now)
        reused += mapReuses - reusesBefore
        return Acceptance(
            id: groupID, name: spec.name, warnings: warnings, alreadySubmitted: false, actions: takeActions(),
            reused: reused)
    }

    /// Finishes, succeeded with their earlier output, the procedures of a new run that
    /// `outputs` has and that wait (all levels: their own dependencies, their groups', sequence
    /// order) for nothing that runs again; returns how many, and the maps that wait for
    /// something that runs again. Before the run's first turn, so none of them has started.
    ///
    /// A map runs again: its procedures are made anew when it fans out (only there can those
    /// of the earlier run be reused), so what waits for it, or for a group around it, runs
    /// again too.
    private mutating func reuse(_ outputs: [String: Data], in plan: GroupPlan, now: Timestamp) -> (Int, Set<Int>) {
        let leaves = plan.flat.leaves
        var runsAgain = [Bool](repeating: false, count: leaves.count + plan.flat.groups.count)
        var stack: [Int] = []
        func mark(_ node: Int) {
            guard !runsAgain[node] else { return }
            runsAgain[node] = true
            stack.append(node)
        }
        for leaf in leaves.indices where outputs[leaves[leaf].path] == nil { mark(leaf) }
        for group in plan.flat.groups where group.mapPending { mark(leaves.count + group.index) }
        var mapsMadeAgain = Set<Int>()
        while let node = stack.popLast() {
            // A group around it holds something that runs again; a map that waits for it is
            // made from what runs again; what waits for it runs again.
            let enclosing = node < leaves.count ? leaves[node].ancestors : plan.ancestors(ofGroup: node - leaves.count)
            for group in enclosing { mark(leaves.count + group) }
            for group in plan.mapWaits[node] ?? [] {
                mapsMadeAgain.insert(Int(group))
                mark(leaves.count + Int(group))
            }
            for dependent in plan.dependents[node] { mark(Int(dependent)) }
        }
        var reused = 0
        for leaf in leaves.indices where !runsAgain[leaf] {
            finishLeaf(plan.runIndex, leaf, .succeeded, output: outputs[leaves[leaf].path], now: now)
            reused += 1
        }
        return (reused, mapsMadeAgain)
    }

    /// Adds a run and queues the propagation work of the leaves that wait for nothing; the
    /// caller settles. Shared by ``submit(_:id:flat:owner:now:)`` and ``restore(_:lastTokens:grace:now:)``.
    mutating func addRun(
        _ spec: GroupSpec, id groupID: String, flat: FlatSpec, sequence: UInt64, owner: String?, submittedAt: Timestamp,
        declaresLimits: Bool = true
    ) -> GroupPlan {
        #if DELIBERATE_BUGS
            // SchedulerMutation.deadlockHolds: a group's hold no longer covers what its
            // descendants declare, so a child inside may wait for a category outside the hold
            // while the group holds (the hold-and-wait of a lock cycle).
            var flat = flat
            if mutated(.deadlockHolds) {
                for index in flat.groups.indices { flat.groups[index].holds = flat.groups[index].exclusive }
            }
        #endif
        let runIndex = runs.reserveIndex()
        var placement: [Int32] = []
        placement.reserveCapacity(flat.leaves.count)
        for leaf in flat.leaves {
            placement.append(
                self.placement.classID(
                    PlacementClass(
                        kind: leaf.run, requires: leaf.requires.sorted(), exclusive: !leaf.exclusive.isEmpty),
                    membership: membership))
        }
        let plan = GroupPlan(
            runIndex: runIndex, id: groupID, spec: spec, flat: flat, placement: placement, sequence: sequence,
            owner: owner,
            now: submittedAt)
        runs.add(GroupRun(plan: plan))
        if declaresLimits { locks.declare(spec.limits) }
        for leaf in plan.remaining.indices {
            if plan.remaining[leaf] == 0 {
                work.append(.unblocked(runIndex: runIndex, leaf: leaf))
            } else {
                runs[runIndex]?.children[leaf].phase = .waiting
            }
        }
        // The group's own deadline runs from its submission (a nested group's from its start),
        // across restarts too.
        if let timeout = flat.groups[0].timeout {
            attempts.timers.schedule(.groupTimeout(runIndex: runIndex, group: 0), at: submittedAt + timeout)
        }
        return plan
    }

    /// Whether a group with this id is known (running or kept after finishing).
    public func contains(group id: String) -> Bool { runs.index(of: id) != nil }

    /// Reports every change of the group's children (``SchedulerAction/childChanged(group:_:)``)
    /// while `watched` is true; a watcher's shell turns it on and off.
    public mutating func setWatched(_ id: String, _ watched: Bool) {
        guard let runIndex = runs.index(of: id) else { return }
        runs[runIndex]?.watched = watched
    }

    /// When the scheduler next needs ``tick(now:)``: the earliest timer or liveness expiry.
    public var nextDeadline: Timestamp? {
        [attempts.timers.next, membership.nextExpiry(), attempts.orphanDeadline].compactMap { $0 }.min()
    }

    /// How many groups have not finished.
    public var activeGroupCount: Int { runs.activeCount }

    /// How many attempts are in flight on workers.
    public var attemptsInFlight: Int { attempts.inFlightCount }

    // MARK: Helpers

    static func checkGroupID(_ id: String) throws(SchedulerError) {
        guard !id.isEmpty, id.count <= 200 else {
            throw SchedulerError(.invalidRequest, "a group id must have 1 to 200 characters")
        }
        guard !id.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw SchedulerError(.invalidRequest, "a group id may not contain spaces or control characters: \"\(id)\"")
        }
    }

    private func freshID(for name: String) -> String {
        var number = runs.submissions + 1
        while runs.index(of: "\(name)-\(number)") != nil { number += 1 }
        return "\(name)-\(number)"
    }

    /// Processes pending propagation work, then places queued attempts on workers.
    mutating func settle(now: Timestamp) {
        drainWork(now: now)
        schedule(now: now)
        drainWork(now: now)
    }

    /// A request's place among waiters, for locks and slots: its time minus its group's
    /// priority head start (`priority × priorityAging`); smaller goes first (docs/scheduling.md,
    /// "Priorities"). With priority 0 it is the time, so arrival order.
    func rank(_ runIndex: Int, now: Timestamp) -> Int64 {
        let priority = runs[runIndex]?.plan.priority ?? 0
        guard priority != 0 else { return now.nanosecondsSinceEpoch }
        let headStart = Int64(priority).multipliedReportingOverflow(by: configuration.priorityAging.nanoseconds)
        let rank = now.nanosecondsSinceEpoch.subtractingReportingOverflow(headStart.partialValue)
        return headStart.overflow || rank.overflow ? (priority > 0 ? .min + 1 : .max) : rank.partialValue
    }

    mutating func takeActions() -> [SchedulerAction] {
        defer { actions.removeAll(keepingCapacity: true) }
        return actions
    }
}

/// A unit of propagation work.
enum Work: Sendable {
    /// A leaf's dependencies have all finished (or a retry or re-dispatch is due): take it
    /// through injection, holds, placement and locks.
    case unblocked(runIndex: Int, leaf: Int)
    /// A leaf or a group finished: update its dependents.
    case nodeFinished(runIndex: Int, node: Int)
    /// A map group's dependencies have all finished, or it is being cancelled: make its
    /// procedures, or end it without any (Scheduler+Map.swift).
    case mapReady(runIndex: Int, group: Int)
}
