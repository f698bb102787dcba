import CohortCore
import CohortSpec
import Foundation
import GRDB

/// Writing a turn's changes, and pruning.
extension Journal {
    /// Writes several turns' changes, oldest first, in one transaction (a group commit): the
    /// result is the same as writing them one by one, with one commit instead of several.
    /// - Throws: ``JournalError`` `damaged` if SQLite refuses (disk full, I/O error); the
    ///   coordinator then stops rather than answer for what is not on disk. Then none of them
    ///   is written.
    public func write(_ batches: [JournalBatch]) throws(JournalError) {
        guard batches.contains(where: { !$0.isEmpty }) else { return }
        do {
            try database.inTransaction(.immediate) { db in
                for batch in batches where !batch.isEmpty {
                    try Self.write(batch, in: db)
                }
                return .commit
            }
        } catch {
            throw JournalError(.damaged, path: path, "cannot write the journal: \(Self.describe(error))")
        }
    }

    private static func write(_ batch: JournalBatch, in db: Database) throws {
        if !batch.submissions.isEmpty {
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO groups (id, name, spec, fingerprint, submitted_at, state, owner)
                    VALUES (?, ?, ?, ?, ?, 'pending', ?)
                    """)
            for submission in batch.submissions {
                let text = submission.spec.specText(pretty: false)
                try insert.execute(arguments: [
                    submission.id, submission.spec.name, text, fingerprint(text),
                    submission.submittedAt.nanosecondsSinceEpoch, submission.owner,
                ])
            }
        }
        if !batch.dispatches.isEmpty {
            let insert = try db.cachedStatement(
                sql: """
                    INSERT OR REPLACE INTO attempts (group_id, path, attempt, attempt_id, state, worker, tokens, started_at, losses,
                        counted)
                    VALUES (?, ?, ?, ?, 'in-flight', ?, ?, ?, ?, ?)
                    """)
            let supersede = try db.cachedStatement(
                sql: """
                    UPDATE attempts SET state = 'ended' WHERE group_id = ? AND path = ? AND attempt < ? AND state = 'in-flight'
                    """)
            var row = BoundStatement(insert)
            for record in batch.dispatches {
                row.bind(record.group)
                row.bind(record.path)
                row.bind(Int64(record.attempt))
                row.bind(Int64(bitPattern: record.attemptID.rawValue))
                row.bind(record.worker)
                row.bind(tokensText(record.tokens))
                row.bind(record.startedAt?.nanosecondsSinceEpoch)
                row.bind(Int64(record.losses))
                row.bind(record.counted.map(Int64.init))
                try row.run()
                if record.attempt > 1 {
                    try supersede.execute(arguments: [record.group, record.path, Int64(record.attempt)])
                }
            }
        }
        if !batch.finishes.isEmpty {
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO attempts (group_id, path, attempt, attempt_id, state, worker, output, error, started_at, finished_at,
                        output_truncated, cancel_code, cancel_reason)
                    VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (group_id, path, attempt) DO UPDATE SET
                        state = excluded.state, worker = coalesce(excluded.worker, worker), output = excluded.output,
                        error = excluded.error, started_at = coalesce(excluded.started_at, started_at),
                        finished_at = excluded.finished_at, output_truncated = excluded.output_truncated,
                        cancel_code = excluded.cancel_code, cancel_reason = excluded.cancel_reason
                    """)
            var row = BoundStatement(upsert)
            for record in batch.finishes {
                guard case .finished(let phase) = record.state else { continue }
                row.bind(record.group)
                row.bind(record.path)
                row.bind(Int64(record.attempt))
                row.bind(phase.rawValue)
                row.bind(record.worker)
                row.bind(record.output)
                row.bind(record.error)
                row.bind(record.startedAt?.nanosecondsSinceEpoch)
                row.bind(record.finishedAt?.nanosecondsSinceEpoch)
                row.bind(Int64(record.outputTruncated ? 1 : 0))
                row.bind(record.cancelReason?.code.rawValue)
                row.bind(record.cancelReason?.text)
                try row.run()
            }
        }
        if !batch.outcomes.isEmpty {
            let update = try db.cachedStatement(
                sql: "UPDATE groups SET state = ?, reason = ?, reason_code = ?, finished_at = ? WHERE id = ?")
            for outcome in batch.outcomes {
                try update.execute(arguments: [
                    outcome.phase.rawValue, outcome.reason, outcome.code?.rawValue, outcome.at.nanosecondsSinceEpoch,
                    outcome.id,
                ])
            }
        }
        if !batch.cancels.isEmpty {
            let insert = try db.cachedStatement(
                sql: "INSERT INTO cancels (group_id, path, reason, code, at) VALUES (?, ?, ?, ?, ?)")
            for cancel in batch.cancels {
                try insert.execute(arguments: [
                    cancel.group, cancel.path, cancel.reason.text, cancel.reason.code.rawValue,
                    cancel.at.nanosecondsSinceEpoch,
                ])
            }
        }
        if !batch.additions.isEmpty {
            let insert = try db.cachedStatement(
                sql: "INSERT INTO additions (group_id, into_path, children, at) VALUES (?, ?, ?, ?)")
            for addition in batch.additions {
                try insert.execute(arguments: [
                    addition.group, addition.into, JSONValue.array(addition.children.map(\.specJSON)).jsonString(),
                    addition.at.nanosecondsSinceEpoch,
                ])
            }
        }
        if !batch.localLocks.isEmpty { try writeLocalLocks(batch.localLocks, in: db) }
        if !batch.fencing.isEmpty {
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO fencing (category, last_token) VALUES (?, ?)
                    ON CONFLICT (category) DO UPDATE SET last_token = max(last_token, excluded.last_token)
                    """)
            for (category, token) in batch.fencing {
                try upsert.execute(arguments: [category, Int64(bitPattern: token)])
            }
        }
    }

    private static func writeLocalLocks(_ changes: [LocalLockChange], in db: Database) throws {
        let insert = try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO local_locks (attempt_id, request, group_id, path, attempt, tokens)
                VALUES (?, ?, ?, ?, ?, ?)
                """)
        let delete = try db.cachedStatement(sql: "DELETE FROM local_locks WHERE attempt_id = ? AND request = ?")
        for change in changes {
            switch change {
            case .granted(let record):
                try insert.execute(arguments: [
                    Int64(bitPattern: record.attemptID.rawValue), Int64(bitPattern: record.request), record.group,
                    record.path,
                    Int64(record.attempt), tokensText(record.tokens) ?? "{}",
                ])
            case .released(let attemptID, let request):
                try delete.execute(arguments: [Int64(bitPattern: attemptID.rawValue), Int64(bitPattern: request)])
            }
        }
    }

    package static func tokensText(_ tokens: [String: UInt64]) -> String? {
        guard !tokens.isEmpty else { return nil }
        return JSONValue.object(tokens.mapValues { .int(Int64(bitPattern: $0)) }).jsonString(pretty: false)
    }

    /// Deletes the groups that finished before `cutoff`, with their attempts and cancels, and
    /// returns their ids.
    /// - Throws: ``JournalError`` `damaged` if SQLite refuses.
    @discardableResult
    public func prune(finishedBefore cutoff: Timestamp) throws(JournalError) -> [String] {
        do {
            return try database.write { db in
                let time = cutoff.nanosecondsSinceEpoch
                let ids = try String.fetchAll(
                    db, sql: "SELECT id FROM groups WHERE finished_at IS NOT NULL AND finished_at < ?",
                    arguments: [time])
                let doomed = "SELECT id FROM groups WHERE finished_at IS NOT NULL AND finished_at < ?"
                try db.execute(sql: "DELETE FROM attempts WHERE group_id IN (\(doomed))", arguments: [time])
                try db.execute(sql: "DELETE FROM cancels WHERE group_id IN (\(doomed))", arguments: [time])
                try db.execute(sql: "DELETE FROM additions WHERE group_id IN (\(doomed))", arguments: [time])
                try db.execute(sql: "DELETE FROM local_locks WHERE group_id IN (\(doomed))", arguments: [time])
                try db.execute(
                    sql: "DELETE FROM groups WHERE finished_at IS NOT NULL AND finished_at < ?", arguments: [time])
                return ids
            }
        } catch {
            throw JournalError(.damaged, path: path, "cannot prune the journal: \(Self.describe(error))")
        }
    }
}
