import Foundation

/// One worker session: a worker's connection from its READY until it leaves or is lost.
///
/// The coordinator gives each session a fresh id (`w-3`); a worker that reconnects gets a new
/// one, so nothing addressed to an old session ever reaches the new one.
public struct SessionID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: SessionID, rhs: SessionID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `w-3`.
    public var description: String { "w-\(rawValue)" }
}

/// One attempt's id: unique among every attempt the coordinator ever hands out, restarts
/// included (ids live above `epoch << 32`, like fencing tokens). `attempt_id` on the wire and
/// in the journal.
///
/// A literal reads as an id (`.attempt(7)` in a test); a `UInt64` variable (a token, a request
/// id) does not convert by itself, which is the point of the type.
public struct AttemptID: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var rawValue: UInt64

    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public init(integerLiteral value: UInt64) { self.rawValue = value }

    /// No attempt (yet): a leaf that was never sent, a finished child. Real ids start above
    /// the token floor, so they are never 0.
    public static let none = AttemptID(0)

    public static func < (lhs: AttemptID, rhs: AttemptID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "\(rawValue)" }
}

/// Names one attempt of one child, as the wire's attempt ref does: the scheduler's compact id
/// (unique among every attempt it hands out) plus the same in words.
public struct AttemptRef: Hashable, Sendable, CustomStringConvertible {
    /// The attempt's id, unique for the scheduler's life (the journal keeps it across restarts).
    public var id: AttemptID
    /// The group's id.
    public var group: String
    /// The child's path, `tests/unit`.
    public var path: String
    /// 1 for the first attempt.
    public var attempt: UInt32

    public init(id: AttemptID, group: String, path: String, attempt: UInt32) {
        self.id = id
        self.group = group
        self.path = path
        self.attempt = attempt
    }

    /// `release/tests/unit#2`.
    public var description: String { "\(group)/\(path)#\(attempt)" }
}

/// How an attempt (or a child) ended: succeeded with its output, failed with an error, or
/// cancelled with a reason.
public enum AttemptOutcome: Hashable, Sendable {
    /// The output, UTF-8 JSON, kept as the worker sent it.
    case succeeded(output: Data)
    case failed(error: String)
    case cancelled(reason: CancellationReason)
}

/// A group's state (docs/protocol.md §7).
public enum GroupPhase: String, Hashable, Sendable, CaseIterable {
    case pending, running, succeeded, failed, cancelled

    public var isFinished: Bool {
        switch self {
        case .succeeded, .failed, .cancelled: true
        case .pending, .running: false
        }
    }
}

/// A child's state (docs/protocol.md §7): a group's states plus `waiting` (for dependencies, a lock,
/// a worker that offers its kind, a retry's backoff), `ready` (queued for a worker, or
/// sent to one that has not started it yet) and `skipped` (finished without running: its
/// `if:` was false, or it depends on a skipped child and has no `if:` of its own).
public enum ChildPhase: String, Hashable, Sendable, CaseIterable {
    case pending, waiting, ready, running, succeeded, failed, cancelled, skipped

    public var isFinished: Bool {
        switch self {
        case .succeeded, .failed, .cancelled, .skipped: true
        default: false
        }
    }
}

/// Why the scheduler refused a request; `code` says what kind of refusal it is.
public struct SchedulerError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: Hashable, Sendable {
        /// No such group, child, attempt or lock request.
        case notFound
        /// The request contradicts the state (a group id reused for another spec, a result
        /// of a child that has not finished).
        case conflict
        /// Malformed (an empty group id, a lock request without categories…).
        case invalidRequest
        /// The attempt named was superseded or is not this worker's.
        case superseded
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
