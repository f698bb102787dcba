import CohortCore
import CohortJournal
import CohortSpec
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The coordinator's journal in PostgreSQL (`cohort coordinator --journal postgres://…`): the
/// same tables and guarantees as the SQLite ``Journal`` (docs/operations.md, "The journal"),
/// through postgres-nio.
///
/// Each ``write(_:)`` is one transaction holding every record of the turns given, one
/// multi-row statement per kind of record (groups, dispatched attempts, finished attempts,
/// outcomes, cancels, children added to running groups, local locks, fencing counters): a turn costs a handful of round trips
/// whatever its size. Opening creates or migrates the schema (``PostgresJournalSchema``,
/// its own versions) and increments the epoch, under an advisory lock so that two openings do
/// not race.
///
/// Opened for serving (``Opening/serving``), one store per database: nothing stops a second
/// one (`CohortCoordinator` never opens PostgreSQL so: it opens it for leadership, standby or
/// not, and holds the lease while it serves). Opened for leadership (``Opening/leadership``), several stores share the
/// database and the one that holds the leader lease writes: ``acquireLease(holder:ttl:)``
/// takes it with a new epoch, ``renewLease(epoch:holder:ttl:)`` keeps it, and every
/// ``write(_:)`` and ``prune(finishedBefore:)`` first checks, in its own transaction, that the
/// lease still has this store's epoch and holder, failing `deposed` and committing nothing if
/// another store has taken it since (PostgresJournal+Lease.swift).
///
/// Thread-safety: every method may be called from any thread but a NIO event loop's; calls are
/// serialised (a transaction as a whole). They block their caller until PostgreSQL answered.
public final class PostgresJournal: JournalStore {
    /// How a store is opened.
    public enum Opening: Sendable {
        /// For a coordinator's start: creates or migrates the schema, increments the epoch.
        case serving
        /// For maintenance (`cohort prune`): refuses a database without a journal, leaves the
        /// epoch as it is.
        case maintenance
        /// For one of several coordinators on the database: creates or migrates the schema
        /// and leaves the epoch to ``PostgresJournal/acquireLease(holder:ttl:)``; writes and
        /// prunes need the lease.
        case leadership
    }

    public let url: PostgresConnectionURL
    public let opening: Opening
    let session: PostgresSession
    /// The epoch, and for a store opened for leadership the lease it holds (nil before it
    /// acquired one).
    let state: Mutex<(epoch: UInt64, lease: HeldLease?)>
    /// The lease's length, once acquired: how long a write's transaction may stay idle
    /// (``checkLease(_:_:)``).
    let leaseLength = Mutex<Duration>(.zero)

    /// This incarnation's epoch: for a store opened for leadership, the epoch of the lease it
    /// acquired last (the journal's epoch when opened, before).
    public var epoch: UInt64 { state.withLock { $0.epoch } }

    public var location: String { url.description }

    /// The logger postgres-nio logs into: its own messages are debugging detail.
    public static var defaultLogger: Logger {
        var logger = Logger(label: "cohort.journal.postgres")
        logger.logLevel = .error
        return logger
    }

    /// Opens the journal in the database `url` names, creating its tables if there are none and
    /// migrating older ones, and increments its epoch (``epoch``) when opened for serving
    /// (``Opening``).
    ///
    /// - Throws: ``JournalError`` `unreachable` (exit 69) naming the host and port and the
    ///   error, `denied` (77) for refused credentials, `schemaVersion` (65) for a journal of
    ///   another version, `unusable` for maintenance on a database without a journal.
    public init(
        url: PostgresConnectionURL, opening: Opening = .serving, logger: Logger = PostgresJournal.defaultLogger
    ) throws(JournalError) {
        self.url = url
        self.opening = opening
        let session = try PostgresSession(url, logger: logger)
        do {
            state = Mutex((try Self.prepare(session, opening: opening), nil))
        } catch {
            session.close()
            throw error
        }
        self.session = session
    }

    /// The opener ``CohortCoordinator``'s configuration takes (`journalStore`).
    /// - Throws: ``JournalError`` `badLocation` for a URL that cannot be used.
    public static func opener(url text: String) throws(JournalError) -> JournalStoreOpener {
        let url = try PostgresConnectionURL(text)
        return JournalStoreOpener(
            location: url.description,
            open: { () throws(JournalError) -> any JournalStore in try PostgresJournal(url: url) },
            openExisting: { () throws(JournalError) -> any JournalStore in
                try PostgresJournal(url: url, opening: .maintenance)
            },
            openForLeadership: { () throws(JournalError) -> any LeaseJournalStore in
                try PostgresJournal(url: url, opening: .leadership)
            },
            openLogs: { (attemptBytes, totalBytes) throws(JournalError) -> any LogStoring in
                try PostgresLogStore(url: url, maxAttemptBytes: attemptBytes, maxTotalBytes: totalBytes)
            })
    }

    /// Creates or migrates the schema and returns the epoch, in one transaction.
    private static func prepare(_ session: PostgresSession, opening: Opening) throws(JournalError) -> UInt64 {
        let location = session.url.description
        return try session.transaction(doing: "cannot open the journal") { execute in
            // Serialises openings (two coordinators starting at once create the tables once).
            _ = try execute("SELECT pg_advisory_xact_lock(\(PostgresJournalSchema.openingLock))")
            let exists = try execute("SELECT to_regclass('meta') IS NOT NULL").first?.decode(Bool.self) ?? false
            if !exists {
                guard opening != .maintenance else {
                    throw JournalError(.unusable, path: location, "there is no journal in this database")
                }
                for statement in PostgresJournalSchema.statements {
                    _ = try execute(PostgresQuery(unsafeSQL: statement))
                }
                let now = String(Int64(Date().timeIntervalSince1970 * 1e9))
                let version = String(PostgresJournalSchema.version)
                _ = try execute(
                    "INSERT INTO meta (key, value) VALUES ('schemaVersion', \(version)), ('epoch', '0'), ('createdAt', \(now))"
                )
            }
            let text = try execute("SELECT value FROM meta WHERE key = 'schemaVersion'").first?.decode(String.self)
            var version = text.flatMap { Int($0) }
            while let current = version, current != PostgresJournalSchema.version,
                let steps = PostgresJournalSchema.migrations[current]
            {
                for statement in steps { _ = try execute(PostgresQuery(unsafeSQL: statement)) }
                version = current + 1
                _ = try execute("UPDATE meta SET value = \(String(current + 1)) WHERE key = 'schemaVersion'")
            }
            guard version == PostgresJournalSchema.version else {
                let migrated = PostgresJournalSchema.migrations.keys.sorted().map(String.init).joined(separator: ", ")
                throw JournalError(
                    .schemaVersion, path: location,
                    "the journal has schema version \(text ?? "none"); this coordinator reads PostgreSQL schema version "
                        + "\(PostgresJournalSchema.version)"
                        + (migrated.isEmpty ? "" : " and migrates version \(migrated)"))
            }
            let epochText = try execute("SELECT value FROM meta WHERE key = 'epoch'").first?.decode(String.self)
            guard let last = epochText.flatMap({ UInt64($0) })
            else { throw JournalError(.damaged, path: location, "the journal has no epoch") }
            guard opening == .serving else { return last }
            _ = try execute("UPDATE meta SET value = \(String(last + 1)) WHERE key = 'epoch'")
            return last + 1
        }
    }

    public func close() {
        session.close()
    }

    public func openReader() throws(JournalError) -> any JournalStoreReader {
        try PostgresJournalReader(url: url)
    }

    // MARK: Writing

    public func write(_ batches: [JournalBatch]) throws(JournalError) {
        guard batches.contains(where: { !$0.isEmpty }) else { return }
        let statements: [PostgresQuery]
        do {
            statements = try Self.statements(batches)
        } catch {
            throw JournalError(.damaged, path: location, "cannot encode a journal record: \(error)")
        }
        let lease = try leaseToCheck()
        try session.transaction(doing: "cannot write the journal", answerTimeout: leaseAnswerTimeout) { execute in
            if let lease { try checkLease(lease, execute) }
            for statement in statements { _ = try execute(statement) }
        }
    }

    /// The statements that write `batches`, merged: the latest record of each attempt, group
    /// outcome and local grant, every submission and cancel in order, the largest token of
    /// each category. The same end state as writing the batches one by one (records of one
    /// attempt come in order: dispatched, then finished; a later attempt supersedes earlier
    /// ones), in one statement per kind.
    static func statements(_ batches: [JournalBatch]) throws -> [PostgresQuery] {
        var queries: [PostgresQuery] = []
        var submissions = RowsStatement()
        var dispatches: [AttemptKey: ChildRecord] = [:]
        var dispatchOrder: [AttemptKey] = []
        var finishes: [AttemptKey: ChildRecord] = [:]
        var finishOrder: [AttemptKey] = []
        var outcomes: [String: (phase: GroupPhase, reason: String?, code: CancellationReason.Code?, at: Timestamp)] =
            [:]
        var outcomeOrder: [String] = []
        var cancels = RowsStatement()
        var additions = RowsStatement()
        var locks: [LockKey: LocalLockRecord?] = [:]
        var lockOrder: [LockKey] = []
        var fencing: [String: UInt64] = [:]

        func flush(_ statement: inout RowsStatement, _ prefix: String, _ suffix: String = "") {
            guard statement.rows > 0 else { return }
            queries.append(statement.query(prefix, suffix))
            statement = RowsStatement()
        }
        let insertGroups = "INSERT INTO groups (id, name, spec, fingerprint, submitted_at, state, owner) VALUES"
        let insertCancels = "INSERT INTO cancels (group_id, path, reason, code, at) VALUES"
        let insertAdditions = "INSERT INTO additions (group_id, into_path, children, at) VALUES"
        for batch in batches {
            for submission in batch.submissions {
                let text = submission.spec.specText(pretty: false)
                submissions.row("(?, ?, ?, ?, ?, 'pending', ?)") { binds in
                    binds.append(submission.id)
                    binds.append(submission.spec.name)
                    binds.append(text)
                    binds.append(Journal.fingerprint(text))
                    binds.append(submission.submittedAt.nanosecondsSinceEpoch)
                    binds.append(submission.owner)
                }
                if submissions.rows == RowsStatement.maxRows { flush(&submissions, insertGroups) }
            }
            for record in batch.dispatches {
                let key = AttemptKey(record)
                if dispatches.updateValue(record, forKey: key) == nil { dispatchOrder.append(key) }
            }
            for record in batch.finishes {
                guard case .finished = record.state else { continue }
                let key = AttemptKey(record)
                if finishes.updateValue(record, forKey: key) == nil { finishOrder.append(key) }
            }
            for outcome in batch.outcomes {
                if outcomes.updateValue((outcome.phase, outcome.reason, outcome.code, outcome.at), forKey: outcome.id)
                    == nil
                {
                    outcomeOrder.append(outcome.id)
                }
            }
            for cancel in batch.cancels {
                cancels.row("(?, ?, ?, ?, ?)") { binds in
                    binds.append(cancel.group)
                    binds.append(cancel.path)
                    binds.append(cancel.reason.text)
                    binds.append(cancel.reason.code.rawValue)
                    binds.append(cancel.at.nanosecondsSinceEpoch)
                }
                if cancels.rows == RowsStatement.maxRows { flush(&cancels, insertCancels) }
            }
            for addition in batch.additions {
                let children = JSONValue.array(addition.children.map(\.specJSON)).jsonString()
                additions.row("(?, ?, ?, ?)") { binds in
                    binds.append(addition.group)
                    binds.append(addition.into)
                    binds.append(children)
                    binds.append(addition.at.nanosecondsSinceEpoch)
                }
                if additions.rows == RowsStatement.maxRows { flush(&additions, insertAdditions) }
            }
            for change in batch.localLocks {
                let key: LockKey
                let value: LocalLockRecord?
                switch change {
                case .granted(let record): (key, value) = (LockKey(record.attemptID.rawValue, record.request), record)
                case .released(let attemptID, let request): (key, value) = (LockKey(attemptID.rawValue, request), nil)
                }
                if locks.updateValue(value, forKey: key) == nil { lockOrder.append(key) }
            }
            for (category, token) in batch.fencing where token > fencing[category] ?? 0 {
                fencing[category] = token
            }
        }
        flush(&submissions, insertGroups)

        var statement = RowsStatement()
        var superseding = RowsStatement()
        let insertDispatches = """
            INSERT INTO attempts (group_id, path, attempt, attempt_id, state, worker, tokens, started_at, losses, counted)
            VALUES
            """
        let replaceDispatched = """
            ON CONFLICT (group_id, path, attempt) DO UPDATE SET attempt_id = excluded.attempt_id, state = excluded.state,
                worker = excluded.worker, tokens = excluded.tokens, started_at = excluded.started_at,
                losses = excluded.losses, counted = excluded.counted, output = NULL, error = NULL, finished_at = NULL,
                output_truncated = false, cancel_code = NULL, cancel_reason = NULL
            """
        let supersede = "UPDATE attempts AS a SET state = 'ended' FROM (VALUES"
        let supersedeWhere = """
            ) AS d (group_id, path, attempt)
            WHERE a.group_id = d.group_id AND a.path = d.path AND a.attempt < d.attempt AND a.state = 'in-flight'
            """
        for key in dispatchOrder {
            let record = dispatches[key]!
            statement.row("(?, ?, ?, ?, 'in-flight', ?, ?, ?, ?, ?)") { binds in
                binds.append(record.group)
                binds.append(record.path)
                binds.append(Int64(record.attempt))
                binds.append(Int64(bitPattern: record.attemptID.rawValue))
                binds.append(record.worker)
                binds.append(Journal.tokensText(record.tokens))
                binds.append(record.startedAt?.nanosecondsSinceEpoch)
                binds.append(Int64(record.losses))
                binds.append(record.counted.map(Int64.init))
            }
            if record.attempt > 1 {
                superseding.row("(?::text, ?::text, ?::bigint)") { binds in
                    binds.append(record.group)
                    binds.append(record.path)
                    binds.append(Int64(record.attempt))
                }
            }
            if statement.rows == RowsStatement.maxRows || superseding.rows == RowsStatement.maxRows {
                flush(&statement, insertDispatches, replaceDispatched)
                flush(&superseding, supersede, supersedeWhere)
            }
        }
        flush(&statement, insertDispatches, replaceDispatched)
        flush(&superseding, supersede, supersedeWhere)

        let insertFinishes = """
            INSERT INTO attempts (group_id, path, attempt, attempt_id, state, worker, output, error, started_at, finished_at,
                output_truncated, cancel_code, cancel_reason)
            VALUES
            """
        let mergeFinished = """
            ON CONFLICT (group_id, path, attempt) DO UPDATE SET
                state = excluded.state, worker = coalesce(excluded.worker, attempts.worker), output = excluded.output,
                error = excluded.error, started_at = coalesce(excluded.started_at, attempts.started_at),
                finished_at = excluded.finished_at, output_truncated = excluded.output_truncated,
                cancel_code = excluded.cancel_code, cancel_reason = excluded.cancel_reason
            """
        for key in finishOrder {
            let record = finishes[key]!
            guard case .finished(let phase) = record.state else { continue }
            try statement.row("(?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)") { binds in
                binds.append(record.group)
                binds.append(record.path)
                binds.append(Int64(record.attempt))
                binds.append(phase.rawValue)
                binds.append(record.worker)
                try binds.append(record.output)
                binds.append(record.error)
                binds.append(record.startedAt?.nanosecondsSinceEpoch)
                binds.append(record.finishedAt?.nanosecondsSinceEpoch)
                binds.append(record.outputTruncated)
                binds.append(record.cancelReason?.code.rawValue)
                binds.append(record.cancelReason?.text)
            }
            if statement.rows == RowsStatement.maxRows { flush(&statement, insertFinishes, mergeFinished) }
        }
        flush(&statement, insertFinishes, mergeFinished)

        let updateOutcomes =
            "UPDATE groups AS g SET state = o.state, reason = o.reason, reason_code = o.code, finished_at = o.at FROM (VALUES"
        let outcomesWhere = ") AS o (id, state, reason, code, at) WHERE g.id = o.id"
        for id in outcomeOrder {
            let outcome = outcomes[id]!
            statement.row("(?::text, ?::text, ?::text, ?::text, ?::bigint)") { binds in
                binds.append(id)
                binds.append(outcome.phase.rawValue)
                binds.append(outcome.reason)
                binds.append(outcome.code?.rawValue)
                binds.append(outcome.at.nanosecondsSinceEpoch)
            }
            if statement.rows == RowsStatement.maxRows { flush(&statement, updateOutcomes, outcomesWhere) }
        }
        flush(&statement, updateOutcomes, outcomesWhere)
        flush(&cancels, insertCancels)
        flush(&additions, insertAdditions)

        let deleteLocks = "DELETE FROM local_locks WHERE (attempt_id, request) IN (VALUES"
        var granted = RowsStatement()
        let insertLocks = "INSERT INTO local_locks (attempt_id, request, group_id, path, attempt, tokens) VALUES"
        let replaceLock = """
            ON CONFLICT (attempt_id, request) DO UPDATE SET group_id = excluded.group_id, path = excluded.path,
                attempt = excluded.attempt, tokens = excluded.tokens
            """
        for key in lockOrder {
            if case .some(.some(let record)) = locks[key] {
                granted.row("(?, ?, ?, ?, ?, ?)") { binds in
                    binds.append(Int64(bitPattern: record.attemptID.rawValue))
                    binds.append(Int64(bitPattern: record.request))
                    binds.append(record.group)
                    binds.append(record.path)
                    binds.append(Int64(record.attempt))
                    binds.append(Journal.tokensText(record.tokens) ?? "{}")
                }
            } else {
                statement.row("(?::bigint, ?::bigint)") { binds in
                    binds.append(Int64(bitPattern: key.attemptID))
                    binds.append(Int64(bitPattern: key.request))
                }
            }
            if statement.rows == RowsStatement.maxRows { flush(&statement, deleteLocks, ")") }
            if granted.rows == RowsStatement.maxRows { flush(&granted, insertLocks, replaceLock) }
        }
        flush(&statement, deleteLocks, ")")
        flush(&granted, insertLocks, replaceLock)

        for (category, token) in fencing.sorted(by: { $0.key < $1.key }) {
            statement.row("(?, ?)") { binds in
                binds.append(category)
                binds.append(Int64(bitPattern: token))
            }
        }
        flush(
            &statement, "INSERT INTO fencing (category, last_token) VALUES",
            "ON CONFLICT (category) DO UPDATE SET last_token = greatest(fencing.last_token, excluded.last_token)")
        return queries
    }

    private struct AttemptKey: Hashable {
        var group: String
        var path: String
        var attempt: UInt32
        init(_ record: ChildRecord) { (group, path, attempt) = (record.group, record.path, record.attempt) }
    }

    private struct LockKey: Hashable {
        var attemptID: UInt64
        var request: UInt64
        init(_ attemptID: UInt64, _ request: UInt64) { (self.attemptID, self.request) = (attemptID, request) }
    }

    // MARK: Pruning

    @discardableResult
    public func prune(finishedBefore cutoff: Timestamp) throws(JournalError) -> [String] {
        let time = cutoff.nanosecondsSinceEpoch
        let lease = try leaseToCheck()
        return try session.transaction(doing: "cannot prune the journal", answerTimeout: leaseAnswerTimeout) {
            execute in
            if let lease { try checkLease(lease, execute) }
            let doomed = "SELECT id FROM groups WHERE finished_at IS NOT NULL AND finished_at < $1"
            let ids = try execute("SELECT id FROM groups WHERE finished_at IS NOT NULL AND finished_at < \(time)")
                .map { try $0.decode(String.self) }
            guard !ids.isEmpty else { return [] }
            for table in ["attempts", "cancels", "additions", "local_locks"] {
                var binds = PostgresBindings()
                binds.append(time)
                _ = try execute(
                    PostgresQuery(unsafeSQL: "DELETE FROM \(table) WHERE group_id IN (\(doomed))", binds: binds))
            }
            _ = try execute("DELETE FROM groups WHERE finished_at IS NOT NULL AND finished_at < \(time)")
            return ids
        }
    }

    // MARK: Loading

    public func load(finishedSince cutoff: Timestamp?) throws(JournalError) -> JournalContents {
        let location = self.location
        func damage(_ message: String) -> JournalError { JournalError(.damaged, path: location, message) }
        /// A cancel reason's code from a `*code` column (NULL: none, as in rows of schema 3 and older).
        func cancelCode(_ text: String?, of owner: String) throws(JournalError) -> CancellationReason.Code? {
            guard let text else { return nil }
            guard let code = CancellationReason.Code(rawValue: text) else {
                throw damage("\(owner) has an unknown cancel code \"\(text)\"")
            }
            return code
        }
        let since = cutoff?.nanosecondsSinceEpoch ?? Int64.min
        return try session.transaction(doing: "the journal cannot be read") { execute in
            var groups: [RestoredGroup] = []
            var index: [String: Int] = [:]
            let rows = try execute(
                """
                SELECT seq, id, spec, submitted_at, state, reason, finished_at, owner, reason_code FROM groups
                WHERE finished_at IS NULL OR finished_at >= \(since) ORDER BY seq
                """)
            for row in rows {
                let (seq, id, text, submittedAt, state, reason, finishedAt, owner, reasonCode) = try row.decode(
                    (Int64, String, String, Int64, String, String?, Int64?, String?, String?).self)
                let spec: GroupSpec
                do {
                    spec = try SpecParser.parse(text: text, format: .json, limits: Journal.restoreLimits)
                } catch {
                    throw damage("group \"\(id)\" has a spec that cannot be read: \(error)")
                }
                var outcome: (phase: GroupPhase, reason: String?, finishedAt: Timestamp)?
                if let finishedAt {
                    guard let phase = GroupPhase(rawValue: state), phase.isFinished else {
                        throw damage("group \"\(id)\" finished with an unknown state \"\(state)\"")
                    }
                    outcome = (phase, reason, Timestamp(nanosecondsSinceEpoch: finishedAt))
                }
                index[id] = groups.count
                groups.append(
                    RestoredGroup(
                        id: id, spec: spec, sequence: UInt64(max(seq, 0)),
                        submittedAt: Timestamp(nanosecondsSinceEpoch: submittedAt), owner: owner, outcome: outcome,
                        outcomeCode: try cancelCode(reasonCode, of: "group \"\(id)\"")))
            }
            var latest: [String: [String: ChildRecord]] = [:]
            let attempts = try execute(
                """
                SELECT group_id, path, attempt, attempt_id, state, worker, tokens, output, error, started_at, finished_at,
                    output_truncated, losses, counted, cancel_code, cancel_reason
                FROM attempts ORDER BY group_id, path, attempt
                """)
            for row in attempts {
                let (group, path, attempt, attemptID, stateText, worker, tokensText) = try row.decode(
                    (String, String, Int64, Int64, String, String?, String?).self)
                guard index[group] != nil else { continue }
                let columns = row.makeRandomAccess()
                let output = try columns[7].decode(Data?.self)
                let error = try columns[8].decode(String?.self)
                let startedAt = try columns[9].decode(Int64?.self)
                let finishedAt = try columns[10].decode(Int64?.self)
                let truncated = try columns[11].decode(Bool.self)
                let losses = try columns[12].decode(Int64.self)
                let counted = try columns[13].decode(Int64?.self)
                let cancelCode = try cancelCode(try columns[14].decode(String?.self), of: "child \"\(group)/\(path)\"")
                let cancelText = try columns[15].decode(String?.self)
                let cancelReason = cancelCode.flatMap { code in
                    cancelText.map { CancellationReason(code: code, text: $0) }
                }
                guard let state = Journal.childState(stateText) else {
                    throw damage("child \"\(group)/\(path)\" has an unknown state \"\(stateText)\"")
                }
                guard let tokens = Journal.tokens(tokensText) else {
                    throw damage("child \"\(group)/\(path)\" has unreadable tokens \(tokensText ?? "")")
                }
                latest[group, default: [:]][path] = ChildRecord(
                    group: group, path: path, attempt: UInt32(clamping: attempt),
                    attemptID: AttemptID(UInt64(bitPattern: attemptID)), state: state, output: output,
                    outputTruncated: truncated, error: error, cancelReason: cancelReason, worker: worker,
                    tokens: tokens,
                    startedAt: startedAt.map(Timestamp.init(nanosecondsSinceEpoch:)),
                    finishedAt: finishedAt.map(Timestamp.init(nanosecondsSinceEpoch:)),
                    losses: UInt32(clamping: losses), counted: counted.map { UInt32(clamping: $0) })
            }
            for (group, children) in latest {
                groups[index[group]!].children = children.values.sorted { $0.path < $1.path }
            }
            for row in try execute("SELECT group_id, path, reason, code FROM cancels ORDER BY seq") {
                let (group, path, reason, code) = try row.decode((String, String, String, String?).self)
                guard let position = index[group] else { continue }
                let reasonCode = try cancelCode(code, of: "a cancel of group \"\(group)\"") ?? .custom
                groups[position].cancels.append((path, CancellationReason(code: reasonCode, text: reason)))
            }
            for row in try execute("SELECT group_id, into_path, children FROM additions ORDER BY seq") {
                let (group, into, text) = try row.decode((String, String, String).self)
                guard let position = index[group] else { continue }
                do {
                    let children = try SpecParser.parseChildren(
                        text: text, format: .json, limits: Journal.restoreLimits)
                    groups[position].additions.append((into, children))
                } catch {
                    throw damage("group \"\(group)\" has added children that cannot be read: \(error)")
                }
            }
            let locals = try execute(
                "SELECT attempt_id, request, group_id, path, attempt, tokens FROM local_locks ORDER BY attempt_id, request"
            )
            for row in locals {
                let (attemptID, request, group, path, attempt, tokensText) = try row.decode(
                    (Int64, Int64, String, String, Int64, String).self)
                guard let position = index[group] else { continue }
                guard let tokens = Journal.tokens(tokensText) else {
                    throw damage("child \"\(group)/\(path)\" has unreadable tokens \(tokensText)")
                }
                groups[position].localLocks.append(
                    LocalLockRecord(
                        group: group, path: path, attempt: UInt32(clamping: attempt),
                        attemptID: AttemptID(UInt64(bitPattern: attemptID)), request: UInt64(bitPattern: request),
                        tokens: tokens))
            }
            var lastTokens: [String: UInt64] = [:]
            for row in try execute("SELECT category, last_token FROM fencing") {
                let (category, token) = try row.decode((String, Int64).self)
                lastTokens[category] = UInt64(bitPattern: token)
            }
            return JournalContents(groups: groups, lastTokens: lastTokens)
        }
    }
}
