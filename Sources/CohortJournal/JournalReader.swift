import CohortCore
import Foundation
import GRDB

/// A read-only connection to the journal, for queries that must not wait for the writer (nor
/// make it wait): in WAL mode a reader sees the last committed state while the
/// coordinator's ``JournalCommitter`` writes. The coordinator runs it beside its loop, on a
/// queue of its own (`cohort status`'s history).
///
/// Thread-safety: every method may be called from any thread; calls are serialised.
public final class JournalReader: Sendable {
    /// The journal file.
    public let path: String
    let database: DatabaseQueue

    /// The most groups one query returns (``finishedGroups(matching:)`` with no limit).
    public static let maxGroups = GroupQuery.maxGroups

    /// Opens a read-only connection to the journal at `path` (which must exist).
    /// - Throws: ``JournalError`` `unusable` if it cannot be opened.
    public init(path: String) throws(JournalError) {
        self.path = path
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        configuration.label = "cohort.journal.reader"
        do {
            database = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw JournalError(.unusable, path: path, "cannot open the journal to read: \(Journal.describe(error))")
        }
    }

    /// Closes the connection. Close it before the writer's journal: the last connection to
    /// close checkpoints the write-ahead log into the file and removes it, which a read-only
    /// one cannot do. Further calls throw.
    public func close() {
        try? database.close()
    }

    /// The finished groups `query` selects, newest submission first, at most its
    /// ``GroupQuery/effectiveLimit`` (its limit, at most ``maxGroups``); without children. One indexed query: the journal's
    /// `groups_by_submission` and `groups_by_state` indexes serve the order and the filters.
    /// - Throws: ``JournalError`` `damaged` if the journal cannot be read.
    public func finishedGroups(matching query: GroupQuery) throws(JournalError) -> [GroupSnapshot] {
        guard query.wantsFinished else { return [] }
        let (sql, arguments) = Self.statement(query)
        do {
            return try database.read { db in
                var groups: [GroupSnapshot] = []
                let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
                while let row = try rows.next() {
                    guard let phase = GroupPhase(rawValue: row["state"]) else { continue }
                    let finished: Int64? = row["finished_at"]
                    groups.append(
                        GroupSnapshot(
                            id: row["id"], name: row["name"], phase: phase,
                            submittedAt: Timestamp(nanosecondsSinceEpoch: row["submitted_at"]),
                            finishedAt: finished.map(Timestamp.init(nanosecondsSinceEpoch:)), reason: row["reason"]))
                }
                return groups
            }
        } catch {
            throw JournalError(.damaged, path: path, "the journal cannot be read: \(Journal.describe(error))")
        }
    }

    /// How SQLite runs the query of ``finishedGroups(matching:)`` (`EXPLAIN QUERY PLAN`, one
    /// line per step), for tests that check it uses an index.
    public func queryPlan(matching query: GroupQuery) throws(JournalError) -> [String] {
        let (sql, arguments) = Self.statement(query)
        do {
            return try database.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] }
            }
        } catch {
            throw JournalError(.damaged, path: path, "the journal cannot be read: \(Journal.describe(error))")
        }
    }

    /// The query of ``finishedGroups(matching:)`` and its arguments.
    static func statement(_ query: GroupQuery) -> (String, StatementArguments) {
        var conditions = ["finished_at IS NOT NULL"]
        var arguments: [any DatabaseValueConvertible] = []
        let phases = query.phases.filter(\.isFinished).map(\.rawValue).sorted()
        if !phases.isEmpty {
            conditions.append("state IN (\(phases.map { _ in "?" }.joined(separator: ", ")))")
            arguments += phases as [any DatabaseValueConvertible]
        }
        if let since = query.submittedSince {
            conditions.append("submitted_at >= ?")
            arguments.append(since.nanosecondsSinceEpoch)
        }
        if let glob = query.nameGlob {
            conditions.append("name GLOB ?")
            arguments.append(glob.sqlitePattern)
        }
        arguments.append(query.effectiveLimit)
        let sql = """
            SELECT id, name, state, submitted_at, finished_at, reason FROM groups
            WHERE \(conditions.joined(separator: " AND "))
            ORDER BY submitted_at DESC, id DESC LIMIT ?
            """
        return (sql, StatementArguments(arguments))
    }
}
