/// A group's state (docs/protocol.md §7).
public enum GroupState: Hashable, Sendable, CaseIterable {
    case pending, running, succeeded, failed, cancelled

    /// Whether the group has finished (every child has finished).
    public var isFinished: Bool {
        switch self {
        case .succeeded, .failed, .cancelled: true
        case .pending, .running: false
        }
    }
}

/// A child's state: a group's states plus `waiting` (dependencies or a lock),
/// `ready` (queued for a worker) and `skipped` (finished without running: its `if:` was false,
/// or a dependency was skipped).
public enum ChildState: Hashable, Sendable, CaseIterable {
    case pending, waiting, ready, running, succeeded, failed, cancelled, skipped
}

/// One line of `cohort status`.
public struct GroupSummary: Hashable, Sendable {
    public var id: String
    public var name: String
    public var state: GroupState
    public var submittedAt: WireTimestamp
    /// When it finished; nil while it runs.
    public var finishedAt: WireTimestamp?
    /// The spec's `priority` (default 0).
    public var priority: Int32

    public init(
        id: String, name: String, state: GroupState, submittedAt: WireTimestamp, finishedAt: WireTimestamp? = nil,
        priority: Int32 = 0
    ) {
        self.priority = priority
        self.id = id
        self.name = name
        self.state = state
        self.submittedAt = submittedAt
        self.finishedAt = finishedAt
    }
}

/// Which groups `cohort status` lists (without a group id): every filter set must match.
/// The coordinator filters, over the journal's history and what it holds in memory, and
/// answers newest submission first.
public struct GroupFilter: Hashable, Sendable {
    /// Any of these states; empty: every state.
    public var states: Set<GroupState>
    /// A shell-style glob the group's name matches (`*`, `?`, `[a-z]`, `[!a-z]`); nil: any name.
    public var nameGlob: String?
    /// Submitted at or after this time; nil: any time.
    public var submittedSince: WireTimestamp?
    /// At most this many groups, the newest; 0: every one.
    public var limit: UInt32

    /// The default of `cohort status`: the 50 newest groups.
    public static let defaultLimit: UInt32 = 50

    /// Every group (no filter, no limit): what a request without filters means.
    public static let all = GroupFilter(limit: 0)

    public init(
        states: Set<GroupState> = [], nameGlob: String? = nil, submittedSince: WireTimestamp? = nil,
        limit: UInt32 = GroupFilter.defaultLimit
    ) {
        self.states = states
        self.nameGlob = nameGlob
        self.submittedSince = submittedSince
        self.limit = limit
    }
}

/// `cohort status GROUP`: the group and every child, depth-first in spec order.
public struct GroupDetail: Hashable, Sendable {
    public var id: String
    public var name: String
    public var state: GroupState
    public var submittedAt: WireTimestamp
    public var finishedAt: WireTimestamp?
    /// Why the group failed or was cancelled.
    public var reason: String?
    public var children: [ChildStatus]
    /// The spec's `priority` (default 0).
    public var priority: Int32

    public init(
        id: String, name: String, state: GroupState, submittedAt: WireTimestamp,
        finishedAt: WireTimestamp? = nil, reason: String? = nil, children: [ChildStatus], priority: Int32 = 0
    ) {
        self.priority = priority
        self.id = id
        self.name = name
        self.state = state
        self.submittedAt = submittedAt
        self.finishedAt = finishedAt
        self.reason = reason
        self.children = children
    }
}

/// One child of a group, in status replies and watch events.
public struct ChildStatus: Hashable, Sendable {
    public var name: String
    /// The child's place in nested groups, e.g. `tests/unit`.
    public var path: String
    public var state: ChildState
    /// The worker running (or that ran) its latest attempt.
    public var worker: String?
    /// For a procedure, the latest attempt sent to a worker (the one `worker` names); 0 if none
    /// was: it never started (it waits, or was cancelled before it reached a worker). Always 0
    /// for a nested group.
    public var attempt: UInt32
    /// The failure's message or the cancellation's reason.
    public var error: String?
    public var startedAt: WireTimestamp?
    public var finishedAt: WireTimestamp?
    /// What a `waiting` child waits for, e.g. `lock repo held by release/checkout`.
    public var waitingReason: String?
    /// The coordinator cut the child's output down to its `maxOutputBytes` (a marker in the
    /// output shows where).
    public var outputTruncated: Bool
    /// A nested group's row: no worker, no attempt; its state sums up its contents.
    public var isGroup: Bool
    /// The paths of what it waits for itself (its `after`, injections, sequence order), not
    /// what its enclosing groups wait for: the edges of the group's graph.
    public var dependsOn: [String]
    /// A procedure's kind (`shell`); empty for a nested group.
    public var kind: String
    /// A procedure's earlier attempts that reached a worker, oldest first (the coordinator
    /// keeps the last 10); empty if it ran once, and for a nested group.
    public var earlierAttempts: [AttemptSummary]

    /// A procedure of a rerun (`cohort rerun`) that did not run: it succeeded with the output
    /// it had in the earlier run. Nothing else succeeds without an attempt.
    public var isReused: Bool { !isGroup && state == .succeeded && attempt == 0 }

    public init(
        name: String, path: String, state: ChildState, worker: String? = nil, attempt: UInt32 = 0,
        error: String? = nil, startedAt: WireTimestamp? = nil, finishedAt: WireTimestamp? = nil,
        waitingReason: String? = nil, outputTruncated: Bool = false, isGroup: Bool = false,
        dependsOn: [String] = [], kind: String = "", earlierAttempts: [AttemptSummary] = []
    ) {
        self.earlierAttempts = earlierAttempts
        self.outputTruncated = outputTruncated
        self.isGroup = isGroup
        self.dependsOn = dependsOn
        self.kind = kind
        self.name = name
        self.path = path
        self.state = state
        self.worker = worker
        self.attempt = attempt
        self.error = error
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.waitingReason = waitingReason
    }
}

/// An earlier attempt of a procedure child: it was sent to a worker and ended, and another
/// attempt of the child followed.
public struct AttemptSummary: Hashable, Sendable {
    /// How an attempt ended: ``outcome`` is one of these, or a value a newer coordinator added.
    public static let outcomes = ["failed", "timed-out", "lost"]

    /// The attempt's number (1 for the first).
    public var attempt: UInt32
    /// The worker it was sent to: its name, or its session id if the name is unknown.
    public var worker: String
    /// When it started; nil if it never reported starting.
    public var startedAt: WireTimestamp?
    public var finishedAt: WireTimestamp?
    /// How it ended: `failed`, `timed-out`, or `lost` (its worker was lost or its lease ended).
    public var outcome: String
    /// The failure's message, the timeout's reason or what happened to the worker.
    public var error: String

    public init(
        attempt: UInt32, worker: String, startedAt: WireTimestamp? = nil, finishedAt: WireTimestamp? = nil,
        outcome: String, error: String
    ) {
        self.attempt = attempt
        self.worker = worker
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.outcome = outcome
        self.error = error
    }
}

/// One event of a watched group.
public struct WatchEvent: Hashable, Sendable {
    public var group: String
    /// When it happened on the coordinator.
    public var at: WireTimestamp
    public var kind: Kind

    public init(group: String, at: WireTimestamp, _ kind: Kind) {
        self.group = group
        self.at = at
        self.kind = kind
    }

    public enum Kind: Hashable, Sendable {
        /// A child changed state; its new status.
        case child(ChildStatus)
        /// The group finished; the last event of the watch.
        case finished(state: GroupState, reason: String?)
    }
}
