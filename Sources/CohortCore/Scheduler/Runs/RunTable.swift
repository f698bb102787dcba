import DequeModule

/// The progress of group runs: every accepted group (running, or finished and kept for
/// `status` and `result`) by run index and by id, in submission order.
///
/// Its one job is holding the runs and finding them; what happens inside a run (dependency
/// counting, sequences, outcomes, injection inputs) is ``GroupRun``'s (GroupRun+Progress.swift),
/// and the facade routes between runs, attempts, placement and locks.
///
/// Invariants:
/// - `byID[id] == i` exactly when `self[i]?.id == id`; a run index is never reused;
/// - `finishedOrder` lists the finished runs, oldest first, and holds at most the retention
///   (``finished(_:retention:)`` forgets the oldest beyond it, from both maps);
/// - `submissions` is at least every run's `sequence`.
///
/// Reading a group through the subscript borrows it where a dictionary's getter copies it: a
/// ``GroupRun`` holds a dozen arrays and strings, so each `runs[runIndex]?.children[leaf]` read
/// through a dictionary retained and released every one of them (about a tenth of the
/// coordinator's time per result, profiled). Writing through it (`runs[runIndex]?.x = y`)
/// changes the group in place, as a dictionary's does.
///
/// Nothing force-unwraps a lookup: a group can be forgotten (`finishedGroupRetention`) while
/// messages about it are still on their way, so every access either chains (`runs[i]?.x = y`
/// writes in place and does nothing for a group that is gone) or binds the one field it
/// needs with `guard let … else { return }`. Binding a whole `GroupRun` (`if let run =
/// runs[i]`) copies it; the hot path never does.
struct RunTable: Sendable {
    /// Group id → run index.
    private(set) var byID: [String: Int] = [:]
    /// The next run index to hand out.
    private var nextIndex = 0
    /// How many groups were accepted (ids chosen by the scheduler count from it).
    var submissions: UInt64 = 0
    /// Finished runs, oldest first.
    private(set) var finishedOrder: Deque<Int> = []

    /// Run index → position in `storage`.
    private var positions: [Int: Int] = [:]
    private var storage: [GroupRun?] = []
    /// Positions of removed groups, reused first.
    private var free: [Int] = []

    /// How many groups it holds.
    var count: Int { positions.count }

    /// How many groups have not finished.
    var activeCount: Int { positions.count - finishedOrder.count }

    /// The run index of group `id`.
    func index(of id: String) -> Int? { byID[id] }

    /// A fresh run index.
    mutating func reserveIndex() -> Int {
        defer { nextIndex += 1 }
        return nextIndex
    }

    /// Adds a run under its index and id.
    mutating func add(_ run: GroupRun) {
        self[run.runIndex] = run
        byID[run.id] = run.runIndex
    }

    /// The run finished: it is kept for queries until `retention` newer ones finished.
    mutating func finished(_ runIndex: Int, retention: Int) {
        finishedOrder.append(runIndex)
        while finishedOrder.count > retention, let oldest = finishedOrder.popFirst() {
            if let forgotten = removeValue(forKey: oldest) { byID[forgotten.id] = nil }
        }
    }

    /// Calls `body` with every group, in no particular order, without copying the table.
    func forEachRun(_ body: (GroupRun) -> Void) {
        for case let run? in storage { body(run) }
    }

    /// Every group, in no particular order.
    var values: [GroupRun] { storage.compactMap { $0 } }

    subscript(runIndex: Int) -> GroupRun? {
        _read {
            if let position = positions[runIndex] {
                yield storage[position]
            } else {
                yield nil
            }
        }
        _modify {
            if let position = positions[runIndex] {
                yield &storage[position]
                if storage[position] == nil {
                    positions[runIndex] = nil
                    free.append(position)
                }
            } else {
                var added: GroupRun? = nil
                yield &added
                if let added { insert(added, at: runIndex) }
            }
        }
    }

    /// Removes the group in `runIndex` and returns it, if there is one.
    private mutating func removeValue(forKey runIndex: Int) -> GroupRun? {
        guard let position = positions.removeValue(forKey: runIndex) else { return nil }
        defer {
            storage[position] = nil
            free.append(position)
        }
        return storage[position]
    }

    private mutating func insert(_ run: GroupRun, at runIndex: Int) {
        if let position = free.popLast() {
            storage[position] = run
            positions[runIndex] = position
        } else {
            positions[runIndex] = storage.count
            storage.append(run)
        }
    }
}
