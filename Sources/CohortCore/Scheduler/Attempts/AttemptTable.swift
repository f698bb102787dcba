/// Attempts and retries: every attempt the scheduler handed out and has not seen end, where
/// it belongs and which worker session runs it, the retry and timeout timers, and the
/// attempts a restarted coordinator restored from its journal (orphans).
///
/// Its one job is the bookkeeping of attempt ids; what an attempt means for its child (its
/// outcome, its retry budget) is the group run's, and the facade routes between the two.
///
/// Invariants:
/// - an id is handed out once: ids grow from the epoch's token floor, so no incarnation of the
///   coordinator reuses an id an earlier one used (restored ids raise ``nextID`` above them);
/// - `bySession[s]` holds exactly the current attempts sent to session `s` (dispatched, or
///   restored on a past session), and each at most once;
/// - an orphan is a current attempt on a past session; ``orphanDeadline`` is set while there
///   are orphans to expire;
/// - `localRequests[id]` lists the worker-local lock requests of a current attempt, granted
///   or waiting, and goes when the attempt ends.
struct AttemptTable: Sendable {
    /// Current attempt id → where it belongs.
    private var locations: [AttemptID: AttemptLocation] = [:]
    /// Worker session → the current attempts it runs.
    var bySession: [SessionID: Set<AttemptID>] = [:]
    /// The next id to hand out.
    var nextID: UInt64
    /// Attempts restored from the journal that no worker has reported yet.
    var orphans: Set<AttemptID> = []
    /// When orphans nobody reported get new attempts.
    var orphanDeadline: Timestamp?
    /// Worker-local lock requests (granted or waiting): attempt id → request ids.
    var localRequests: [AttemptID: [UInt64]] = [:]
    /// Retries after their backoff, and groups' timeouts.
    var timers = TimerHeap()

    /// Ids start above `floor` (the coordinator's epoch).
    init(floor: UInt64) { nextID = floor + 1 }

    /// Where a current attempt belongs; nil for one that ended or never was.
    subscript(id: AttemptID) -> AttemptLocation? {
        get { locations[id] }
        _modify { yield &locations[id] }
    }

    /// How many attempts are on workers.
    var inFlightCount: Int { locations.values.count { $0.dispatched } }

    /// A new attempt of the leaf: a fresh id.
    mutating func begin(runIndex: Int, leaf: Int) -> AttemptID {
        let id = AttemptID(nextID)
        nextID += 1
        locations[id] = AttemptLocation(runIndex: runIndex, leaf: leaf)
        return id
    }

    /// An attempt restored from the journal, in flight on `session` (a past one).
    mutating func restore(_ id: AttemptID, runIndex: Int, leaf: Int, on session: SessionID) {
        locations[id] = AttemptLocation(runIndex: runIndex, leaf: leaf, dispatched: true)
        bySession[session, default: []].insert(id)
        nextID = max(nextID, id.rawValue + 1)
        orphans.insert(id)
    }

    /// Forgets an attempt; returns where it belonged.
    mutating func removeValue(forKey id: AttemptID) -> AttemptLocation? {
        locations.removeValue(forKey: id)
    }

    /// Renumbers the leaves of run `run` (a growing group's plan was rebuilt with children
    /// inserted, Scheduler+Growing.swift).
    mutating func renumberLeaves(ofRun run: Int, _ map: (Int) -> Int) {
        for (id, location) in locations where location.runIndex == run {
            locations[id]?.leaf = map(location.leaf)
        }
    }

    /// The attempt now runs on `new` (a worker reconnected, or claimed an orphan).
    mutating func move(_ id: AttemptID, from old: SessionID?, to new: SessionID) {
        if let old { bySession[old]?.remove(id) }
        bySession[new, default: []].insert(id)
    }
}

/// Where an attempt belongs.
struct AttemptLocation: Sendable {
    var runIndex: Int
    var leaf: Int
    /// Sent to a worker (and not finished).
    var dispatched = false
}
