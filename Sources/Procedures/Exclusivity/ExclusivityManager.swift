import Synchronization

/// Identifies one exclusivity request made through an `ExclusivityManager`.
public struct ExclusivityRequestID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "lock-request-\(rawValue)" }
}

/// What a procedure receives when its categories are granted.
public struct ExclusivityGrant: Sendable, Equatable {
    /// A fencing token per category: larger than every token issued before for it.
    public let fencingTokens: [String: UInt64]
    public init(fencingTokens: [String: UInt64]) { self.fencingTokens = fencingTokens }
}

/// Grants mutual exclusion by category. The local engine uses `LocalExclusivityManager`;
/// a Cohort worker plugs in one that asks the coordinator's cluster-wide lock table.
///
/// The contract the engine relies on:
/// - `request` is called once per procedure, after its dependencies and conditions, never
///   at enqueue; `completion` is called exactly once, with the grant, or with nil if the
///   request was withdrawn first (or cannot be granted, e.g. a lost connection).
/// - `withdraw` is called for a request that is still waiting when its procedure is
///   cancelled; it must never release another holder's grant. Withdrawing a request that was
///   granted in the meantime releases it.
/// - `release` is called once, after the procedure finishes.
/// Implementations must be safe to call from any thread and must not call `completion`
/// while holding a lock the caller might need.
public protocol ExclusivityManager: AnyObject, Sendable {
    func request(
        _ categories: Set<String>,
        for procedure: Procedure,
        completion: @escaping @Sendable (ExclusivityGrant?) -> Void
    ) -> ExclusivityRequestID
    func withdraw(_ request: ExclusivityRequestID)
    func release(_ request: ExclusivityRequestID)
}

/// The in-process manager: an `ExclusivityTable` behind a lock. `shared` serves every
/// queue of a process unless a queue is given another.
public final class LocalExclusivityManager: ExclusivityManager {
    /// The process-wide manager, so that procedures on different queues exclude each other.
    public static let shared = LocalExclusivityManager()

    private struct State {
        var table = ExclusivityTable<ExclusivityRequestID>()
        var completions: [ExclusivityRequestID: @Sendable (ExclusivityGrant?) -> Void] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    public func request(
        _ categories: Set<String>,
        for procedure: Procedure,
        completion: @escaping @Sendable (ExclusivityGrant?) -> Void
    ) -> ExclusivityRequestID {
        let (id, grant) = state.withLock { state in
            state.nextID += 1
            let id = ExclusivityRequestID(state.nextID)
            let grant = state.table.request(id, categories: categories)
            if grant == nil { state.completions[id] = completion }
            return (id, grant)
        }
        if let grant { completion(ExclusivityGrant(fencingTokens: grant.tokens)) }
        return id
    }

    public func withdraw(_ request: ExclusivityRequestID) {
        let (withdrawn, granted) = state.withLock { state in
            let withdrawn = state.completions.removeValue(forKey: request)
            return (withdrawn, take(state.table.remove(request), from: &state))
        }
        withdrawn?(nil)
        deliver(granted)
    }

    public func release(_ request: ExclusivityRequestID) {
        let granted = state.withLock { state in take(state.table.remove(request), from: &state) }
        deliver(granted)
    }

    /// The holder and waiters of each category, for diagnostics and tests.
    public func snapshot() -> [String: (holder: ExclusivityRequestID?, waiters: [ExclusivityRequestID])] {
        state.withLock { state in
            var result: [String: (holder: ExclusivityRequestID?, waiters: [ExclusivityRequestID])] = [:]
            for category in state.table.categories {
                result[category] = (state.table.holder(of: category), state.table.waiters(of: category))
            }
            return result
        }
    }

    private func take(
        _ grants: [ExclusivityTable<ExclusivityRequestID>.Grant],
        from state: inout State
    ) -> [(@Sendable (ExclusivityGrant?) -> Void, ExclusivityGrant)] {
        grants.compactMap { grant in
            state.completions.removeValue(forKey: grant.holder).map {
                ($0, ExclusivityGrant(fencingTokens: grant.tokens))
            }
        }
    }

    private func deliver(_ grants: [(@Sendable (ExclusivityGrant?) -> Void, ExclusivityGrant)]) {
        for (completion, grant) in grants { completion(grant) }
    }
}
