/// Names one attempt of one child: the unit a worker runs.
///
/// `id` is the coordinator's compact handle for the attempt (unique among
/// all attempts it has handed out, across restarts); `group`, `path` and
/// `attempt` say the same thing in words, so that a worker can name the
/// attempt (`COHORT_GROUP`, `COHORT_CHILD`, `COHORT_ATTEMPT`) and a
/// restarted coordinator can recognise attempts reported by reconnecting
/// workers. A cancel or a result names the attempt, never just the child,
/// so it can never hit a later attempt of the same child.
public struct WireAttemptRef: Hashable, Sendable {
    /// The coordinator's compact id of this attempt.
    public var id: UInt64
    /// The group's id.
    public var group: String
    /// The child's path in nested groups, e.g. `tests/unit`.
    public var path: String
    /// 1 for the first attempt, one more for each retry or re-dispatch.
    public var attempt: UInt32

    public init(id: UInt64, group: String, path: String, attempt: UInt32) {
        self.id = id
        self.group = group
        self.path = path
        self.attempt = attempt
    }
}
