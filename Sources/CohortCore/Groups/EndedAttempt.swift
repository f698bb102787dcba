/// An earlier attempt of a procedure child: one that was sent to a worker and ended, after
/// which another attempt of the same child followed (a retry after a failure or a worker-side
/// timeout, a new attempt after its worker was lost). Status shows these next to the latest
/// attempt; the coordinator keeps the last ``EndedAttempt/kept`` of each child, in memory only.
public struct EndedAttempt: Hashable, Sendable {
    /// How an earlier attempt ended.
    public enum Ending: String, Hashable, Sendable, CaseIterable {
        /// It failed on its worker (a non-zero exit, an error); `error` says how.
        case failed
        /// Its worker stopped it at its timeout.
        case timedOut = "timed-out"
        /// Its worker was lost (silent, gone, replaced), its lease ended, or no worker reported
        /// it after the coordinator restarted.
        case lost
        /// It succeeded, and the child's `repeat.until` was false: the child runs again.
        case repeated
    }

    /// How many earlier attempts a child keeps: the last ones, older ones are dropped.
    public static let kept = 10

    /// The attempt's number (1 for the first).
    public var attempt: UInt32
    /// The worker it was sent to: its name, or its session id if the name is unknown.
    public var worker: String
    /// When it started on the worker; nil if it never reported starting.
    public var startedAt: Timestamp?
    /// When it ended.
    public var finishedAt: Timestamp
    public var ending: Ending
    /// The failure's message, the timeout's reason or what happened to the worker.
    public var error: String

    public init(
        attempt: UInt32, worker: String, startedAt: Timestamp?, finishedAt: Timestamp, ending: Ending, error: String
    ) {
        self.attempt = attempt
        self.worker = worker
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.ending = ending
        self.error = error
    }
}

extension ChildRun {
    /// Keeps `ended` among the child's earlier attempts (the last ``EndedAttempt/kept``).
    mutating func keepEarlier(_ ended: EndedAttempt) {
        var list = earlier ?? []
        if list.count >= EndedAttempt.kept { list.removeFirst(list.count - EndedAttempt.kept + 1) }
        list.append(ended)
        earlier = list
    }
}
