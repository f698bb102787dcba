/// Coordinator → client: the answer to a ``ClientRequest`` (same `requestID`),
/// or an unsolicited message (`requestID == 0`, e.g. `error(shuttingDown)`).
public struct CoordinatorReply: Hashable, Sendable {
    /// The request answered; 0 for unsolicited messages. Watch events carry the `watch` request's id.
    public var requestID: UInt64
    public var kind: Kind

    public init(requestID: UInt64, _ kind: Kind) {
        self.requestID = requestID
        self.kind = kind
    }

    public enum Kind: Hashable, Sendable {
        /// The group was accepted (or was already known under this id).
        case submitted(SubmitReceipt)
        /// Every group, answering `status(group: nil)`.
        case groups([GroupSummary])
        /// One group in detail, answering `status(group:)` and, as a snapshot, `watch`.
        case group(GroupDetail)
        /// A finished child's result.
        case result(ResultReply)
        /// The cancel was accepted; the group's (or child's) end follows in status and watch events.
        /// `alreadyFinished`: it had finished before, in that state, and nothing changed.
        case cancelAccepted(group: String, path: String?, alreadyFinished: ChildState? = nil)
        /// Events of a watched group, in order. A batch of N is the same as N messages of one.
        case watchEvents([WatchEvent])
        case workers([WorkerInfo])
        case locks([LockInfo])
        /// The request failed.
        case error(ProtocolError)
        /// Done, nothing to say (answers `unwatch`).
        case acknowledged
        /// The children of an `addChildren` request were added to the group and journaled;
        /// `paths` are the added nodes' paths in document order (nested ones too).
        case childrenAdded(group: String, paths: [String])
        /// A child's log lines, answering `logs`.
        case logs(LogsPage)
    }
}

/// The answer to a submit.
public struct SubmitReceipt: Hashable, Sendable {
    /// The group's id: the one the submission asked for, or one the coordinator chose.
    public var id: String
    /// The group's name.
    public var name: String
    /// Things worth knowing that do not stop the group, e.g.
    /// `no connected worker offers kind "resize"`.
    public var warnings: [String]
    /// The id was already known with the same spec: nothing new was accepted.
    public var alreadySubmitted: Bool
    /// A rerun's procedures that start succeeded with the earlier run's output.
    public var reused: Int
    /// A rerun's earlier group; nil for a submission.
    public var rerunOf: String?

    public init(
        id: String, name: String, warnings: [String] = [], alreadySubmitted: Bool = false, reused: Int = 0,
        rerunOf: String? = nil
    ) {
        self.id = id
        self.name = name
        self.warnings = warnings
        self.alreadySubmitted = alreadySubmitted
        self.reused = reused
        self.rerunOf = rerunOf
    }
}

/// A finished child's (or group's) result.
public struct ResultReply: Hashable, Sendable {
    public var group: String
    public var path: String?
    public var outcome: WireOutcome
    /// The output was cut down to the coordinator's `maxOutputBytes` (a marker in it shows where).
    public var outputTruncated: Bool

    public init(group: String, path: String?, outcome: WireOutcome, outputTruncated: Bool = false) {
        self.group = group
        self.path = path
        self.outcome = outcome
        self.outputTruncated = outputTruncated
    }
}
