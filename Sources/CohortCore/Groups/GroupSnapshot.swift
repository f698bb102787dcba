/// One child of a group (a procedure or a nested group) as `cohort status` shows it.
public struct ChildSnapshot: Hashable, Sendable {
    public var name: String
    /// `tests/unit`.
    public var path: String
    /// Whether the child is a nested group (its state sums up its children's).
    public var isGroup: Bool
    public var phase: ChildPhase
    /// The worker session of the latest attempt sent to a worker.
    public var worker: SessionID?
    /// That worker's name.
    public var workerName: String?
    /// The latest attempt sent to a worker (the one `worker` names); 0 if none was: the child
    /// never started.
    public var attempt: UInt32
    /// The failure's message or the cancellation's reason.
    public var error: String?
    public var startedAt: Timestamp?
    public var finishedAt: Timestamp?
    /// What a `waiting` child waits for.
    public var waitingReason: String?
    /// The coordinator cut its output down to `maxOutputBytes` (a marker in it shows where).
    public var outputTruncated: Bool
    /// The paths it waits for itself (its `after`, injections, sequence order), not those its
    /// enclosing groups wait for.
    public var dependsOn: [String]
    /// A procedure's kind; empty for a nested group.
    public var kind: String
    /// A procedure's earlier attempts that reached a worker, oldest first (at most the last
    /// ``EndedAttempt/kept``); empty for one that ran once, and for a nested group.
    public var earlierAttempts: [EndedAttempt]

    public init(
        name: String, path: String, isGroup: Bool = false, phase: ChildPhase, worker: SessionID? = nil,
        workerName: String? = nil, attempt: UInt32 = 0, error: String? = nil, startedAt: Timestamp? = nil,
        finishedAt: Timestamp? = nil, waitingReason: String? = nil, outputTruncated: Bool = false,
        dependsOn: [String] = [], kind: String = "", earlierAttempts: [EndedAttempt] = []
    ) {
        self.earlierAttempts = earlierAttempts
        self.dependsOn = dependsOn
        self.kind = kind
        self.outputTruncated = outputTruncated
        self.name = name
        self.path = path
        self.isGroup = isGroup
        self.phase = phase
        self.worker = worker
        self.workerName = workerName
        self.attempt = attempt
        self.error = error
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.waitingReason = waitingReason
    }
}

/// A group as `cohort status GROUP` shows it: every child, depth-first in spec order.
public struct GroupSnapshot: Hashable, Sendable {
    public var id: String
    public var name: String
    public var phase: GroupPhase
    public var submittedAt: Timestamp
    public var startedAt: Timestamp?
    public var finishedAt: Timestamp?
    /// Why it failed or was cancelled.
    public var reason: String?
    /// Nested groups and procedures, depth-first in spec order (empty in overviews).
    public var children: [ChildSnapshot]
    /// The spec's `priority` (0 for a group read back from the journal's history only).
    public var priority: Int = 0

    public init(
        id: String, name: String, phase: GroupPhase, submittedAt: Timestamp, startedAt: Timestamp? = nil,
        finishedAt: Timestamp? = nil, reason: String? = nil, children: [ChildSnapshot] = []
    ) {
        self.id = id
        self.name = name
        self.phase = phase
        self.submittedAt = submittedAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.reason = reason
        self.children = children
    }
}
