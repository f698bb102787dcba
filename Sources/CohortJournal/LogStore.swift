import Foundation
import GRDB
import Synchronization

/// One stored line of an attempt's log (the store's own form of the wire's `LogLine`).
public struct StoredLogLine: Hashable, Sendable {
    public var sequence: UInt64
    /// Nanoseconds since the epoch, when the worker read it.
    public var at: Int64
    /// 1 stdout, 2 stderr, 3 a kind's line, 4 Cohort's marker.
    public var stream: UInt8
    public var text: [UInt8]
    public var partial: Bool
    public var level: String

    public init(sequence: UInt64, at: Int64, stream: UInt8, text: [UInt8], partial: Bool = false, level: String = "") {
        self.sequence = sequence
        self.at = at
        self.stream = stream
        self.text = text
        self.partial = partial
        self.level = level
    }

    /// The marker stream's number.
    public static let markerStream: UInt8 = 4
}

/// Which attempt's lines: the coordinator's attempt id, and the words a reader asks by.
public struct LogAttemptKey: Hashable, Sendable {
    public var attemptID: UInt64
    public var group: String
    public var path: String
    public var attempt: UInt32

    public init(attemptID: UInt64, group: String, path: String, attempt: UInt32) {
        self.attemptID = attemptID
        self.group = group
        self.path = path
        self.attempt = attempt
    }
}

/// What a read found: the attempt's lines the query selected, oldest first, and how much is
/// stored.
public struct LogRead: Sendable, Equatable {
    public var lines: [StoredLogLine]
    /// The last sequence number stored for the attempt (0: nothing is).
    public var lastSequence: UInt64
    /// Bytes cut from the middle of the log (over its bound).
    public var cutBytes: UInt64
    /// The worker that sent the lines; empty if none came.
    public var worker: String
    /// More lines are stored after these than the limit let through.
    public var more: Bool
    /// The attempt read (the latest stored when the read asked for attempt 0); 0: none.
    public var attempt: UInt32 = 0
    /// How the attempt ended (`succeeded`, `failed`, `cancelled`), once the store was told.
    public var outcome: String?
    /// Its failure's message or cancellation's reason.
    public var error: String?

    public static let empty = LogRead(lines: [], lastSequence: 0, cutBytes: 0, worker: "", more: false)
}

/// What children wrote, line by line (docs/operations.md, "Logs"): SQLite, in a file of its
/// own beside the journal (`logs.sqlite`), so that writing a 100 MB log never holds up the
/// journal's commits, or in memory for a coordinator without a state directory.
///
/// Bounded twice. Each attempt keeps at most `maxAttemptBytes` of line text: the first half
/// (the head) and the newest lines (the tail); lines between are deleted as new ones come,
/// and counted in ``LogRead/cutBytes`` (a reader shows a marker line where they were). The
/// whole store keeps at most `maxTotalBytes`: past it, whole attempts' logs go, the attempt
/// whose last line is oldest first.
///
/// Lines are written with `synchronous = NORMAL`: a stored line survives the coordinator's
/// crash or `kill -9` (not the machine's power loss, which the journal itself survives).
/// A line whose sequence number is not above the attempt's last stored one is a repeat (a
/// worker sends again what was not acknowledged when its connection broke) and is ignored.
///
/// Thread-safety: every method may be called from any thread; calls are serialised. The
/// coordinator calls them from its log thread only.
public final class LogStore: LogStoring {
    /// The file, or `:memory:`.
    public let location: String
    public let maxAttemptBytes: Int
    public let maxTotalBytes: Int
    private let database: DatabaseQueue
    /// The bytes of line text stored in all (kept here: summing per append would cost a scan).
    /// What the store holds and has done since it opened (``counts``); changed only once a
    /// write has committed.
    private let tally = Mutex(LogStoreCounts())

    /// The schema, created when the file is new.
    static let statements = [
        """
        CREATE TABLE IF NOT EXISTS log_attempts (
            attempt_id INTEGER PRIMARY KEY,
            group_id TEXT NOT NULL,
            path TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            worker TEXT NOT NULL DEFAULT '',
            last_sequence INTEGER NOT NULL DEFAULT 0,
            stored_bytes INTEGER NOT NULL DEFAULT 0,
            head_bytes INTEGER NOT NULL DEFAULT 0,
            head_end INTEGER,
            cut_bytes INTEGER NOT NULL DEFAULT 0,
            last_at INTEGER NOT NULL DEFAULT 0,
            outcome TEXT,
            error TEXT
        )
        """,
        "CREATE INDEX IF NOT EXISTS log_attempts_child ON log_attempts (group_id, path, attempt)",
        "CREATE INDEX IF NOT EXISTS log_attempts_age ON log_attempts (last_at)",
        """
        CREATE TABLE IF NOT EXISTS log_lines (
            attempt_id INTEGER NOT NULL,
            sequence INTEGER NOT NULL,
            at INTEGER NOT NULL,
            stream INTEGER NOT NULL,
            partial INTEGER NOT NULL,
            level TEXT NOT NULL,
            text BLOB NOT NULL,
            PRIMARY KEY (attempt_id, sequence)
        ) WITHOUT ROWID
        """,
    ]

    /// Opens (or creates) the store at `path`; nil: in memory.
    /// - Throws: ``JournalError`` `unusable` naming the file if SQLite cannot open it.
    public init(path: String?, maxAttemptBytes: Int, maxTotalBytes: Int) throws(JournalError) {
        self.location = path ?? ":memory:"
        self.maxAttemptBytes = max(maxAttemptBytes, 2)
        self.maxTotalBytes = max(maxTotalBytes, self.maxAttemptBytes)
        var configuration = Configuration()
        configuration.label = "cohort.logs"
        configuration.busyMode = .timeout(10)
        do {
            if let path {
                configuration.journalMode = .wal
                database = try DatabaseQueue(path: path, configuration: configuration)
            } else {
                database = try DatabaseQueue(configuration: configuration)
            }
            try database.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                for statement in Self.statements { try db.execute(sql: statement) }
            }
            let stored = try database.read { db in
                try Int64.fetchOne(db, sql: "SELECT coalesce(sum(stored_bytes), 0) FROM log_attempts") ?? 0
            }
            tally.withLock { $0.storedBytes = UInt64(max(stored, 0)) }
        } catch {
            throw JournalError(.unusable, path: location, "cannot open the log store: \(Journal.describe(error))")
        }
    }

    /// Stores an attempt's lines (sequence numbers rising); returns the attempt's last stored
    /// sequence number, which the worker is told.
    /// - Throws: ``JournalError`` `damaged` if SQLite refuses (disk full).
    @discardableResult
    public func append(_ key: LogAttemptKey, worker: String, lines: [StoredLogLine]) throws(JournalError) -> UInt64 {
        do {
            let change = try database.write { db in
                // Read inside the write: another append cannot come between.
                let stored = self.tally.withLock { $0.storedBytes }
                return try self.append(key, worker: worker, lines: lines, storedBefore: Int64(stored), in: db)
            }
            tally.withLock { counts in
                counts.storedBytes = UInt64(max(Int64(counts.storedBytes) + change.bytes, 0))
                counts.evictedBytes += change.evicted
                counts.evictedAttempts += change.evictedAttempts
                counts.cutBytes += change.cut
                counts.linesStored += change.lines
            }
            return change.last
        } catch {
            throw JournalError(.damaged, path: location, "cannot store log lines: \(Journal.describe(error))")
        }
    }

    /// What one committed append changed.
    private struct Change {
        var last: UInt64
        /// Bytes stored, less those cut and evicted.
        var bytes: Int64 = 0
        var lines: UInt64 = 0
        var cut: UInt64 = 0
        var evicted: UInt64 = 0
        var evictedAttempts: UInt64 = 0
    }

    private func append(
        _ key: LogAttemptKey, worker: String, lines: [StoredLogLine], storedBefore: Int64, in db: Database
    ) throws -> Change {
        let id = Int64(bitPattern: key.attemptID)
        try db.execute(
            sql: """
                INSERT INTO log_attempts (attempt_id, group_id, path, attempt, worker) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (attempt_id) DO UPDATE SET worker = excluded.worker
                """, arguments: [id, key.group, key.path, Int64(key.attempt), worker])
        guard
            let row = try Row.fetchOne(
                db,
                sql: "SELECT last_sequence, stored_bytes, head_bytes, head_end FROM log_attempts WHERE attempt_id = ?",
                arguments: [id])
        else { return Change(last: 0) }
        var last = UInt64(row[0] as Int64)
        var stored: Int64 = row[1]
        var head: Int64 = row[2]
        // The head's last sequence number, once the head is full (nil until then).
        var headEnd: Int64? = row[3]
        var lastAt: Int64 = 0
        let headLimit = Int64(maxAttemptBytes / 2)
        let insert = try db.cachedStatement(
            sql:
                "INSERT INTO log_lines (attempt_id, sequence, at, stream, partial, level, text) VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        var added: Int64 = 0
        var count: UInt64 = 0
        for line in lines where line.sequence > last {
            try insert.execute(arguments: [
                id, Int64(bitPattern: line.sequence), line.at, Int64(line.stream), line.partial ? 1 : 0, line.level,
                Data(line.text),
            ])
            let size = Int64(line.text.count)
            if headEnd == nil, head + size <= headLimit {
                head += size
            } else if headEnd == nil {
                headEnd = Int64(bitPattern: last)
            }
            stored += size
            added += size
            count += 1
            last = line.sequence
            lastAt = max(lastAt, line.at)
        }
        guard count > 0 else { return Change(last: last) }
        var cut: Int64 = 0
        if stored > Int64(maxAttemptBytes), let headEnd {
            // Delete the tail's oldest lines until the attempt fits again.
            let oldest = try Row.fetchCursor(
                db,
                sql:
                    "SELECT sequence, length(text) FROM log_lines WHERE attempt_id = ? AND sequence > ? ORDER BY sequence",
                arguments: [id, headEnd])
            var through: Int64?
            while stored - cut > Int64(maxAttemptBytes), let line = try oldest.next() {
                through = line[0]
                cut += line[1] as Int64
            }
            if let through {
                try db.execute(
                    sql: "DELETE FROM log_lines WHERE attempt_id = ? AND sequence > ? AND sequence <= ?",
                    arguments: [id, headEnd, through])
            }
        }
        try db.execute(
            sql: """
                UPDATE log_attempts SET last_sequence = ?, stored_bytes = ?, head_bytes = ?, head_end = ?,
                    cut_bytes = cut_bytes + ?, last_at = max(last_at, ?) WHERE attempt_id = ?
                """,
            arguments: [Int64(bitPattern: last), stored - cut, head, headEnd, cut, lastAt, id])
        var change = Change(last: last, bytes: added - cut, lines: count, cut: UInt64(cut))
        try evictOverTotal(sparing: id, total: storedBefore + added - cut, change: &change, in: db)
        return change
    }

    /// Past ``maxTotalBytes``: deletes whole attempts' logs, the oldest last line first (never
    /// the attempt just written, which its own bound keeps in check).
    private func evictOverTotal(sparing id: Int64, total: Int64, change: inout Change, in db: Database) throws {
        var total = total
        while total > Int64(maxTotalBytes) {
            guard
                let victim = try Row.fetchOne(
                    db,
                    sql:
                        "SELECT attempt_id, stored_bytes FROM log_attempts WHERE attempt_id != ? ORDER BY last_at LIMIT 1",
                    arguments: [id])
            else { return }
            let victimID: Int64 = victim[0]
            let bytes: Int64 = victim[1]
            try db.execute(sql: "DELETE FROM log_lines WHERE attempt_id = ?", arguments: [victimID])
            try db.execute(sql: "DELETE FROM log_attempts WHERE attempt_id = ?", arguments: [victimID])
            total -= bytes
            change.bytes -= bytes
            change.evicted += UInt64(max(bytes, 0))
            change.evictedAttempts += 1
        }
    }

    /// What the store holds, and what it has stored, cut and evicted since it opened.
    public var counts: LogStoreCounts { tally.withLock { $0 } }

    /// Records how an attempt with stored lines ended, for readers after the coordinator has
    /// forgotten its group (its `finishedGroupRetention`).
    public func ended(attemptID: UInt64, outcome: String, error: String?) throws(JournalError) {
        do {
            try database.write { db in
                try db.execute(
                    sql: "UPDATE log_attempts SET outcome = ?, error = ? WHERE attempt_id = ?",
                    arguments: [outcome, error, Int64(bitPattern: attemptID)])
            }
        } catch {
            throw JournalError(.damaged, path: location, "cannot store log lines: \(Journal.describe(error))")
        }
    }

    /// The bytes of line text stored in all.
    public var storedBytes: UInt64 { tally.withLock { $0.storedBytes } }

    /// The lines of attempt `attempt` of child `path` of `group` after sequence `after` (and,
    /// unless it is 0, before `before`), at most `limit`; with `tail`, only the last `tail` of
    /// them; with `since`, only lines written at or after it. Where lines were cut, a marker line (stream 4) stands before the first line
    /// after the cut, numbered one below it.
    ///
    /// Attempt 0 reads the latest attempt stored. A page holds at most `limit` lines and about
    /// `maxBytes` of text (at least one line).
    public func read(
        group: String, path: String, attempt: UInt32, after: UInt64, before: UInt64 = 0, tail: Int?, since: Int64?,
        limit: Int, maxBytes: Int = 4 << 20
    ) throws(JournalError) -> LogRead {
        do {
            return try database.read { db in
                let select =
                    "SELECT attempt_id, last_sequence, cut_bytes, head_end, worker, attempt, outcome, error FROM log_attempts"
                let found =
                    attempt == 0
                    ? try Row.fetchOne(
                        db, sql: select + " WHERE group_id = ? AND path = ? ORDER BY attempt DESC LIMIT 1",
                        arguments: [group, path])
                    : try Row.fetchOne(
                        db, sql: select + " WHERE group_id = ? AND path = ? AND attempt = ?",
                        arguments: [group, path, Int64(attempt)])
                guard let row = found else { return .empty }
                let id: Int64 = row[0]
                let headEnd: Int64? = row[3]
                let attemptRow = LogAttemptRow(
                    lastSequence: UInt64(row[1] as Int64), cutBytes: UInt64(row[2] as Int64),
                    headEnd: headEnd.map { UInt64(bitPattern: $0) }, worker: row[4],
                    attempt: UInt32(truncatingIfNeeded: row[5] as Int64), outcome: row[6], error: row[7])
                var conditions = "attempt_id = ? AND sequence > ?"
                var arguments: StatementArguments = [id, Int64(bitPattern: after)]
                if before > 0 {
                    conditions += " AND sequence < ?"
                    arguments += [Int64(bitPattern: before)]
                }
                if let since {
                    conditions += " AND at >= ?"
                    arguments += [since]
                }
                return try LogRead.assemble(attemptRow, after: after, before: before, tail: tail, limit: limit) {
                    descending, count in
                    try Self.lines(
                        db, where: conditions, arguments: arguments, order: descending ? "DESC" : "ASC", limit: count,
                        maxBytes: maxBytes)
                }
            }
        } catch {
            throw JournalError(.damaged, path: location, "cannot read the log store: \(Journal.describe(error))")
        }
    }

    private static func lines(
        _ db: Database, where conditions: String, arguments: StatementArguments, order: String, limit: Int,
        maxBytes: Int
    ) throws -> (lines: [StoredLogLine], stoppedAtBytes: Bool) {
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT sequence, at, stream, partial, level, text FROM log_lines WHERE \(conditions)
                ORDER BY sequence \(order) LIMIT ?
                """, arguments: arguments + [limit])
        var lines: [StoredLogLine] = []
        var bytes = 0
        while let row = try rows.next() {
            guard bytes < maxBytes else { return (lines, true) }
            let text: Data = row[5]
            lines.append(
                StoredLogLine(
                    sequence: UInt64(row[0] as Int64), at: row[1], stream: UInt8(truncatingIfNeeded: row[2] as Int64),
                    text: Array(text), partial: (row[3] as Int64) != 0, level: row[4]))
            bytes += text.count + 32
        }
        return (lines, false)
    }

    /// Deletes the logs of these groups (pruned from the journal).
    public func remove(groups: [String]) throws(JournalError) {
        guard !groups.isEmpty else { return }
        do {
            let stored = try database.write { db -> Int64 in
                for group in groups {
                    try db.execute(
                        sql:
                            "DELETE FROM log_lines WHERE attempt_id IN (SELECT attempt_id FROM log_attempts WHERE group_id = ?)",
                        arguments: [group])
                    try db.execute(sql: "DELETE FROM log_attempts WHERE group_id = ?", arguments: [group])
                }
                return try Int64.fetchOne(db, sql: "SELECT coalesce(sum(stored_bytes), 0) FROM log_attempts") ?? 0
            }
            tally.withLock { $0.storedBytes = UInt64(max(stored, 0)) }
        } catch {
            throw JournalError(.damaged, path: location, "cannot prune the log store: \(Journal.describe(error))")
        }
    }

    /// The groups the store has lines of.
    public func groups() throws(JournalError) -> [String] {
        do {
            return try database.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT group_id FROM log_attempts")
            }
        } catch {
            throw JournalError(.damaged, path: location, "cannot read the log store: \(Journal.describe(error))")
        }
    }

    /// Closes the file. Further calls throw.
    public func close() {
        try? database.close()
    }
}

/// A log store's figures (the coordinator's metrics): what it holds now, and what it has
/// done since it opened.
public struct LogStoreCounts: Sendable, Hashable {
    /// Bytes of line text stored now.
    public var storedBytes: UInt64 = 0
    /// Lines stored.
    public var linesStored: UInt64 = 0
    /// Bytes cut from the middle of attempts' logs (each attempt's `maxLogBytes`).
    public var cutBytes: UInt64 = 0
    /// Bytes of whole attempts' logs deleted to keep the store's total (`maxLogStoreBytes`).
    public var evictedBytes: UInt64 = 0
    /// Attempts whose logs were deleted to keep the total.
    public var evictedAttempts: UInt64 = 0

    public init() {}
}
