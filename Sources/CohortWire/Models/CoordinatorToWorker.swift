#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Coordinator → worker, after WELCOME.
///
/// `dispatch` and `cancel` are batches: a batch of N means exactly what N
/// messages of one each would, in the same order.
public enum CoordinatorToWorker: Hashable, Sendable {
    /// Proof of life, and the answer to a worker's numbered heartbeat: `acknowledged` is the
    /// sequence number heard (0: an unprompted heartbeat, acknowledging nothing).
    case heartbeat(acknowledged: UInt64)
    /// Run these attempts.
    case dispatch([AttemptDispatch])
    /// Stop these attempts (each names its attempt, so a later attempt is never hit).
    case cancel([AttemptCancellation])
    /// A lock request is granted: every category at once.
    case lockGrant(LockGrant)
    /// A lock request is refused or cancelled, or its grant revoked.
    case lockDenied(LockDenial)
    /// The coordinator is stopping.
    case shutdown(ShutdownNotice)
    /// Something the worker sent was refused.
    case error(WorkerError)
    /// The coordinator stored these attempts' log lines up to a sequence number: the worker
    /// may forget them (until then it sends them again on its next session).
    case logStored([LogStored])
}

/// An attempt's log lines stored up to ``sequence``.
public struct LogStored: Hashable, Sendable {
    public var attemptID: UInt64
    public var sequence: UInt64

    public init(attemptID: UInt64, sequence: UInt64) {
        self.attemptID = attemptID
        self.sequence = sequence
    }
}

/// One attempt to run.
public struct AttemptDispatch: Hashable, Sendable {
    public var ref: WireAttemptRef
    /// The procedure kind, e.g. `shell`.
    public var kind: String
    /// The procedure's input as UTF-8 JSON, results of its producers already injected.
    public var input: Data
    /// Category → fencing token of every lock the attempt runs under: its own `exclusive`
    /// categories and those its enclosing groups declare.
    public var fencingTokens: [String: UInt64]
    /// The categories of ``fencingTokens`` the attempt holds itself (its own grant); the
    /// others it runs under a group's hold. Its procedures' local locks on these are granted
    /// on the worker; any other goes to the coordinator.
    public var holds: [String]
    /// Cancel it with reason `timed out` after this long; `nil`: no timeout. Millisecond precision.
    public var timeout: Duration?
    /// Extra environment for the procedure, if any.
    public var env: [String: String]
    /// The attempt's token (`COHORT_ATTEMPT_TOKEN`): a secret that lets whoever holds it, while
    /// the attempt runs, add children to its group, cancel its group and read it; `nil` from a
    /// coordinator that mints none.
    public var attemptToken: String?

    public init(
        ref: WireAttemptRef, kind: String, input: Data, fencingTokens: [String: UInt64] = [:],
        timeout: Duration? = nil, env: [String: String] = [:], holds: [String]? = nil, attemptToken: String? = nil
    ) {
        self.attemptToken = attemptToken
        self.ref = ref
        self.kind = kind
        self.input = input
        self.fencingTokens = fencingTokens
        self.holds = holds ?? fencingTokens.keys.sorted()
        self.timeout = timeout
        self.env = env
    }
}

/// Stop one attempt.
public struct AttemptCancellation: Hashable, Sendable {
    public var ref: WireAttemptRef
    /// Why, in words.
    public var reason: String
    /// Why, as a code (a worker's procedures see it in their `CancellationReason`).
    public var code: CancelCode

    public init(ref: WireAttemptRef, reason: String, code: CancelCode = .custom) {
        self.ref = ref
        self.reason = reason
        self.code = code
    }
}

/// A granted lock request.
public struct LockGrant: Hashable, Sendable {
    public var requestID: UInt64
    /// One fencing token per requested category.
    public var tokens: [String: UInt64]

    public init(requestID: UInt64, tokens: [String: UInt64]) {
        self.requestID = requestID
        self.tokens = tokens
    }
}

/// A lock request that will not be (or is no longer) granted.
public struct LockDenial: Hashable, Sendable {
    public enum Kind: Hashable, Sendable, CaseIterable {
        /// Refused, never granted (unknown attempt, forbidden category, …).
        case denied
        /// A pending request was cancelled by the coordinator (e.g. its attempt was cancelled).
        case cancelled
        /// A granted lease was taken back; the holder must stop relying on it.
        case revoked
    }

    public var requestID: UInt64
    public var kind: Kind
    public var reason: String

    public init(requestID: UInt64, kind: Kind, reason: String) {
        self.requestID = requestID
        self.kind = kind
        self.reason = reason
    }
}

/// The coordinator is stopping.
public struct ShutdownNotice: Hashable, Sendable {
    public var reason: String
    /// The coordinator expects to come back: keep running attempts and reconnect.
    public var restarting: Bool

    public init(reason: String, restarting: Bool) {
        self.reason = reason
        self.restarting = restarting
    }
}

/// Something a worker sent was refused.
public struct WorkerError: Error, Hashable, Sendable {
    public var code: ProtocolError.Code
    public var message: String
    /// The attempt concerned, if any (e.g. a result for a superseded attempt).
    public var ref: WireAttemptRef?
    /// The lock request concerned, if any.
    public var requestID: UInt64?

    public init(code: ProtocolError.Code, message: String, ref: WireAttemptRef? = nil, requestID: UInt64? = nil) {
        self.code = code
        self.message = message
        self.ref = ref
        self.requestID = requestID
    }
}
