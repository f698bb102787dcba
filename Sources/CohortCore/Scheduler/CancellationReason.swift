import CohortSpec

/// Why an attempt, a child or a group was cancelled: a ``Code`` to switch on, and the words
/// people read (``text``), which are the same as before the reasons were typed (tests and
/// docs quote them).
///
/// A reason is its code and its text, nothing else, so it crosses the wire (CohortWire's
/// `CancelCode` next to the text) and the journal (a code and a text column) and comes back
/// equal: after a restart, or from a worker, a reason keeps its code. The constructors
/// (``cancelledByClient(_:)``, ``producerFailed(path:)``, …) make each code's words; nothing
/// decides by the text.
public struct CancellationReason: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// What kind of reason it is: one case per code of the wire's `CancelCode`. The raw
    /// values are what the journal stores.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// A client's or a procedure's own words.
        case custom
        /// Its timeout, or its group's, passed. A worker-side timeout of an attempt is retried
        /// like a failure; every other reason is final.
        case timedOut = "timed-out"
        /// A client asked without giving a reason.
        case cancelledByClient = "cancelled-by-client"
        /// A newer attempt runs the child, or the coordinator does not know the attempt.
        case superseded
        /// A producer it injects from failed.
        case producerFailed = "producer-failed"
        /// A producer it injects from was cancelled.
        case producerCancelled = "producer-cancelled"
        /// Its group finished before it could start.
        case groupFinished = "group-finished"
        /// Its group's failure policy: a dependency or a sibling failed or was cancelled.
        case dependencyFailed = "dependency-failed"
        /// Its worker was lost.
        case workerLost = "worker-lost"
        /// Its worker stopped and handed it back.
        case handedBack = "handed-back"
        /// Its worker or the coordinator is stopping.
        case shutdown
        /// It was skipped, not run: its `if:` was false, or a dependency was skipped.
        case skipped
        /// A running child of its group cancelled the group with its attempt token.
        case cancelledByChild = "cancelled-by-child"
    }

    /// What kind of reason it is.
    public let code: Code
    /// What people read.
    public let text: String

    public init(code: Code, text: String) {
        self.code = code
        self.text = text
    }

    /// A client's or a procedure's own words: `custom`.
    public init(stringLiteral text: String) { self.init(code: .custom, text: text) }

    public var description: String { text }

    /// Its timeout, or its group's, passed: `timed out`.
    public static let timedOut = CancellationReason(code: .timedOut, text: "timed out")

    /// A client asked without giving a reason: `cancelled by NAME`.
    public static func cancelledByClient(_ name: String) -> CancellationReason {
        CancellationReason(code: .cancelledByClient, text: "cancelled by \(name)")
    }

    /// A newer attempt runs the child: `superseded by attempt 3`.
    public static func superseded(byAttempt attempt: UInt32) -> CancellationReason {
        CancellationReason(code: .superseded, text: "superseded by attempt \(attempt)")
    }

    /// A worker reports an attempt the coordinator does not know (code `superseded`).
    public static let unknownAttempt = CancellationReason(
        code: .superseded, text: "the coordinator does not know this attempt")

    /// A producer it injects from failed: `producer "build" failed`.
    public static func producerFailed(path: String) -> CancellationReason {
        CancellationReason(code: .producerFailed, text: "producer \"\(path)\" failed")
    }

    /// A producer it injects from was cancelled: `producer "build" was cancelled`.
    public static func producerCancelled(path: String) -> CancellationReason {
        CancellationReason(code: .producerCancelled, text: "producer \"\(path)\" was cancelled")
    }

    /// Its group finished before it could start.
    public static let groupFinished = CancellationReason(
        code: .groupFinished, text: "its group finished before it could start")

    /// Its group's failure policy cancelled it because the child at `path` failed (or was
    /// cancelled): `dependency "a" failed`, or with `cancel-group`,
    /// `cancelled because "a" failed (onChildFailure: cancel-group)`.
    public static func dependencyFailed(path: String, cancelled: Bool, policy: ChildFailurePolicy)
        -> CancellationReason
    {
        let what = cancelled ? "was cancelled" : "failed"
        let text =
            switch policy {
            case .cancelGroup: "cancelled because \"\(path)\" \(what) (onChildFailure: cancel-group)"
            case .cancelDependents, .continue: "dependency \"\(path)\" \(what)"
            }
        return CancellationReason(code: .dependencyFailed, text: text)
    }

    /// Its worker was lost; the words say which and why.
    public static func workerLost(_ text: String) -> CancellationReason {
        CancellationReason(code: .workerLost, text: text)
    }

    /// Its worker stopped and handed it back; the words say why.
    public static func handedBack(_ text: String) -> CancellationReason {
        CancellationReason(code: .handedBack, text: text)
    }

    /// Its worker or the coordinator is stopping; the words say which.
    public static func shutdown(_ text: String) -> CancellationReason {
        CancellationReason(code: .shutdown, text: text)
    }

    /// It was skipped, not run: its `if:` was false (`if "failed(deploy)" was false`), or a
    /// dependency was skipped (`dependency "build" was skipped`). What a skipped child's
    /// result reads as; it is no error.
    public static func skipped(_ text: String) -> CancellationReason {
        CancellationReason(code: .skipped, text: text)
    }

    /// A running child of the group cancelled it with its attempt token (`cohort cancel
    /// "$COHORT_GROUP"` from a shell child, `context.cancelGroup(reason:)` from a custom kind):
    /// `cancelled by child deploy/check (attempt 1): rollback needed`.
    public static func cancelledByChild(path: String, attempt: UInt32, reason: String) -> CancellationReason {
        CancellationReason(
            code: .cancelledByChild,
            text: "cancelled by child \(path) (attempt \(attempt))" + (reason.isEmpty ? "" : ": \(reason)"))
    }

    /// A client's or a procedure's own words.
    public static func custom(_ text: String) -> CancellationReason { CancellationReason(code: .custom, text: text) }
}
