/// One line of an attempt's log (docs/operations.md, "Logs"): the bytes up to a newline (not
/// included), or a piece of a longer line (`partial`: it goes on in the next line of the same
/// stream). The bytes are whatever the child wrote: not necessarily UTF-8.
public struct LogLine: Hashable, Sendable {
    /// Where a line came from.
    public enum Stream: UInt8, Hashable, Sendable, CaseIterable {
        case stdout = 1
        case stderr = 2
        /// A Swift kind's code, through its `ProcedureContext` (with a ``LogLine/level``).
        case kind = 3
        /// Cohort itself: lines were cut from the middle (the attempt's `maxLogBytes`).
        case marker = 4

        /// `stdout`, `stderr`, `kind`, `cohort`.
        public var name: String {
            switch self {
            case .stdout: "stdout"
            case .stderr: "stderr"
            case .kind: "kind"
            case .marker: "cohort"
            }
        }
    }

    /// The most bytes of text in one line: a longer line is sent in pieces (``partial``).
    public static let maxTextBytes = 64 << 10

    /// From 1 in each attempt, in the order written (across streams).
    public var sequence: UInt64
    /// When the worker read it.
    public var at: WireTimestamp
    public var stream: Stream
    public var text: [UInt8]
    /// The line goes on in the next line of the same stream (it was longer than a line's
    /// limit, or the attempt ended before its newline).
    public var partial: Bool
    /// A kind's line: `info`, `warning`, …; empty otherwise.
    public var level: String

    public init(
        sequence: UInt64, at: WireTimestamp, stream: Stream, text: [UInt8], partial: Bool = false, level: String = ""
    ) {
        self.sequence = sequence
        self.at = at
        self.stream = stream
        self.text = text
        self.partial = partial
        self.level = level
    }
}

/// An attempt's lines a worker sends (worker message kind 12).
public struct AttemptLogLines: Hashable, Sendable {
    public var ref: WireAttemptRef
    /// Oldest first, sequence numbers rising.
    public var lines: [LogLine]

    public init(ref: WireAttemptRef, lines: [LogLine]) {
        self.ref = ref
        self.lines = lines
    }
}

/// A request for a child's log (client request kind 13).
public struct LogsQuery: Hashable, Sendable {
    public var group: String
    /// The child's path, e.g. `tests/unit`.
    public var path: String
    /// The attempt; 0: the latest.
    public var attempt: UInt32
    /// Lines after this sequence number (0: from the first).
    public var after: UInt64
    /// Only lines before this sequence number (0: no bound): with ``tail``, the lines just
    /// before those a reader already has (a page of a big log loaded newest first).
    public var before: UInt64
    /// Only the last this many lines (0: every line after ``after``).
    public var tail: UInt32
    /// Only lines written at or after this time.
    public var since: WireTimestamp?
    /// At most this many lines in the reply (0: the coordinator's page).
    public var limit: UInt32

    public init(
        group: String, path: String, attempt: UInt32 = 0, after: UInt64 = 0, before: UInt64 = 0, tail: UInt32 = 0,
        since: WireTimestamp? = nil, limit: UInt32 = 0
    ) {
        self.group = group
        self.path = path
        self.attempt = attempt
        self.after = after
        self.before = before
        self.tail = tail
        self.since = since
        self.limit = limit
    }
}

/// The lines a ``LogsQuery`` selected, oldest first (reply kind 12).
public struct LogsPage: Hashable, Sendable {
    public var group: String
    public var path: String
    /// The attempt these lines are of; 0: none has started yet.
    public var attempt: UInt32
    /// The child's latest attempt sent to a worker; 0: none yet.
    public var latestAttempt: UInt32
    /// The child's state when the request was answered.
    public var state: ChildState
    /// This attempt has ended: every line it wrote is stored (a follower stops here).
    public var attemptFinished: Bool
    public var lines: [LogLine]
    /// The last sequence number stored for the attempt (0: none).
    public var lastSequence: UInt64
    /// Bytes cut from the middle of the attempt's log (its `maxLogBytes`).
    public var cutBytes: UInt64
    /// The worker that ran the attempt; empty if none did.
    public var worker: String
    /// More lines follow these already: ask again at once.
    public var more: Bool
    /// The child's failure or cancellation reason, once it finished.
    public var error: String?

    public init(
        group: String, path: String, attempt: UInt32, latestAttempt: UInt32, state: ChildState,
        attemptFinished: Bool, lines: [LogLine], lastSequence: UInt64, cutBytes: UInt64 = 0, worker: String = "",
        more: Bool = false, error: String? = nil
    ) {
        self.group = group
        self.path = path
        self.attempt = attempt
        self.latestAttempt = latestAttempt
        self.state = state
        self.attemptFinished = attemptFinished
        self.lines = lines
        self.lastSequence = lastSequence
        self.cutBytes = cutBytes
        self.worker = worker
        self.more = more
        self.error = error
    }
}
