import CohortWire
import Logging
import Synchronization

/// A lock message the manager hands to the worker's loop, which sends it to the coordinator.
enum LockMessage: Sendable, Equatable {
    case request(LockRequest)
    case withdraw(requestID: UInt64)
    case release(requestID: UInt64)
}

/// The worker's `ExclusivityManager`: every category a procedure on this worker asks for
/// is granted by the coordinator's cluster-wide lock table, so `MutuallyExclusive`
/// excludes procedures on every worker, and each grant carries the cluster's fencing tokens.
///
/// A request is tied to the running attempt the procedure belongs to (the lease is the
/// attempt's): procedures on an attempt's own queue (``ProcedureContext/queue``) name it
/// through ``AttemptExclusivityManager``; any other procedure is traced to a running
/// attempt through its parent groups. A procedure that belongs to no running attempt is
/// cancelled with an error instead of waiting for a lock nobody can grant.
///
/// A denied request, or a revoked grant, cancels its procedure with the coordinator's
/// reason, so it never runs (or goes on running) without its lock.
///
/// Thread-safety: `Sendable`. Requests come from any thread; grants and denials come from
/// the worker's loop thread. Completions and cancellations are called with no lock held.
final class ClusterExclusivityManager: ExclusivityManager {
    private struct Entry {
        let attempt: WireAttemptRef
        let categories: [String]
        let procedure: Procedure
        var completion: (@Sendable (ExclusivityGrant?) -> Void)?
        var tokens: [String: UInt64]?
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    private let send: @Sendable (LockMessage) -> Void
    private let logger: Logger

    /// - Parameter send: hands a message to the loop that owns the coordinator's socket.
    init(logger: Logger, send: @escaping @Sendable (LockMessage) -> Void) {
        self.logger = logger
        self.send = send
    }

    // MARK: ExclusivityManager

    func request(
        _ categories: Set<String>, for procedure: Procedure, completion: @escaping @Sendable (ExclusivityGrant?) -> Void
    ) -> ExclusivityRequestID {
        guard let attempt = Self.attempt(of: procedure) else {
            let id = state.withLock { state in
                state.nextID += 1
                return state.nextID
            }
            logger.error(
                "lock request outside any running attempt refused", metadata: ["procedure.name": "\(procedure.name)"])
            procedure.cancel(
                with: LockError(
                    "\(procedure.name) asked for \(categories.sorted().joined(separator: ", ")) but belongs to no running attempt; "
                        + "run it with ProcedureContext.run(_:) or on ProcedureContext.queue"))
            completion(nil)
            return ExclusivityRequestID(id)
        }
        return request(categories, for: procedure, attempt: attempt, completion: completion)
    }

    /// The innermost group around `procedure` (its local groups, inside its attempt) that
    /// holds locks.
    static func holdingAncestor(of procedure: Procedure) -> Procedure? {
        var current = procedure.parent
        while let candidate = current {
            if !candidate.fencingTokens.isEmpty { return candidate }
            current = candidate.parent
        }
        return nil
    }

    /// Asks the coordinator for `categories`, for `procedure`, on behalf of `attempt`.
    func request(
        _ categories: Set<String>, for procedure: Procedure, attempt: WireAttemptRef,
        completion: @escaping @Sendable (ExclusivityGrant?) -> Void
    ) -> ExclusivityRequestID {
        if let holder = Self.holdingAncestor(of: procedure) {
            // The engine gives what enclosing groups hold from their own tables; this asks
            // for more while one holds: hold-and-wait, which could close a cycle with another
            // group doing the reverse (docs/scheduling.md, "Why locks never deadlock").
            let id = state.withLock { state in
                state.nextID += 1
                return state.nextID
            }
            procedure.cancel(
                with: LockError(
                    "\(procedure.name) asked for \(categories.sorted().joined(separator: ", ")) inside \(holder.name), "
                        + "which holds \(holder.fencingTokens.keys.sorted().joined(separator: ", ")): a procedure may "
                        + "not wait for cluster locks while an enclosing group holds others (it could deadlock); put "
                        + "every category on the group"))
            completion(nil)
            return ExclusivityRequestID(id)
        }
        let sorted = categories.sorted()
        let id = state.withLock { state in
            state.nextID += 1
            state.entries[state.nextID] = Entry(
                attempt: attempt, categories: sorted, procedure: procedure, completion: completion)
            return state.nextID
        }
        send(.request(LockRequest(requestID: id, ref: attempt, categories: sorted)))
        return ExclusivityRequestID(id)
    }

    func withdraw(_ request: ExclusivityRequestID) {
        let entry = state.withLock { $0.entries.removeValue(forKey: request.rawValue) }
        guard let entry else { return }
        if entry.tokens != nil {
            send(.release(requestID: request.rawValue))
        } else {
            send(.withdraw(requestID: request.rawValue))
            entry.completion?(nil)
        }
    }

    func release(_ request: ExclusivityRequestID) {
        withdraw(request)
    }

    // MARK: From the coordinator (the loop's thread)

    /// The coordinator granted a request.
    func granted(_ grant: LockGrant) {
        enum Step {
            case unknown, duplicate
            case deliver((@Sendable (ExclusivityGrant?) -> Void)?)
        }
        let step = state.withLock { state -> Step in
            guard var entry = state.entries[grant.requestID] else { return .unknown }
            guard entry.tokens == nil else { return .duplicate }
            let completion = entry.completion
            entry.tokens = grant.tokens
            entry.completion = nil
            state.entries[grant.requestID] = entry
            return .deliver(completion)
        }
        switch step {
        case .unknown:
            // Withdrawn while the grant was on its way: give it straight back.
            send(.release(requestID: grant.requestID))
        case .duplicate:
            break
        case .deliver(let completion):
            completion?(ExclusivityGrant(fencingTokens: grant.tokens))
        }
    }

    /// The coordinator refused a request, cancelled it, or revoked its grant: the procedure
    /// is cancelled with the coordinator's reason.
    func denied(_ denial: LockDenial) {
        let entry = state.withLock { $0.entries.removeValue(forKey: denial.requestID) }
        guard let entry else { return }
        let categories = entry.categories.joined(separator: ", ")
        let reason: String =
            switch denial.kind {
            case .denied: "lock on \(categories) refused: \(denial.reason)"
            case .cancelled: "lock request for \(categories) cancelled: \(denial.reason)"
            case .revoked: "lock on \(categories) revoked: \(denial.reason)"
            }
        entry.procedure.cancel(with: LockError(reason))
        entry.completion?(nil)
    }

    // MARK: Reconnection

    /// Requests not granted yet, to send again in a new session.
    func outstandingRequests() -> [LockRequest] {
        state.withLock { state in
            state.entries.filter { $0.value.tokens == nil }.sorted { $0.key < $1.key }.map {
                LockRequest(requestID: $0.key, ref: $0.value.attempt, categories: $0.value.categories)
            }
        }
    }

    /// Whether procedures of the attempt `attemptID` hold a grant or wait for one.
    func hasRequests(of attemptID: UInt64) -> Bool {
        state.withLock { state in state.entries.values.contains { $0.attempt.id == attemptID } }
    }

    /// Category → token of every grant that procedures of the attempt `attemptID` hold.
    func heldTokens(of attemptID: UInt64) -> [String: UInt64] {
        state.withLock { state in
            var tokens: [String: UInt64] = [:]
            for entry in state.entries.values where entry.attempt.id == attemptID {
                tokens.merge(entry.tokens ?? [:]) { _, new in new }
            }
            return tokens
        }
    }

    /// The running attempt `procedure` belongs to: its own, or that of its outermost group.
    static func attempt(of procedure: Procedure) -> WireAttemptRef? {
        var current: Procedure? = procedure
        while let candidate = current {
            if let task = candidate as? AttemptProcedure { return task.dispatch.ref }
            current = candidate.parent
        }
        return nil
    }
}

/// Why a procedure lost (or never got) its cluster lock.
public struct LockError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
