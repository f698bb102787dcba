import CohortSpec
import CohortWire

// The client speaks in the wire protocol's Swift models (CohortWire): they are plain Sendable
// values with no encoding attached. The aliases let a program use them with `import
// CohortClient` alone.

/// One line of `cohort status`: a group's id, name, state and submission time.
public typealias GroupSummary = CohortWire.GroupSummary
/// Which groups ``CohortClient/status(filter:)`` lists: states, a name glob, a submission
/// time, a limit.
public typealias GroupFilter = CohortWire.GroupFilter
/// A group and every child, depth-first in spec order (`cohort status GROUP`).
public typealias GroupDetail = CohortWire.GroupDetail
/// One child of a group: state, worker, attempt, error, times.
public typealias ChildStatus = CohortWire.ChildStatus
/// An earlier attempt of a child (``ChildStatus/earlierAttempts``): worker, times, outcome, error.
public typealias AttemptSummary = CohortWire.AttemptSummary
/// `pending`, `running`, `succeeded`, `failed`, `cancelled`.
public typealias GroupState = CohortWire.GroupState
/// A group's states plus `waiting` and `ready`.
public typealias ChildState = CohortWire.ChildState
/// One connected worker (`cohort workers`).
public typealias WorkerInfo = CohortWire.WorkerInfo
/// `joining`, `ready`, `draining`, `lost`.
public typealias WorkerState = CohortWire.WorkerState
/// One category of the cluster-wide lock table (`cohort locks`).
public typealias LockInfo = CohortWire.LockInfo
/// The attempt holding a lock.
public typealias LockHolderStatus = CohortWire.LockHolderStatus
/// A child waiting for a lock.
public typealias LockWaiter = CohortWire.LockWaiter
/// A point in time: nanoseconds since the Unix epoch; `.date` gives a `Date`.
public typealias WireTimestamp = CohortWire.WireTimestamp

/// What the coordinator said to a submit: the group's id and name, warnings, and whether
/// the id was already known with the same spec (the wire protocol's `Submitted`).
public typealias SubmitReceipt = CohortWire.SubmitReceipt

/// A finished child's one result (AsyncOperation's three outcomes).
public enum ChildOutcome: Sendable, Hashable {
    /// Succeeded with this output.
    case succeeded(JSONValue)
    /// Failed with this error message.
    case failed(String)
    /// Cancelled for this reason (`timed out` for a timeout).
    case cancelled(String)
}

/// One event of a watched group (``CohortClient/watch(_:)``).
public enum GroupEvent: Sendable, Hashable {
    /// The group as it stood when the watch began, every child included. Always first.
    case snapshot(GroupDetail)
    /// A child changed state; its new status.
    case child(ChildStatus, at: WireTimestamp)
    /// The group finished (every child has finished). Always last.
    case finished(GroupState, reason: String?, at: WireTimestamp)
}

/// One line of a child attempt's log (``CohortClient/logs(_:)``): stdout, stderr, a kind's line
/// with its level, or Cohort's marker where lines were cut.
public typealias LogLine = CohortWire.LogLine
/// Which lines of a child's log to read: the attempt, after a sequence number, a tail, a time.
public typealias LogsQuery = CohortWire.LogsQuery
/// A page of a child's log, with the child's state and whether the attempt has ended.
public typealias LogsPage = CohortWire.LogsPage
