import Procedures

/// The cluster-wide lock table (docs/scheduling.md, "Locks"): a pure state machine over
/// `Procedures.ExclusivityTable`, one table per ``LockScope``.
///
/// - A request names its categories level by level (``LockLevel``): the cluster table first,
///   then the tables of enclosing holders, outermost first, the order `GroupProcedure` uses.
///   Within a level, every category is granted at once (atomically) and FIFO per category,
///   which `ExclusivityTable` guarantees. A request is *granted* when its last level is. The
///   scheduler's requests have one level each (a holding group's hold covers everything
///   below it, so a node's categories all come from one table): docs/scheduling.md, "Why
///   locks never deadlock".
/// - Fencing tokens come from the cluster table's counters: strictly increasing per category,
///   never reused, at least ``tokenFloor`` + 1. A category granted from a group's table gets
///   a token of its own, larger than the group's and than every earlier one (each child that
///   declares a category, and each of its attempts, is a holder the fenced resource must tell
///   apart: a stale attempt's writes are refused after a newer attempt's). A category granted
///   from an attempt's table carries the attempt's token: the attempt and the procedures it
///   creates are one holder to the outside world.
/// - ``remove(_:)`` releases a grant or withdraws a waiting request (a withdrawn waiter never
///   affects the holder) and returns the requests that this completes, in order.
/// - Counting locks: a cluster category has a limit, at most that many holders at once (1, a
///   plain exclusive lock, unless set). The coordinator's configured limits always apply
///   (``configuredLimits``); otherwise the limit a submitted spec declares is *in force* while
///   a group that declared it is unfinished (``declare(_:)``) or the category has holders or
///   waiters, and a spec declaring another value meanwhile is refused. Groups' and attempts'
///   tables always have limit 1: a group's hold is one unit, shared by its descendants, who
///   exclude each other inside it.
/// - Ranks: a request's rank orders it among the waiters of its categories (smaller first, then
///   arrival): the scheduler passes its time minus its priority's head start, so a
///   higher-priority request goes before lower-priority ones that waited less than its head
///   start (docs/scheduling.md, "Priorities").
///
/// No I/O, no clock; `Sendable` value. Per holder it keeps a few dictionary entries, and every
/// operation costs O(categories × levels) dictionary lookups.
public struct LockTable: Sendable {
    /// A completed request: every level granted.
    public struct Grant: Hashable, Sendable {
        public var holder: LockHolder
        /// Category → fencing token, for every category of the request.
        public var tokens: [String: UInt64]
    }

    private struct Request: Sendable {
        var levels: [LockLevel]
        /// The level being waited for; `levels.count` once granted.
        var next: Int
        var tokens: [String: UInt64]
        var owner: LockOwner?
        /// When it was made (``request(_:levels:owner:at:)``'s `now`), when granted.
        var requestedAt: Timestamp?
        var grantedAt: Timestamp?
        var rank: Int64 = 0
        var granted: Bool { next == levels.count }
    }

    private var tables: [LockScope: ExclusivityTable<LockHolder>] = [:]
    private var requests: [LockHolder: Request] = [:]
    /// Limits declared by unfinished groups' specs: the value and how many groups declared it.
    private var declared: [String: (limit: Int, groups: Int)] = [:]

    /// The coordinator's limits (its configuration): they apply to their categories whatever a
    /// spec declares. Set before the first request.
    public var configuredLimits: [String: Int] = [:] {
        didSet {
            for (category, limit) in configuredLimits {
                tables[.cluster, default: ExclusivityTable()].limits[category] = limit
            }
        }
    }

    /// Every cluster token is larger than this; the coordinator sets its epoch here
    /// (`epoch << 32`) so tokens after a restart exceed every token before it.
    public var tokenFloor: UInt64 {
        didSet { tables[.cluster, default: ExclusivityTable()].tokenFloor = tokenFloor }
    }

    public init(tokenFloor: UInt64 = 0) {
        self.tokenFloor = tokenFloor
        tables[.cluster] = ExclusivityTable(tokenFloor: tokenFloor)
    }

    /// The last cluster token of every category, to journal and restore.
    public var lastTokens: [String: UInt64] {
        get { tables[.cluster]?.lastTokens ?? [:] }
        set { tables[.cluster, default: ExclusivityTable(tokenFloor: tokenFloor)].lastTokens = newValue }
    }

    /// Requests `levels` for `holder` (empty levels are skipped). Returns the grant if every
    /// level is granted at once, nil if the request waits (a later ``remove(_:)`` returns it).
    ///
    /// A holder has at most one request; asking again while one exists is a programming error
    /// (it traps in debug builds and is ignored, returning nil, in release builds).
    ///
    /// `now` is kept for `cohort locks` (how long a request waits, a grant is held): the time
    /// of the request, and of its grant when granted at once.
    ///
    /// `rank` orders the request among the waiters of its categories, in every table: smaller
    /// first, equal ranks in arrival order (``ExclusivityTable``).
    public mutating func request(
        _ holder: LockHolder, levels: [LockLevel], owner: LockOwner? = nil, at now: Timestamp? = nil,
        rank: Int64 = 0
    ) -> Grant? {
        guard requests[holder] == nil else {
            assertionFailure("\(holder) already has a lock request")
            return nil
        }
        // One level per scope: a holder may have one request per table.
        var merged: [LockLevel] = []
        for level in levels where !level.categories.isEmpty {
            if let index = merged.firstIndex(where: { $0.scope == level.scope }) {
                merged[index].categories.formUnion(level.categories)
            } else {
                merged.append(level)
            }
        }
        requests[holder] = Request(
            levels: merged, next: 0, tokens: [:], owner: owner, requestedAt: now, rank: rank)
        guard advance(holder), let tokens = requests[holder]?.tokens else { return nil }
        requests[holder]?.grantedAt = now
        return Grant(holder: holder, tokens: tokens)
    }

    /// Rebuilds a grant a restarted coordinator finds in its journal: requests `levels` for
    /// `holder` and, if granted at once, gives it the journaled `tokens` (those it held before
    /// the restart) instead of new ones. Returns false, with nothing kept, if the request
    /// would wait (the journal contradicts itself; the caller treats the grant as lost).
    public mutating func restoreGrant(
        _ holder: LockHolder, levels: [LockLevel], owner: LockOwner?, tokens: [String: UInt64], at now: Timestamp? = nil
    ) -> Bool {
        guard request(holder, levels: levels, owner: owner, at: now, rank: .min) != nil else {
            _ = remove(holder)
            return false
        }
        for (category, token) in tokens where requests[holder]?.tokens[category] != nil {
            requests[holder]?.tokens[category] = token
        }
        return true
    }

    /// Releases `holder`'s grant, or withdraws its waiting request, and returns the requests
    /// this completes, in the order they were completed. Unknown holders do nothing.
    ///
    /// A holder that owns a scope table (a group or an attempt) should have its descendants
    /// removed first; whatever is left in its table is dropped with it. `now` is kept as the
    /// time of the grants this completes (`cohort locks`).
    public mutating func remove(_ holder: LockHolder, at now: Timestamp? = nil) -> [Grant] {
        var completed: [Grant] = []
        remove(holder, completing: &completed)
        let granted = completed.filter { requests[$0.holder]?.granted == true }
        for grant in granted { requests[grant.holder]?.grantedAt = now }
        return granted
    }

    private mutating func remove(_ holder: LockHolder, completing completed: inout [Grant]) {
        // Anything still in the holder's own table goes first: its requests hold grants in
        // outer tables that must be given back too.
        if let scope = LockScope(ownedBy: holder), let table = tables[scope] {
            var inner: [LockHolder] = []
            for category in table.categories.sorted() {
                for other in table.holders(of: category) + table.waiters(of: category)
                where !inner.contains(other) {
                    inner.append(other)
                }
            }
            for other in inner { remove(other, completing: &completed) }
            tables[scope] = nil
        }
        guard let request = requests.removeValue(forKey: holder) else { return }
        var progressed: [LockHolder] = []
        let reached = min(request.next, request.levels.count - 1)
        if reached >= 0 {
            for level in request.levels[0...reached] {
                guard var table = tables[level.scope] else { continue }
                let granted = table.remove(holder)
                tables[level.scope] = table
                for grant in granted {
                    guard let next = requests[grant.holder]?.next else { continue }
                    merge(grant.tokens, level: next, into: grant.holder)
                    requests[grant.holder]?.next += 1
                    progressed.append(grant.holder)
                }
            }
        }
        for other in progressed where requests[other] != nil {
            if advance(other), let granted = requests[other] {
                completed.append(Grant(holder: other, tokens: granted.tokens))
            }
        }
    }

    /// Whether `holder` has a request, and whether it is granted.
    public func state(of holder: LockHolder) -> (exists: Bool, granted: Bool) {
        guard let request = requests[holder] else { return (false, false) }
        return (true, request.granted)
    }

    /// The tokens of `holder`'s grant (nil unless granted).
    public func tokens(of holder: LockHolder) -> [String: UInt64]? {
        guard let request = requests[holder], request.granted else { return nil }
        return request.tokens
    }

    /// Updates what `cohort locks` shows for `holder` (e.g. the worker, once dispatched).
    public mutating func setOwner(_ owner: LockOwner, of holder: LockHolder) {
        requests[holder]?.owner = owner
    }

    /// How many holders have a request (granted or waiting), all scopes.
    public var count: Int { requests.count }

    /// How many requests are granted and how many wait, all scopes (walks every request).
    public var requestCounts: (granted: Int, waiting: Int) {
        var granted = 0
        for request in requests.values where request.granted { granted += 1 }
        return (granted, requests.count - granted)
    }

    /// Whether no category is held or waited for anywhere.
    public var isEmpty: Bool { requests.isEmpty }

    /// The holder of `category` in the cluster table.
    public func holder(of category: String) -> LockHolder? { tables[.cluster]?.holder(of: category) }

    /// The waiters for `category` in the cluster table, first in line first.
    public func waiters(of category: String) -> [LockHolder] { tables[.cluster]?.waiters(of: category) ?? [] }

    /// The cluster table, category by category (sorted), for `cohort locks`.
    public func snapshot() -> [LockSnapshot] {
        guard let table = tables[.cluster] else { return [] }
        return table.categories.sorted().map { category in
            let holders = table.holders(of: category).compactMap { holder -> LockHolding? in
                guard let request = requests[holder], let owner = request.owner else { return nil }
                return LockHolding(owner: owner, token: request.tokens[category] ?? 0, since: request.grantedAt)
            }
            return LockSnapshot(
                category: category, token: table.lastTokens[category] ?? 0, limit: table.limit(of: category),
                holders: holders,
                waiters: table.waiters(of: category).compactMap { requests[$0]?.owner },
                waitingSince: table.waiters(of: category).compactMap { holder -> Timestamp?? in
                    guard let request = requests[holder], request.owner != nil else { return nil }
                    return .some(request.requestedAt)
                })
        }
    }

    // MARK: Limits

    /// The limit of a cluster category now: its configured one, else the one in force.
    public func limit(of category: String) -> Int {
        configuredLimits[category] ?? tables[.cluster]?.limit(of: category) ?? 1
    }

    /// A limit a spec declares that disagrees with the one in force.
    public struct LimitConflict: Hashable, Sendable, CustomStringConvertible {
        public var category: String
        /// What the spec declares.
        public var declared: Int
        /// The limit in force.
        public var inForce: Int
        /// Whether an unfinished group declares it (else holders or waiters still use it).
        public var declaredByAGroup: Bool = true

        public var description: String {
            "limits.\(category) is \(declared), but \(category) is in use with limit \(inForce) ("
                + (declaredByAGroup ? "set by another unfinished group" : "its holders or waiters still use it")
                + "); submit with the same limit, or once \(category) is idle"
        }
    }

    /// The declared limits of a new group that disagree with those in force (categories the
    /// configuration sets are not compared: the configured limit applies). A category's limit
    /// is in force while a group that declared it is unfinished or it has holders or waiters.
    public func conflicts(with limits: [String: Int]) -> [LimitConflict] {
        var conflicts: [LimitConflict] = []
        for (category, limit) in limits.sorted(by: { $0.key < $1.key }) where configuredLimits[category] == nil {
            let inForce: Int?
            if let declaration = declared[category] {
                inForce = declaration.limit
            } else if let table = tables[.cluster], !table.isIdle(category) {
                inForce = table.limit(of: category)
            } else {
                inForce = nil
            }
            if let inForce, inForce != limit {
                conflicts.append(
                    LimitConflict(
                        category: category, declared: limit, inForce: inForce,
                        declaredByAGroup: declared[category] != nil))
            }
        }
        return conflicts
    }

    /// A group declaring `limits` starts (a submission, or a restored unfinished group): its
    /// limits are in force until ``undeclare(_:)``. Check ``conflicts(with:)`` first; a limit
    /// that disagrees anyway (a restart finding two) leaves the one in force.
    public mutating func declare(_ limits: [String: Int]) {
        for (category, limit) in limits where configuredLimits[category] == nil {
            if let declaration = declared[category] {
                declared[category]?.groups = declaration.groups + 1
                continue
            }
            var table = tables[.cluster] ?? ExclusivityTable(tokenFloor: tokenFloor)
            let inForce = table.isIdle(category) ? limit : table.limit(of: category)
            declared[category] = (inForce, 1)
            table.limits[category] = inForce
            tables[.cluster] = table
        }
    }

    /// A group that declared `limits` finished (or is forgotten): once no unfinished group
    /// declares a category and it is idle, its limit goes back to the configured one or 1.
    public mutating func undeclare(_ limits: [String: Int]) {
        for category in limits.keys where configuredLimits[category] == nil {
            guard let declaration = declared[category] else { continue }
            if declaration.groups > 1 {
                declared[category]?.groups = declaration.groups - 1
            } else {
                declared[category] = nil
            }
        }
    }

    /// Before a cluster request: a category nobody declares and nobody uses goes back to its
    /// configured limit (or 1).
    private func settleLimit(of category: String, in table: inout ExclusivityTable<LockHolder>) {
        guard declared[category] == nil, table.limits[category] != configuredLimits[category], table.isIdle(category)
        else { return }
        table.limits[category] = configuredLimits[category]
    }

    // MARK: Internals

    /// Requests the holder's levels from `next` on until one waits. True when all are granted.
    private mutating func advance(_ holder: LockHolder) -> Bool {
        while let request = requests[holder], !request.granted {
            let level = request.levels[request.next]
            var table = tables[level.scope] ?? ExclusivityTable(tokenFloor: 0)
            if level.scope == .cluster {
                for category in level.categories { settleLimit(of: category, in: &table) }
            }
            let grant = table.request(holder, categories: level.categories, rank: request.rank)
            tables[level.scope] = table
            guard let grant else { return false }
            merge(grant.tokens, level: request.next, into: holder)
            requests[holder]?.next += 1
        }
        return requests[holder] != nil
    }

    /// Records the tokens of a granted level: the cluster's own; from a group's table, a new
    /// token from the cluster's counter; from an attempt's table, the attempt's token.
    private mutating func merge(_ tokens: [String: UInt64], level index: Int, into holder: LockHolder) {
        guard let request = requests[holder] else { return }
        let scope = request.levels[index].scope
        for (category, token) in tokens {
            let effective: UInt64 =
                switch scope {
                case .cluster: token
                case .group: freshToken(for: category)
                case .attempt: scope.owner.flatMap { requests[$0]?.tokens[category] } ?? token
                }
            requests[holder]?.tokens[category] = effective
        }
    }

    /// The next token of `category` from the cluster's counter.
    private mutating func freshToken(for category: String) -> UInt64 {
        var cluster = tables[.cluster] ?? ExclusivityTable(tokenFloor: tokenFloor)
        let token = max(cluster.lastTokens[category, default: 0], tokenFloor) + 1
        cluster.lastTokens[category] = token
        tables[.cluster] = cluster
        return token
    }
}

extension LockTable {
    /// Renumbers the groups of run `run` (a growing group's plan was rebuilt with children
    /// inserted, Scheduler+Growing.swift): every holder `.group(run:group:)` and every table
    /// `.group(run:group:)` of that run takes group `map(group)`, keeping its requests, grants,
    /// places in line and tokens. `map` must be one-to-one.
    mutating func renumberGroups(ofRun run: Int, _ map: (Int) -> Int) {
        func holder(_ holder: LockHolder) -> LockHolder {
            guard case .group(let r, let group) = holder, r == run else { return holder }
            return .group(run: r, group: map(group))
        }
        func scope(_ scope: LockScope) -> LockScope {
            guard case .group(let r, let group) = scope, r == run else { return scope }
            return .group(run: r, group: map(group))
        }
        var renamedTables: [LockScope: ExclusivityTable<LockHolder>] = [:]
        for (key, table) in tables {
            var table = table
            table.renameHolders(holder)
            renamedTables[scope(key)] = table
        }
        tables = renamedTables
        var renamedRequests: [LockHolder: Request] = [:]
        for (key, request) in requests {
            var request = request
            for index in request.levels.indices { request.levels[index].scope = scope(request.levels[index].scope) }
            renamedRequests[holder(key)] = request
        }
        requests = renamedRequests
    }
}

extension LockScope {
    /// The scope whose table `holder` owns: a group's or an attempt's; none for local requests.
    init?(ownedBy holder: LockHolder) {
        switch holder {
        case .attempt(let id): self = .attempt(id)
        case .group(let run, let group): self = .group(run: run, group: group)
        case .local: return nil
        }
    }
}
