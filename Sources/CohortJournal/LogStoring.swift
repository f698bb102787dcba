/// Where the coordinator's log store lives, behind one protocol (docs/operations.md, "Logs"):
/// ``LogStore`` (SQLite, `logs.sqlite` in the state directory, or in memory) and
/// `PostgresLogStore` (module CohortJournalPostgres: the journal's database, so that a
/// standby that takes over has every line the old leader stored).
///
/// Every store keeps the same bounds (``maxAttemptBytes`` per attempt, head and tail with a
/// marker between; ``maxTotalBytes`` in all, whole attempts evicted oldest first) and ignores
/// a line whose sequence number is not above its attempt's last stored one (a repeat).
///
/// Thread-safety: every method may be called from any thread but a NIO event loop's; calls
/// block until the store answered. ``counts`` and ``storedBytes`` do not touch the database.
public protocol LogStoring: AnyObject, Sendable {
    /// Where the store is, for messages: a file, `:memory:`, or a URL without its password.
    var location: String { get }
    var maxAttemptBytes: Int { get }
    var maxTotalBytes: Int { get }
    /// What the store holds, and what it has stored, cut and evicted since it opened.
    var counts: LogStoreCounts { get }
    /// Bytes of line text stored in all.
    var storedBytes: UInt64 { get }
    /// Stores an attempt's lines (sequence numbers rising); returns the attempt's last stored
    /// sequence number, which the worker is told.
    @discardableResult
    func append(_ key: LogAttemptKey, worker: String, lines: [StoredLogLine]) throws(JournalError) -> UInt64
    /// Records how an attempt with stored lines ended.
    func ended(attemptID: UInt64, outcome: String, error: String?) throws(JournalError)
    /// The lines of attempt `attempt` (0: the latest stored) of child `path` of `group` after
    /// sequence `after` (and, unless it is 0, before `before`), at most `limit` and about
    /// `maxBytes` of text; with `tail`, only the last `tail` of them; with `since`, only lines
    /// written at or after it; a marker line where lines were cut.
    func read(
        group: String, path: String, attempt: UInt32, after: UInt64, before: UInt64, tail: Int?, since: Int64?,
        limit: Int, maxBytes: Int
    ) throws(JournalError) -> LogRead
    /// Deletes the logs of these groups (pruned from the journal).
    func remove(groups: [String]) throws(JournalError)
    /// The groups the store has lines of.
    func groups() throws(JournalError) -> [String]
    func close()
}

extension LogStoring {
    /// ``read(group:path:attempt:after:before:tail:since:limit:maxBytes:)`` with no upper
    /// sequence bound and a page of about 4 MiB.
    public func read(
        group: String, path: String, attempt: UInt32, after: UInt64, before: UInt64 = 0, tail: Int?, since: Int64?,
        limit: Int
    ) throws(JournalError) -> LogRead {
        try read(
            group: group, path: path, attempt: attempt, after: after, before: before, tail: tail, since: since,
            limit: limit, maxBytes: 4 << 20)
    }
}

/// An attempt's row of a log store, as a read finds it.
public struct LogAttemptRow: Sendable {
    public var lastSequence: UInt64
    public var cutBytes: UInt64
    /// The head's last sequence number, once the head is full.
    public var headEnd: UInt64?
    public var worker: String
    public var attempt: UInt32
    public var outcome: String?
    public var error: String?

    public init(
        lastSequence: UInt64, cutBytes: UInt64, headEnd: UInt64?, worker: String, attempt: UInt32, outcome: String?,
        error: String?
    ) {
        self.lastSequence = lastSequence
        self.cutBytes = cutBytes
        self.headEnd = headEnd
        self.worker = worker
        self.attempt = attempt
        self.outcome = outcome
        self.error = error
    }
}

extension LogRead {
    /// A read's page from an attempt's row and its lines, the same for every store: `fetch`
    /// gets the lines the query's conditions select, newest first (`descending`) or oldest
    /// first, at most `limit` of them and about `maxBytes` of text, and whether it stopped
    /// for the bytes with lines left. ``LogRead/more`` is for reading forward: whether more
    /// lines follow this page.
    public static func assemble(
        _ row: LogAttemptRow, after: UInt64, before: UInt64, tail: Int?, limit: Int,
        fetch: (_ descending: Bool, _ limit: Int) throws -> (lines: [StoredLogLine], stoppedAtBytes: Bool)
    ) rethrows -> LogRead {
        var lines: [StoredLogLine]
        var more = false
        let last = row.lastSequence
        if let tail {
            lines = try fetch(true, min(tail, limit)).lines
            lines.reverse()
        } else {
            let found = try fetch(false, limit + 1)
            lines = found.lines
            if lines.count > limit {
                lines.removeLast()
                more = true
            }
            // A page cut short by its bytes: more follow.
            if found.stoppedAtBytes { more = true }
        }
        // A marker where the lines the reader gets skip a cut: right after the head, or after
        // the last line it had (a follower whose next lines were cut meanwhile).
        let headEnd = row.headEnd ?? UInt64(Int64.max)
        // (A page read backwards, `before`, that starts right after the cut gets it first.)
        if row.cutBytes > 0, let index = lines.firstIndex(where: { $0.sequence > headEnd }),
            index > 0 || tail == nil || before > 0,
            lines[index].sequence > max(index > 0 ? lines[index - 1].sequence : after, headEnd) + 1
        {
            let first = lines[index]
            let marker = StoredLogLine(
                sequence: first.sequence - 1, at: first.at, stream: StoredLogLine.markerStream,
                text: Array(
                    "[cohort: \(row.cutBytes) bytes cut from the middle of this log: it was over maxLogBytes]".utf8))
            lines.insert(marker, at: index)
        }
        return LogRead(
            lines: lines, lastSequence: last, cutBytes: row.cutBytes, worker: row.worker, more: more,
            attempt: row.attempt, outcome: row.outcome, error: row.error)
    }
}
