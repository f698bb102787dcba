import DequeModule

/// The mutual-exclusion algorithm, as a value with no I/O, no clock and no threads: the
/// local `LocalExclusivityManager` drives it behind a lock, and the cluster's lock table
/// drives it from the coordinator's loop.
///
/// - A category has a *limit* (``limits``, 1 unless set): at most that many holders at once.
///   With limit 1 it is a mutual-exclusion lock; with a larger one a counting lock (a
///   semaphore), each holder taking one unit.
/// - All of a request's categories are granted at once, or none.
/// - Grants are in order per category: a request waits behind every request before it in
///   that category's queue, even one that could not be granted yet (nothing overtakes a
///   waiter). Requests are ordered by their *rank* (smaller first), then by arrival; with
///   every rank equal (the default) that is FIFO. Every request joins all of its categories'
///   queues at once with one (rank, arrival) key, so the queues agree with one global order
///   and no cycle of waiters (no deadlock) can form.
/// - Each grant carries a fencing token per category, strictly increasing per category and
///   never reused (tokens continue from `lastTokens`, which a caller may restore): with
///   several holders of a category each has its own token.
/// - A waiter removed before its grant (withdrawn) never affects the current holders.
public struct ExclusivityTable<Holder: Hashable & Sendable>: Sendable {
    /// A grant: the holder and a fencing token for each of its categories.
    public struct Grant: Sendable, Equatable {
        public let holder: Holder
        public let tokens: [String: UInt64]
    }

    /// A request's place in its queues: rank first, then arrival.
    private struct Order: Comparable, Sendable {
        var rank: Int64
        var arrival: UInt64
        static func < (lhs: Order, rhs: Order) -> Bool {
            (lhs.rank, lhs.arrival) < (rhs.rank, rhs.arrival)
        }
    }

    private struct Request: Sendable {
        let categories: [String]
        let order: Order
        var granted: Bool
    }

    private var requests: [Holder: Request] = [:]
    /// The holders of each held category, in the order they were granted.
    private var held: [String: [Holder]] = [:]
    private var waiting: [String: Deque<Holder>] = [:]
    private var arrivals: UInt64 = 0
    /// The last token issued per category. Restore it to continue a sequence.
    public var lastTokens: [String: UInt64] = [:]
    /// Tokens are at least this large; the cluster puts its epoch here.
    public var tokenFloor: UInt64
    /// How many holders each category may have at once; 1 for a category not listed. Change
    /// a category's limit only while it is idle (``isIdle(_:)``); a raised limit does not
    /// grant waiters by itself.
    public var limits: [String: Int] = [:]

    public init(tokenFloor: UInt64 = 0) { self.tokenFloor = tokenFloor }

    /// Asks for every category in `categories` for `holder`. Returns the grant if it is
    /// granted at once, nil if it waits. A holder may have one request at a time.
    ///
    /// `rank` orders the request among the waiters of its categories: a smaller rank goes
    /// before a larger one; equal ranks keep arrival order.
    public mutating func request(_ holder: Holder, categories: Set<String>, rank: Int64 = 0) -> Grant? {
        precondition(requests[holder] == nil, "\(holder) already has an exclusivity request")
        let ordered = categories.sorted()
        arrivals += 1
        let order = Order(rank: rank, arrival: arrivals)
        let free = ordered.allSatisfy { hasRoom($0) && isBefore(order, firstWaiterOf: $0) }
        if free {
            requests[holder] = Request(categories: ordered, order: order, granted: true)
            return grant(holder, ordered)
        }
        requests[holder] = Request(categories: ordered, order: order, granted: false)
        for category in ordered { insert(holder, order: order, into: category) }
        return nil
    }

    /// Removes `holder`'s request, granted or waiting, and returns the grants that this
    /// makes possible, in the order they were made. Removing an unknown holder does nothing.
    public mutating func remove(_ holder: Holder) -> [Grant] {
        guard let request = requests.removeValue(forKey: holder) else { return [] }
        if request.granted {
            for category in request.categories {
                guard let index = held[category]?.firstIndex(of: holder) else { continue }
                held[category]!.remove(at: index)
                if held[category]!.isEmpty { held[category] = nil }
            }
        } else {
            for category in request.categories {
                if let index = waiting[category]?.firstIndex(of: holder) {
                    waiting[category]!.remove(at: index)
                }
                if waiting[category]?.isEmpty == true { waiting[category] = nil }
            }
        }
        // A unit freed (or a waiter gone from the head) may let the head of a queue go; a
        // granted head leaves its other queues too, whose new heads may go in turn.
        var grants: [Grant] = []
        var pending = request.categories
        var next = 0
        while next < pending.count {
            let category = pending[next]
            next += 1
            while hasRoom(category), let head = waiting[category]?.first, let grant = grantIfPossible(head) {
                grants.append(grant)
                pending.append(contentsOf: grant.tokens.keys.sorted().filter { $0 != category })
            }
        }
        return grants
    }

    /// A holder of `category` (the first granted of those holding it now), if any.
    public func holder(of category: String) -> Holder? { held[category]?.first }

    /// Every holder of `category`, in the order they were granted.
    public func holders(of category: String) -> [Holder] { held[category] ?? [] }

    /// How many holders `category` may have at once.
    public func limit(of category: String) -> Int { limits[category] ?? 1 }

    /// The holders waiting for `category`, first in line first.
    public func waiters(of category: String) -> [Holder] { Array(waiting[category] ?? []) }

    /// Whether `category` has neither holders nor waiters.
    public func isIdle(_ category: String) -> Bool { held[category] == nil && waiting[category] == nil }

    /// Whether `holder` has a request, and whether it is granted.
    public func state(of holder: Holder) -> (exists: Bool, granted: Bool) {
        guard let request = requests[holder] else { return (false, false) }
        return (true, request.granted)
    }

    /// Every category that is held or waited for.
    public var categories: Set<String> { Set(held.keys).union(waiting.keys) }

    // MARK: Internals

    private func hasRoom(_ category: String) -> Bool {
        (held[category]?.count ?? 0) < limit(of: category)
    }

    private func isBefore(_ order: Order, firstWaiterOf category: String) -> Bool {
        guard let first = waiting[category]?.first, let other = requests[first]?.order else { return true }
        return order < other
    }

    /// Puts `holder` in `category`'s queue by its order: at the end unless it outranks
    /// someone (the common case costs one comparison).
    private mutating func insert(_ holder: Holder, order: Order, into category: String) {
        var queue = waiting.removeValue(forKey: category) ?? []
        if let last = queue.last, let lastOrder = requests[last]?.order, order < lastOrder {
            var low = 0
            var high = queue.count
            while low < high {
                let middle = (low + high) / 2
                if let other = requests[queue[middle]]?.order, other < order { low = middle + 1 } else { high = middle }
            }
            queue.insert(holder, at: low)
        } else {
            queue.append(holder)
        }
        waiting[category] = queue
    }

    private mutating func grantIfPossible(_ holder: Holder) -> Grant? {
        guard let request = requests[holder], !request.granted else { return nil }
        for category in request.categories {
            guard hasRoom(category), waiting[category]?.first == holder else { return nil }
        }
        for category in request.categories {
            waiting[category]!.removeFirst()
            if waiting[category]!.isEmpty { waiting[category] = nil }
        }
        requests[holder]!.granted = true
        return grant(holder, request.categories)
    }

    private mutating func grant(_ holder: Holder, _ categories: [String]) -> Grant {
        var tokens: [String: UInt64] = [:]
        for category in categories {
            held[category, default: []].append(holder)
            let token = max(lastTokens[category, default: 0], tokenFloor) + 1
            lastTokens[category] = token
            tokens[category] = token
        }
        return Grant(holder: holder, tokens: tokens)
    }
}
