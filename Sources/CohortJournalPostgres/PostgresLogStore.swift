import CohortJournal
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The coordinator's log store in the journal's PostgreSQL database (docs/operations.md,
/// "Logs"): the same tables, bounds and repeats rule as SQLite's ``LogStore``, on a connection
/// of its own, so that writing a 100 MB log never waits on the journal's commits, and a
/// standby that takes over reads every line the old leader stored.
///
/// Appends are serialised across coordinators by the one row of `log_total` (taken `FOR
/// UPDATE`), which also holds the store's total: a deposed leader that writes a last batch
/// before it notices cannot break the bounds, and a repeat is still ignored.
///
/// Thread-safety: as ``LogStoring``.
public final class PostgresLogStore: LogStoring {
    let session: PostgresSession
    public let maxAttemptBytes: Int
    public let maxTotalBytes: Int
    /// Changed only once a write has committed; `storedBytes` is the database's total then.
    private let tally = Mutex(LogStoreCounts())

    public var location: String { session.url.description }
    public var counts: LogStoreCounts { tally.withLock { $0 } }
    public var storedBytes: UInt64 { tally.withLock { $0.storedBytes } }

    /// The tables, created if missing (they are not part of the journal's schema versions: a
    /// journal without them gets them at the first open).
    static let statements = [
        """
        CREATE TABLE IF NOT EXISTS log_attempts (
            attempt_id bigint PRIMARY KEY,
            group_id text COLLATE "C" NOT NULL,
            path text COLLATE "C" NOT NULL,
            attempt bigint NOT NULL,
            worker text NOT NULL DEFAULT '',
            last_sequence bigint NOT NULL DEFAULT 0,
            stored_bytes bigint NOT NULL DEFAULT 0,
            head_bytes bigint NOT NULL DEFAULT 0,
            head_end bigint,
            cut_bytes bigint NOT NULL DEFAULT 0,
            last_at bigint NOT NULL DEFAULT 0,
            outcome text,
            error text
        )
        """,
        "CREATE INDEX IF NOT EXISTS log_attempts_child ON log_attempts (group_id, path, attempt)",
        "CREATE INDEX IF NOT EXISTS log_attempts_age ON log_attempts (last_at)",
        """
        CREATE TABLE IF NOT EXISTS log_lines (
            attempt_id bigint NOT NULL,
            sequence bigint NOT NULL,
            at bigint NOT NULL,
            stream smallint NOT NULL,
            partial boolean NOT NULL,
            level text NOT NULL,
            text bytea NOT NULL,
            PRIMARY KEY (attempt_id, sequence)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS log_total (
            id boolean PRIMARY KEY DEFAULT true CHECK (id),
            stored_bytes bigint NOT NULL
        )
        """,
        "INSERT INTO log_total (stored_bytes) VALUES (0) ON CONFLICT DO NOTHING",
    ]

    /// Serialises the creation of the tables by coordinators starting at once.
    static let creationLock: Int64 = PostgresJournalSchema.openingLock + 1

    /// Connects and creates the tables if they are missing.
    /// - Throws: ``JournalError`` as ``PostgresJournal/init(url:opening:logger:)``.
    public init(
        url: PostgresConnectionURL, maxAttemptBytes: Int, maxTotalBytes: Int,
        logger: Logger = PostgresJournal.defaultLogger
    ) throws(JournalError) {
        self.maxAttemptBytes = max(maxAttemptBytes, 2)
        self.maxTotalBytes = max(maxTotalBytes, self.maxAttemptBytes)
        session = try PostgresSession(url, logger: logger)
        do {
            let stored = try session.transaction(doing: "cannot open the log store") { execute in
                _ = try execute("SELECT pg_advisory_xact_lock(\(Self.creationLock))")
                for statement in Self.statements { _ = try execute(PostgresQuery(unsafeSQL: statement)) }
                return try execute("SELECT stored_bytes FROM log_total").first?.decode(Int64.self) ?? 0
            }
            tally.withLock { $0.storedBytes = UInt64(max(stored, 0)) }
        } catch {
            session.close()
            throw error
        }
    }

    public func close() {
        session.close()
    }

    /// What one committed append changed.
    private struct Change {
        var last: UInt64
        var total: Int64 = 0
        var lines: UInt64 = 0
        var cut: UInt64 = 0
        var evicted: UInt64 = 0
        var evictedAttempts: UInt64 = 0
    }

    @discardableResult
    public func append(_ key: LogAttemptKey, worker: String, lines: [StoredLogLine]) throws(JournalError) -> UInt64 {
        let id = Int64(bitPattern: key.attemptID)
        let maxAttempt = Int64(maxAttemptBytes)
        let maxTotal = Int64(maxTotalBytes)
        let change = try session.transaction(doing: "cannot store log lines") { execute -> Change in
            var total = try execute("SELECT stored_bytes FROM log_total FOR UPDATE").first?.decode(Int64.self) ?? 0
            var binds = PostgresBindings()
            binds.append(id)
            binds.append(key.group)
            binds.append(key.path)
            binds.append(Int64(key.attempt))
            binds.append(worker)
            guard
                let row = try execute(
                    PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO log_attempts (attempt_id, group_id, path, attempt, worker) VALUES ($1, $2, $3, $4, $5)
                            ON CONFLICT (attempt_id) DO UPDATE SET worker = excluded.worker
                            RETURNING last_sequence, stored_bytes, head_bytes, head_end
                            """, binds: binds)
                ).first
            else { return Change(last: 0) }
            let (lastStored, storedBefore, headBefore, headEndBefore) = try row.decode(
                (Int64, Int64, Int64, Int64?).self)
            var last = UInt64(bitPattern: lastStored)
            var stored = storedBefore
            var head = headBefore
            var headEnd = headEndBefore
            var lastAt: Int64 = 0
            var added: Int64 = 0
            var count: UInt64 = 0
            var statement = RowsStatement()
            func flush() throws {
                guard statement.rows > 0 else { return }
                _ = try execute(
                    statement.query(
                        "INSERT INTO log_lines (attempt_id, sequence, at, stream, partial, level, text) VALUES"))
                statement = RowsStatement()
            }
            for line in lines where line.sequence > last {
                statement.row("(?, ?, ?, ?, ?, ?, ?)") { binds in
                    binds.append(id)
                    binds.append(Int64(bitPattern: line.sequence))
                    binds.append(line.at)
                    binds.append(Int16(line.stream))
                    binds.append(line.partial)
                    binds.append(line.level)
                    binds.append(ByteBuffer(bytes: line.text))
                }
                if statement.rows == RowsStatement.maxRows { try flush() }
                let size = Int64(line.text.count)
                if headEnd == nil, head + size <= maxAttempt / 2 {
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
            try flush()
            guard count > 0 else { return Change(last: last) }
            var cut: Int64 = 0
            if stored > maxAttempt, let headEnd {
                // Delete the tail's oldest lines until the attempt fits again.
                var through: Int64?
                let oldest = try execute(
                    """
                    SELECT sequence, length(text)::bigint FROM log_lines
                    WHERE attempt_id = \(id) AND sequence > \(headEnd) ORDER BY sequence
                    """)
                for line in oldest where stored - cut > maxAttempt {
                    let (sequence, size) = try line.decode((Int64, Int64).self)
                    through = sequence
                    cut += size
                }
                if let through {
                    _ = try execute(
                        """
                        DELETE FROM log_lines WHERE attempt_id = \(id) AND sequence > \(headEnd) AND sequence <= \(through)
                        """)
                }
            }
            var update = PostgresBindings()
            update.append(Int64(bitPattern: last))
            update.append(stored - cut)
            update.append(head)
            update.append(headEnd)
            update.append(cut)
            update.append(lastAt)
            update.append(id)
            _ = try execute(
                PostgresQuery(
                    unsafeSQL: """
                        UPDATE log_attempts SET last_sequence = $1, stored_bytes = $2, head_bytes = $3, head_end = $4,
                            cut_bytes = cut_bytes + $5, last_at = greatest(last_at, $6) WHERE attempt_id = $7
                        """, binds: update))
            total += added - cut
            var change = Change(last: last, lines: count, cut: UInt64(cut))
            // Past the total: whole attempts go, the one whose last line is oldest first (never
            // the one just written, which its own bound keeps in check).
            while total > maxTotal {
                guard
                    let victim = try execute(
                        "SELECT attempt_id, stored_bytes FROM log_attempts WHERE attempt_id <> \(id) ORDER BY last_at LIMIT 1"
                    ).first
                else { break }
                let (victimID, bytes) = try victim.decode((Int64, Int64).self)
                _ = try execute("DELETE FROM log_lines WHERE attempt_id = \(victimID)")
                _ = try execute("DELETE FROM log_attempts WHERE attempt_id = \(victimID)")
                total -= bytes
                change.evicted += UInt64(max(bytes, 0))
                change.evictedAttempts += 1
            }
            _ = try execute("UPDATE log_total SET stored_bytes = \(total)")
            change.total = total
            return change
        }
        tally.withLock { counts in
            if change.lines > 0 { counts.storedBytes = UInt64(max(change.total, 0)) }
            counts.linesStored += change.lines
            counts.cutBytes += change.cut
            counts.evictedBytes += change.evicted
            counts.evictedAttempts += change.evictedAttempts
        }
        return change.last
    }

    public func ended(attemptID: UInt64, outcome: String, error: String?) throws(JournalError) {
        var binds = PostgresBindings()
        binds.append(outcome)
        binds.append(error)
        binds.append(Int64(bitPattern: attemptID))
        _ = try session.run(
            PostgresQuery(
                unsafeSQL: "UPDATE log_attempts SET outcome = $1, error = $2 WHERE attempt_id = $3", binds: binds),
            doing: "cannot store how an attempt ended")
    }

    public func read(
        group: String, path: String, attempt: UInt32, after: UInt64, before: UInt64, tail: Int?, since: Int64?,
        limit: Int, maxBytes: Int
    ) throws(JournalError) -> LogRead {
        try session.transaction(doing: "cannot read the log store") { execute -> LogRead in
            var binds = PostgresBindings()
            binds.append(group)
            binds.append(path)
            var select = """
                SELECT attempt_id, last_sequence, cut_bytes, head_end, worker, attempt, outcome, error FROM log_attempts
                WHERE group_id = $1 AND path = $2
                """
            if attempt == 0 {
                select += " ORDER BY attempt DESC LIMIT 1"
            } else {
                binds.append(Int64(attempt))
                select += " AND attempt = $3"
            }
            guard let found = try execute(PostgresQuery(unsafeSQL: select, binds: binds)).first else { return .empty }
            let (id, last, cut, headEnd, worker, number, outcome, error) = try found.decode(
                (Int64, Int64, Int64, Int64?, String, Int64, String?, String?).self)
            let row = LogAttemptRow(
                lastSequence: UInt64(bitPattern: last), cutBytes: UInt64(max(cut, 0)),
                headEnd: headEnd.map { UInt64(bitPattern: $0) }, worker: worker,
                attempt: UInt32(truncatingIfNeeded: number), outcome: outcome, error: error)
            var conditions = "attempt_id = \(id) AND sequence > \(Int64(bitPattern: after))"
            if before > 0 { conditions += " AND sequence < \(Int64(bitPattern: before))" }
            if let since { conditions += " AND at >= \(since)" }
            return try LogRead.assemble(row, after: after, before: before, tail: tail, limit: limit) {
                descending, count in
                let rows = try execute(
                    PostgresQuery(
                        unsafeSQL: """
                            SELECT sequence, at, stream, partial, level, text FROM log_lines WHERE \(conditions)
                            ORDER BY sequence \(descending ? "DESC" : "ASC") LIMIT \(count)
                            """))
                var lines: [StoredLogLine] = []
                var bytes = 0
                for line in rows {
                    guard bytes < maxBytes else { return (lines, true) }
                    let (sequence, at, stream, partial, level, text) = try line.decode(
                        (Int64, Int64, Int16, Bool, String, ByteBuffer).self)
                    lines.append(
                        StoredLogLine(
                            sequence: UInt64(bitPattern: sequence), at: at, stream: UInt8(truncatingIfNeeded: stream),
                            text: Array(buffer: text), partial: partial, level: level))
                    bytes += text.readableBytes + 32
                }
                return (lines, false)
            }
        }
    }

    public func remove(groups: [String]) throws(JournalError) {
        guard !groups.isEmpty else { return }
        let total = try session.transaction(doing: "cannot prune the log store") { execute -> Int64 in
            _ = try execute("SELECT stored_bytes FROM log_total FOR UPDATE")
            for group in groups {
                var binds = PostgresBindings()
                binds.append(group)
                _ = try execute(
                    PostgresQuery(
                        unsafeSQL:
                            "DELETE FROM log_lines WHERE attempt_id IN (SELECT attempt_id FROM log_attempts WHERE group_id = $1)",
                        binds: binds))
                _ = try execute(PostgresQuery(unsafeSQL: "DELETE FROM log_attempts WHERE group_id = $1", binds: binds))
            }
            let stored =
                try execute("SELECT coalesce(sum(stored_bytes), 0)::bigint FROM log_attempts").first?.decode(
                    Int64.self) ?? 0
            _ = try execute("UPDATE log_total SET stored_bytes = \(stored)")
            return stored
        }
        tally.withLock { $0.storedBytes = UInt64(max(total, 0)) }
    }

    public func groups() throws(JournalError) -> [String] {
        let rows = try session.run(
            "SELECT DISTINCT group_id FROM log_attempts ORDER BY group_id", doing: "cannot read the log store")
        do {
            return try rows.map { try $0.decode(String.self) }
        } catch {
            throw JournalError(.damaged, path: location, "cannot read the log store: \(error)")
        }
    }
}
