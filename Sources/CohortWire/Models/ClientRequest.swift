/// Client → coordinator: one request, answered by a ``CoordinatorReply`` with the same `requestID`.
public struct ClientRequest: Hashable, Sendable {
    /// Chosen by the client, non-zero and unique among its outstanding requests; echoed by the reply.
    public var requestID: UInt64
    public var kind: Kind
    /// The attempt token of a running child (`COHORT_ATTEMPT_TOKEN`), sent with the requests
    /// it may let through (status, result, watch, unwatch, cancel, addChildren, logs) for that
    /// child's own group; ignored on the others. `nil`: none.
    public var attemptToken: String?

    public init(requestID: UInt64, _ kind: Kind, attemptToken: String? = nil) {
        self.requestID = requestID
        self.kind = kind
        self.attemptToken = attemptToken
    }

    /// What the client asks for.
    public enum Kind: Hashable, Sendable {
        /// Submit a group spec. Answered by `submitted` or `error(invalidSpec …)`.
        case submit(Submission)
        /// Status of one group (answered by `group`), or the groups `filter` selects, newest
        /// first (`group == nil`, answered by `groups`).
        case status(group: String?, filter: GroupFilter = .all)
        /// A child's result (`path == nil`: the group's own, coordinator-defined). Answered by `result`.
        case result(group: String, path: String?)
        /// Cancel a group, or one child of it (`path`). Answered by `cancelAccepted`.
        case cancel(group: String, path: String?, reason: String)
        /// Stream the group's events. Answered by `group` (a snapshot), then
        /// `watchEvents` with the same request id until the group finishes or the client unwatches.
        case watch(group: String)
        /// Stop a watch. Answered by `acknowledged`.
        case unwatch(group: String)
        /// The connected workers. Answered by `workers`.
        case workers
        /// The cluster-wide lock table. Answered by `locks`.
        case locks
        /// The client is leaving; its watches end. Not answered.
        case disconnect(reason: String)
        /// Stop giving the worker (its name or session id) new work; what it runs finishes.
        /// Needs an admin key with CURVE. Answered by `acknowledged`.
        case drain(worker: String)
        /// Give a worker an operator drained (its name or session id) work again. Needs an
        /// admin key with CURVE. Answered by `acknowledged`; `notFound` for a worker neither
        /// connected nor drained, `invalidRequest` for one not drained or stopping itself.
        case undrain(worker: String)
        /// Submit again the spec of finished group `group` as a new group (`id`, or one the
        /// coordinator chooses), reusing the outputs of its procedures that succeeded (and
        /// waited for nothing that runs again). Answered by `submitted`; `notFound` for a group
        /// the coordinator's journal does not have, `invalidRequest` for one still running or
        /// with nothing to run again, or a coordinator without a journal.
        case rerun(group: String, id: String?)
        /// Add children to a running group (docs/spec.md, "Growing groups"). Answered by
        /// `childrenAdded` once they are journaled, or `error` (`invalidSpec` naming each
        /// problem, `invalidRequest` for a group that is finishing or finished).
        case addChildren(group: String, ChildrenAddition)
        /// What a child's attempt wrote (docs/operations.md, "Logs"). Answered by `logs`; a
        /// follower asks again with ``LogsQuery/after`` at the last sequence it got.
        case logs(LogsQuery)
    }

    /// Whether the request's kind carries an attempt token on the wire.
    public var carriesAttemptToken: Bool {
        switch kind {
        case .status, .result, .cancel, .watch, .unwatch, .addChildren, .logs: true
        default: false
        }
    }
}

/// Children to add to a running group: a document of children written like a spec's
/// `children` (a list, or a mapping with `children:`), and where they go.
public struct ChildrenAddition: Hashable, Sendable {
    /// The children, as text.
    public var document: String
    public var format: SpecFormat
    /// The path of a nested group to add them into; `nil`: the group's top level.
    public var into: String?

    public init(document: String, format: SpecFormat, into: String? = nil) {
        self.document = document
        self.format = format
        self.into = into
    }
}

/// A group spec to run.
public struct Submission: Hashable, Sendable {
    /// A client-chosen group id (`--id`); submitting the same id again is
    /// idempotent. `nil`: the coordinator chooses one.
    public var groupID: String?
    /// The spec document, as text (docs/spec.md).
    public var document: String
    public var format: SpecFormat
    /// Where the document came from (e.g. `release.yaml`); the default group name.
    public var sourceName: String?
    /// Refuse the group, instead of accepting it with warnings, when no connected worker
    /// offers one of its kinds (with the labels it requires).
    public var strict: Bool
    /// Overrides the spec's `priority` (`cohort submit --priority`); nil: the spec's.
    public var priority: Int32?

    public init(
        groupID: String? = nil, document: String, format: SpecFormat, sourceName: String? = nil, strict: Bool = false,
        priority: Int32? = nil
    ) {
        self.priority = priority
        self.groupID = groupID
        self.document = document
        self.format = format
        self.sourceName = sourceName
        self.strict = strict
    }
}

/// The text format of a spec document.
public enum SpecFormat: Hashable, Sendable, CaseIterable {
    case yaml
    case json
}
