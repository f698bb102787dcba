import DequeModule

/// The mutual-exclusion algorithm, as a value with no I/O, no clock and no threads: the
/// local `LocalExclusivityManager` drives it behind a lock, and the cluster's lock table
/// drives it from the coordinator's loop.
///
/// - All of a request's categories are granted at once, or none.
/// - Grants are FIFO per category: a request waits behind every earlier request that shares
///   a category with it, even one that could not be granted yet. Since every request joins
///   all of its categories' queues at the same moment, the queues agree with one global
///   arrival order, so no cycle of waiters (no deadlock) can form.
/// - Each grant carries a fencing token per category, strictly increasing per category and
///   never reused (tokens continue from `lastTokens`, which a caller may restore).
/// - A waiter removed before its grant (withdrawn) never affects the current holder.
public struct ExclusivityTable<Holder: Hashable & Sendable>: Sendable {
    /// A grant: the holder and a fencing token for each of its categories.
    public struct Grant: Sendable, Equatable {
        public let holder: Holder
        public let tokens: [String: UInt64]
    }

    private struct Request: Sendable {
        let categories: [String]
        var granted: Bool
    }

    private var requests: [Holder: Request] = [:]
    private var holders: [String: Holder] = [:]
    private var waiting: [String: Deque<Holder>] = [:]
    /// The last token issued per category. Restore it to continue a sequence.
    public var lastTokens: [String: UInt64] = [:]
    /// Tokens are at least this large; the cluster puts its epoch here.
    public var tokenFloor: UInt64

    public init(tokenFloor: UInt64 = 0) { self.tokenFloor = tokenFloor }

    /// Asks for every category in `categories` for `holder`. Returns the grant if it is
    /// granted at once, nil if it waits. A holder may have one request at a time.
    public mutating func request(_ holder: Holder, categories: Set<String>) -> Grant? {
        precondition(requests[holder] == nil, "\(holder) already has an exclusivity request")
        let ordered = categories.sorted()
        let free = ordered.allSatisfy { holders[$0] == nil && (waiting[$0]?.isEmpty ?? true) }
        if free {
            requests[holder] = Request(categories: ordered, granted: true)
            return grant(holder, ordered)
        }
        requests[holder] = Request(categories: ordered, granted: false)
        for category in ordered { waiting[category, default: []].append(holder) }
        return nil
    }

    /// Removes `holder`'s request, granted or waiting, and returns the grants that this
    /// makes possible, in arrival order. Removing an unknown holder does nothing.
    public mutating func remove(_ holder: Holder) -> [Grant] {
        guard let request = requests.removeValue(forKey: holder) else { return [] }
        if request.granted {
            for category in request.categories where holders[category] == holder {
                holders[category] = nil
            }
        } else {
            for category in request.categories {
                if let index = waiting[category]?.firstIndex(of: holder) {
                    waiting[category]!.remove(at: index)
                }
                if waiting[category]?.isEmpty == true { waiting[category] = nil }
            }
        }
        var grants: [Grant] = []
        for category in request.categories {
            guard holders[category] == nil, let head = waiting[category]?.first else { continue }
            if let grant = grantIfPossible(head) { grants.append(grant) }
        }
        return grants
    }

    /// The current holder of `category`, if any.
    public func holder(of category: String) -> Holder? { holders[category] }

    /// The holders waiting for `category`, first in line first.
    public func waiters(of category: String) -> [Holder] { Array(waiting[category] ?? []) }

    /// Whether `holder` has a request, and whether it is granted.
    public func state(of holder: Holder) -> (exists: Bool, granted: Bool) {
        guard let request = requests[holder] else { return (false, false) }
        return (true, request.granted)
    }

    /// Every category that is held or waited for.
    public var categories: Set<String> { Set(holders.keys).union(waiting.keys) }

    private mutating func grantIfPossible(_ holder: Holder) -> Grant? {
        guard let request = requests[holder], !request.granted else { return nil }
        for category in request.categories {
            guard holders[category] == nil, waiting[category]?.first == holder else { return nil }
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
            holders[category] = holder
            let token = max(lastTokens[category, default: 0], tokenFloor) + 1
            lastTokens[category] = token
            tokens[category] = token
        }
        return Grant(holder: holder, tokens: tokens)
    }
}
