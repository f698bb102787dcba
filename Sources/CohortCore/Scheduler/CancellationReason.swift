import CohortSpec

/// Why an attempt, a child or a group was cancelled: a case to switch on, and the words
/// people read (``text``), which are the same as before the reasons were typed (tests and
/// docs quote them).
///
/// On the wire it travels as a code plus its text (CohortWire's `CancelCode`); a reason that
/// comes back from a worker keeps its case where the code says all there is to say
/// (``timedOut``), and is `custom` with its text otherwise.
public enum CancellationReason: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// Its timeout, or its group's, passed: `timed out`. A worker-side timeout of an attempt
    /// is retried like a failure; every other reason is final.
    case timedOut
    /// A client asked without giving a reason: `cancelled by NAME`.
    case cancelledByClient(String)
    /// A newer attempt runs the child: `superseded by attempt 3`.
    case superseded(byAttempt: UInt32)
    /// A worker reports an attempt the coordinator does not know.
    case unknownAttempt
    /// A producer it injects from failed: `producer "build" failed`.
    case producerFailed(path: String)
    /// A producer it injects from was cancelled: `producer "build" was cancelled`.
    case producerCancelled(path: String)
    /// Its group finished before it could start.
    case groupFinished
    /// Its group's failure policy cancelled it because the child at `path` failed (or was
    /// cancelled): `dependency "a" failed`, or with `cancel-group`,
    /// `cancelled because "a" failed (onChildFailure: cancel-group)`.
    case dependencyFailed(path: String, cancelled: Bool, policy: ChildFailurePolicy)
    /// Its worker was lost; the words say which and why.
    case workerLost(String)
    /// Its worker stopped and handed it back; the words say why.
    case handedBack(String)
    /// Its worker or the coordinator is stopping; the words say which.
    case shutdown(String)
    /// It was skipped, not run: its `if:` was false (`if "failed(deploy)" was false`), or a
    /// dependency was skipped (`dependency "build" was skipped`). What a skipped child's
    /// result reads as; it is no error.
    case skipped(String)
    /// A running child of the group cancelled it with its attempt token (`cohort cancel
    /// "$COHORT_GROUP"` from a shell child, `context.cancelGroup(reason:)` from a custom kind):
    /// `cancelled by child deploy/check (attempt 1): rollback needed`.
    case cancelledByChild(path: String, attempt: UInt32, reason: String)
    /// A client's or a procedure's own words.
    case custom(String)

    public init(stringLiteral text: String) { self = .custom(text) }

    /// What people read.
    public var text: String {
        switch self {
        case .timedOut: "timed out"
        case .cancelledByClient(let name): "cancelled by \(name)"
        case .superseded(let attempt): "superseded by attempt \(attempt)"
        case .unknownAttempt: "the coordinator does not know this attempt"
        case .producerFailed(let path): "producer \"\(path)\" failed"
        case .producerCancelled(let path): "producer \"\(path)\" was cancelled"
        case .groupFinished: "its group finished before it could start"
        case .dependencyFailed(let path, let cancelled, let policy):
            switch policy {
            case .cancelGroup:
                "cancelled because \"\(path)\" \(cancelled ? "was cancelled" : "failed") (onChildFailure: cancel-group)"
            case .cancelDependents, .continue: "dependency \"\(path)\" \(cancelled ? "was cancelled" : "failed")"
            }
        case .cancelledByChild(let path, let attempt, let reason):
            "cancelled by child \(path) (attempt \(attempt))" + (reason.isEmpty ? "" : ": \(reason)")
        case .workerLost(let text), .handedBack(let text), .shutdown(let text), .skipped(let text), .custom(let text):
            text
        }
    }

    public var description: String { text }
}
