import CohortWire
import Synchronization

/// The exclusivity manager of one attempt's local queue (groups added there pass it on to
/// their children): the cluster's lock table, with every request tied to the attempt.
///
/// Categories the attempt already holds (its child's `exclusive` categories, granted by the
/// coordinator before dispatch) are never asked of the coordinator again, which would wait
/// behind the attempt's own grant for ever (ProcedureKit's group-and-child deadlock).
/// They are granted from a table local to the attempt, so the attempt's own procedures
/// still exclude each other, with the attempt's cluster fencing token. A request that
/// mixes both kinds takes the cluster's categories first, then the held ones: always
/// outer before inner, as the engine's nested groups do, so the two levels cannot deadlock.
///
/// Thread-safety: `Sendable`; state is behind a `Mutex`; completions run with no lock held.
final class AttemptExclusivityManager: ExclusivityManager {
    let attempt: WireAttemptRef
    let cluster: ClusterExclusivityManager
    /// Category → cluster fencing token of what the attempt holds.
    let held: [String: UInt64]

    private struct Request {
        var cluster: ExclusivityRequestID?
        var local: ExclusivityRequestID?
        var withdrawn = false
    }

    private struct State {
        var requests: [UInt64: Request] = [:]
        var nextID: UInt64 = 0
    }

    private let local = LocalExclusivityManager()
    private let state = Mutex(State())

    init(attempt: WireAttemptRef, cluster: ClusterExclusivityManager, held: [String: UInt64]) {
        self.attempt = attempt
        self.cluster = cluster
        self.held = held
    }

    func request(
        _ categories: Set<String>, for procedure: Procedure, completion: @escaping @Sendable (ExclusivityGrant?) -> Void
    ) -> ExclusivityRequestID {
        let inside = categories.filter { held[$0] != nil }
        let outside = categories.subtracting(inside)
        let id = state.withLock { state in
            state.nextID += 1
            state.requests[state.nextID] = Request()
            return state.nextID
        }
        if outside.isEmpty {
            acquireInside(inside, id: id, clusterTokens: [:], for: procedure, completion: completion)
        } else {
            let clusterID = cluster.request(outside, for: procedure, attempt: attempt) { [self] grant in
                guard let grant else { return completion(nil) }
                guard !inside.isEmpty else { return completion(grant) }
                acquireInside(
                    inside, id: id, clusterTokens: grant.fencingTokens, for: procedure, completion: completion)
            }
            let withdrawn = state.withLock { state -> Bool in
                state.requests[id]?.cluster = clusterID
                return state.requests[id] == nil
            }
            if withdrawn { cluster.withdraw(clusterID) }
        }
        return ExclusivityRequestID(id)
    }

    func withdraw(_ request: ExclusivityRequestID) {
        guard let taken = state.withLock({ $0.requests.removeValue(forKey: request.rawValue) }) else { return }
        // Inner level first, then outer: the reverse of the order they were taken in.
        if let localID = taken.local { local.withdraw(localID) }
        if let clusterID = taken.cluster { cluster.withdraw(clusterID) }
    }

    func release(_ request: ExclusivityRequestID) {
        withdraw(request)
    }

    /// Takes the held categories from the attempt's own table; the grant carries the
    /// cluster's tokens for every category.
    private func acquireInside(
        _ inside: Set<String>, id: UInt64, clusterTokens: [String: UInt64], for procedure: Procedure,
        completion: @escaping @Sendable (ExclusivityGrant?) -> Void
    ) {
        guard state.withLock({ $0.requests[id] != nil }) else { return completion(nil) }
        var tokens = clusterTokens
        for category in inside { tokens[category] = held[category] }
        let localID = local.request(inside, for: procedure) { [tokens] grant in
            completion(grant == nil ? nil : ExclusivityGrant(fencingTokens: tokens))
        }
        let withdrawn = state.withLock { state -> Bool in
            state.requests[id]?.local = localID
            return state.requests[id] == nil
        }
        // Withdrawn while the local request was being made: give it back.
        if withdrawn { local.withdraw(localID) }
    }
}
