import DequeModule
import Foundation

/// Placement on workers: which queued attempt goes to which worker.
///
/// Its one job is the queues of work waiting for a worker and the choice of worker. Work is
/// grouped by ``PlacementClass`` (kind × labels × whether it holds its own locks); each class
/// has a queue of attempts ready to go, a list of leaves *parked* because no connected worker
/// can run them, and the list of capable workers. It knows nothing of groups: the scheduler
/// facade checks that an entry is still current when it takes it, and dispatches.
///
/// Each class's queue is in rank order (``Scheduler/rank(_:now:)``: the time of queueing minus
/// the group's priority head start), equal ranks in arrival order: with every priority 0 that
/// is FIFO and queueing appends (one comparison). Once some group has a priority, a placement
/// round takes the best-ranked head across classes, one attempt at a time, instead of class
/// by class in turn (docs/scheduling.md, "Priorities").
///
/// Invariants:
/// - every queue is sorted by rank;
/// - `queuedCount` is the sum of the queues' lengths (stale entries included until met);
/// - `capable[c]` lists exactly the ready workers that offer class `c`'s kind and labels,
///   sorted by id (``refresh(_:)`` after every membership change);
/// - a leaf is parked only while `capable[c]` is empty, and is handed back by ``refresh(_:)``
///   as soon as it is not;
/// - ``pickWorker(_:membership:prefetch:shortAttempt:)`` never exceeds `slots + window`
///   attempts on a worker, its window being `prefetch` or, while its attempts run short, twice
///   its slots (``WorkerRecord/window(prefetch:shortAttempt:)``); `slots` for a class with its
///   own locks, so a granted lock never waits in a queue.
struct Placement: Sendable {
    private(set) var classes: [PlacementClass] = []
    private var classIndex: [PlacementClass: Int32] = [:]
    private var queues: [Deque<QueueEntry>] = []
    private var parked: [[QueueEntry]] = []
    private var capable: [[SessionID]] = []
    /// Per class: where in `capable` the next search for a worker starts (ties take turns).
    private var turns: [Int] = []
    private(set) var queuedCount = 0
    private var rotation = 0
    /// Whether an attempt of a group with a priority other than 0 was ever queued: rounds
    /// then go by rank across classes.
    private(set) var ranksAcrossClasses = false

    /// The class's index, adding it (and the workers that can serve it) the first time.
    mutating func classID(_ placement: PlacementClass, membership: Membership) -> Int32 {
        if let index = classIndex[placement] { return index }
        let index = Int32(classes.count)
        classes.append(placement)
        classIndex[placement] = index
        queues.append([])
        parked.append([])
        capable.append(Self.capableWorkers(for: placement, in: membership))
        turns.append(0)
        return index
    }

    /// Whether some connected worker can run the class.
    func canRun(_ index: Int) -> Bool { !capable[index].isEmpty }

    /// Parks a leaf no connected worker can run (it has no attempt yet).
    mutating func park(runIndex: Int, leaf: Int, in index: Int) {
        parked[index].append(QueueEntry(runIndex: runIndex, leaf: Int32(leaf), attemptID: .none))
    }

    /// Queues an attempt whose locks are held, by `rank` (smaller first; `prioritized`: its
    /// group's priority is not 0).
    mutating func enqueue(runIndex: Int, leaf: Int, attemptID: AttemptID, rank: Int64, prioritized: Bool, in index: Int)
    {
        let entry = QueueEntry(runIndex: runIndex, leaf: Int32(leaf), attemptID: attemptID, rank: rank)
        if prioritized { ranksAcrossClasses = true }
        if let last = queues[index].last, rank < last.rank {
            var low = 0
            var high = queues[index].count
            while low < high {
                let middle = (low + high) / 2
                if queues[index][middle].rank <= rank { low = middle + 1 } else { high = middle }
            }
            queues[index].insert(entry, at: low)
        } else {
            queues[index].append(entry)
        }
        queuedCount += 1
    }

    /// The class whose first queued entry has the smallest rank, among those not in `skipped`.
    func bestRankedClass(skipping skipped: Set<Int>) -> Int? {
        var best: (index: Int, rank: Int64)?
        for index in queues.indices where !skipped.contains(index) {
            guard let first = queues[index].first else { continue }
            if best == nil || first.rank < best!.rank { best = (index, first.rank) }
        }
        return best?.index
    }

    /// Recomputes which workers serve which class after a worker joined, left or started
    /// draining; returns the parked leaves of classes that can now run (unparked).
    mutating func refresh(_ membership: Membership) -> [QueueEntry] {
        var unparked: [QueueEntry] = []
        for index in classes.indices {
            capable[index] = Self.capableWorkers(for: classes[index], in: membership)
            guard !capable[index].isEmpty, !parked[index].isEmpty else { continue }
            unparked += parked[index]
            parked[index] = []
        }
        return unparked
    }

    /// Starts a placement round: the class to begin with (a rotating one, so no class starves
    /// another) and how many classes there are; nil when nothing is queued.
    mutating func startRound() -> (start: Int, count: Int)? {
        guard queuedCount > 0, !classes.isEmpty else { return nil }
        rotation = (rotation + 1) % classes.count
        return (rotation, classes.count)
    }

    /// Renumbers the leaves of run `run` in every queue and parked list (a growing group's
    /// plan was rebuilt with children inserted, Scheduler+Growing.swift). Order and ranks stay.
    mutating func renumberLeaves(ofRun run: Int, _ map: (Int) -> Int) {
        func renumber(_ entry: inout QueueEntry) {
            if entry.runIndex == run { entry.leaf = Int32(map(Int(entry.leaf))) }
        }
        for index in queues.indices {
            for position in queues[index].indices { renumber(&queues[index][position]) }
            for position in parked[index].indices { renumber(&parked[index][position]) }
        }
    }

    /// Whether the class has queued work.
    func hasQueued(_ index: Int) -> Bool { !queues[index].isEmpty }

    /// The first entry of the class's queue, if any.
    func first(in index: Int) -> QueueEntry? { queues[index].first }

    /// The class's queue, first first (tests).
    func queue(_ index: Int) -> [QueueEntry] { Array(queues[index]) }

    /// Drops the first entry of the class's queue (taken, or stale).
    mutating func removeFirst(in index: Int) {
        queues[index].removeFirst()
        queuedCount -= 1
    }

    /// The least loaded capable worker with room for one more attempt of the class.
    ///
    /// Lower load (in flight per slot) wins, then fewer in flight. Equally loaded workers take
    /// turns: the search starts after the worker the class last chose, so work that runs one
    /// at a time (a shared `exclusive` category, a chain) does not always land on the same
    /// worker just because every worker is idle when it is placed.
    mutating func pickWorker(_ index: Int, membership: Membership, prefetch: Int, shortAttempt: Duration)
        -> SessionID?
    {
        let exclusive = classes[index].exclusive
        let candidates = capable[index]
        guard !candidates.isEmpty else { return nil }
        let start = turns[index] % candidates.count
        var best: (position: Int, record: WorkerRecord)?
        for offset in 0..<candidates.count {
            let position = (start + offset) % candidates.count
            guard let record = membership.workers[candidates[position]], record.state == .ready,
                record.inFlight < record.slots
                    + (exclusive ? 0 : record.window(prefetch: prefetch, shortAttempt: shortAttempt))
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

    /// Warnings for a new run: kinds (or kinds with labels) no connected worker offers.
    func warnings(for classIDs: [Int32], membership: Membership) -> [String] {
        var warnings: [String] = []
        var seen = Set<Int32>()
        for index in classIDs where seen.insert(index).inserted && capable[Int(index)].isEmpty {
            if let reason = Self.unplaceableReason(classes[Int(index)], membership: membership),
                !warnings.contains(reason)
            {
                warnings.append(reason)
            }
        }
        return warnings
    }

    /// Why no connected worker can run the class, or nil if one can.
    static func unplaceableReason(_ placement: PlacementClass, membership: Membership) -> String? {
        let ready = membership.workers.values.filter { $0.state == .ready }
        let kindOffered = ready.contains { $0.kinds.contains(placement.kind) }
        if !kindOffered { return "no connected worker offers kind \"\(placement.kind)\"" }
        if !ready.contains(where: { $0.offers(kind: placement.kind, labels: placement.requires) }) {
            return
                "no connected worker offers kind \"\(placement.kind)\" with labels \(placement.requires.joined(separator: ", "))"
        }
        return nil
    }

    /// Ready workers that offer the class's kind and labels, by id.
    private static func capableWorkers(for placement: PlacementClass, in membership: Membership) -> [SessionID] {
        membership.workers.values
            .filter { $0.state == .ready && $0.offers(kind: placement.kind, labels: placement.requires) }
            .map(\.id).sorted()
    }
}

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
    var attemptID: AttemptID
    /// Its place in the queue (smaller first); 0 for a parked leaf.
    var rank: Int64 = 0
}
