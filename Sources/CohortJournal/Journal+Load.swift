import CohortCore
import CohortSpec
import Foundation
import GRDB

/// Reading the journal back at start.
extension Journal {
    /// Limits for specs read back: they were checked when accepted, and lowering a limit since
    /// must not make an accepted group unreadable.
    package static let restoreLimits = SpecLimits(
        maxSpecBytes: .max / 2, maxChildrenPerGroup: .max / 2, maxTotalChildren: .max / 2, maxNestingDepth: .max / 2,
        maxDocumentDepth: .max / 2, maxNodes: .max / 2, maxRetryAttempts: .max / 2, maxNameLength: .max / 2)

    /// Every unfinished group, and the finished ones that finished at or after `cutoff` (all of
    /// them if nil), each with the latest record of every child; and the fencing counters.
    /// - Throws: ``JournalError`` `damaged` naming the file and the record that cannot be read.
    public func load(finishedSince cutoff: Timestamp?) throws(JournalError) -> JournalContents {
        do {
            return try database.read { db in try load(db, cutoff: cutoff) }
        } catch let error as JournalError {
            throw error
        } catch {
            throw JournalError(.damaged, path: path, "the journal cannot be read: \(Self.describe(error))")
        }
    }

    private func load(_ db: Database, cutoff: Timestamp?) throws -> JournalContents {
        var groups: [RestoredGroup] = []
        var index: [String: Int] = [:]
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT seq, id, spec, submitted_at, state, reason, reason_code, finished_at, owner FROM groups
                WHERE finished_at IS NULL OR finished_at >= ? ORDER BY seq
                """,
            arguments: [cutoff?.nanosecondsSinceEpoch ?? Int64.min])
        while let row = try rows.next() {
            let id: String = row["id"]
            let spec: GroupSpec
            do {
                spec = try SpecParser.parse(text: row["spec"], format: .json, limits: Self.restoreLimits)
            } catch {
                throw damage("group \"\(id)\" has a spec that cannot be read: \(error)")
            }
            var outcome: (phase: GroupPhase, reason: String?, finishedAt: Timestamp)?
            if let finished: Int64 = row["finished_at"] {
                guard let phase = GroupPhase(rawValue: row["state"]), phase.isFinished else {
                    throw damage("group \"\(id)\" finished with an unknown state \"\(row["state"] as String)\"")
                }
                outcome = (phase, row["reason"], Timestamp(nanosecondsSinceEpoch: finished))
            }
            index[id] = groups.count
            groups.append(
                RestoredGroup(
                    id: id, spec: spec, sequence: UInt64(max(row["seq"] as Int64, 0)),
                    submittedAt: Timestamp(nanosecondsSinceEpoch: row["submitted_at"]), owner: row["owner"],
                    outcome: outcome, outcomeCode: try cancelCode(row["reason_code"], of: "group \"\(id)\"")))
        }
        // The latest record of each child: rows come by path and attempt, the last one wins.
        let attempts = try Row.fetchCursor(
            db,
            sql: """
                SELECT group_id, path, attempt, attempt_id, state, worker, tokens, output, error, started_at, finished_at,
                    output_truncated, losses, counted, cancel_code, cancel_reason
                FROM attempts ORDER BY group_id, path, attempt
                """)
        var latest: [String: [String: ChildRecord]] = [:]
        while let row = try attempts.next() {
            let group: String = row["group_id"]
            guard index[group] != nil else { continue }
            let record = try childRecord(row, group: group)
            latest[group, default: [:]][record.path] = record
        }
        for (group, children) in latest {
            groups[index[group]!].children = children.values.sorted { $0.path < $1.path }
        }
        let cancels = try Row.fetchCursor(db, sql: "SELECT group_id, path, reason, code FROM cancels ORDER BY rowid")
        while let row = try cancels.next() {
            let group: String = row["group_id"]
            guard let position = index[group] else { continue }
            let code = try cancelCode(row["code"], of: "a cancel of group \"\(group)\"") ?? .custom
            groups[position].cancels.append((row["path"], CancellationReason(code: code, text: row["reason"])))
        }
        let additions = try Row.fetchCursor(
            db, sql: "SELECT group_id, into_path, children FROM additions ORDER BY rowid")
        while let row = try additions.next() {
            let group: String = row["group_id"]
            guard let position = index[group] else { continue }
            do {
                let children = try SpecParser.parseChildren(
                    text: row["children"], format: .json, limits: Self.restoreLimits)
                groups[position].additions.append((row["into_path"], children))
            } catch {
                throw damage("group \"\(group)\" has added children that cannot be read: \(error)")
            }
        }
        let locals = try Row.fetchCursor(
            db,
            sql:
                "SELECT attempt_id, request, group_id, path, attempt, tokens FROM local_locks ORDER BY attempt_id, request"
        )
        while let row = try locals.next() {
            let group: String = row["group_id"]
            guard let position = index[group] else { continue }
            let path: String = row["path"]
            let tokens = try tokens(row["tokens"], of: "\(group)/\(path)")
            groups[position].localLocks.append(
                LocalLockRecord(
                    group: group, path: path, attempt: UInt32(clamping: row["attempt"] as Int64),
                    attemptID: AttemptID(UInt64(bitPattern: row["attempt_id"])),
                    request: UInt64(bitPattern: row["request"]),
                    tokens: tokens))
        }
        var lastTokens: [String: UInt64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT category, last_token FROM fencing") {
            lastTokens[row["category"]] = UInt64(bitPattern: row["last_token"])
        }
        return JournalContents(groups: groups, lastTokens: lastTokens)
    }

    private func childRecord(_ row: Row, group: String) throws -> ChildRecord {
        let path: String = row["path"]
        let stateText: String = row["state"]
        guard let state = Self.childState(stateText) else {
            throw damage("child \"\(group)/\(path)\" has an unknown state \"\(stateText)\"")
        }
        let tokens = try tokens(row["tokens"], of: "\(group)/\(path)")
        return ChildRecord(
            group: group, path: path, attempt: UInt32(clamping: row["attempt"] as Int64),
            attemptID: AttemptID(UInt64(bitPattern: row["attempt_id"])), state: state, output: row["output"],
            outputTruncated: (row["output_truncated"] as Int64? ?? 0) != 0, error: row["error"],
            cancelReason: try cancelReason(
                code: row["cancel_code"], text: row["cancel_reason"], of: "\(group)/\(path)"),
            worker: row["worker"], tokens: tokens,
            startedAt: (row["started_at"] as Int64?).map(Timestamp.init(nanosecondsSinceEpoch:)),
            finishedAt: (row["finished_at"] as Int64?).map(Timestamp.init(nanosecondsSinceEpoch:)),
            losses: UInt32(clamping: row["losses"] as Int64? ?? 0),
            counted: (row["counted"] as Int64?).map { UInt32(clamping: $0) })
    }

    /// Category -> token from a `tokens` column (JSON; NULL for none).
    private func tokens(_ text: String?, of child: String) throws -> [String: UInt64] {
        guard let tokens = Self.tokens(text) else {
            throw damage("child \"\(child)\" has unreadable tokens \(text ?? "")")
        }
        return tokens
    }

    /// Category -> token from a `tokens` column (JSON; NULL for none); nil if unreadable.
    package static func tokens(_ text: String?) -> [String: UInt64]? {
        var tokens: [String: UInt64] = [:]
        guard let text else { return tokens }
        guard case .object(let object)? = try? JSONValue(jsonString: text) else { return nil }
        for (category, value) in object {
            if case .int(let token) = value { tokens[category] = UInt64(bitPattern: token) }
        }
        return tokens
    }

    /// A cancel reason's code from a `*code` column (NULL: none, as in rows of schema version 6
    /// and older).
    private func cancelCode(_ text: String?, of owner: String) throws -> CancellationReason.Code? {
        guard let text else { return nil }
        guard let code = CancellationReason.Code(rawValue: text) else {
            throw damage("\(owner) has an unknown cancel code \"\(text)\"")
        }
        return code
    }

    /// A cancelled or skipped child's reason from `attempts.cancel_code` and `cancel_reason`;
    /// nil when the row has none (the child then reads `custom`, its `error` as the words).
    private func cancelReason(code: String?, text: String?, of child: String) throws -> CancellationReason? {
        guard let code = try cancelCode(code, of: "child \"\(child)\""), let text else { return nil }
        return CancellationReason(code: code, text: text)
    }

    /// A child's record state from an `attempts.state` column; nil if unknown.
    package static func childState(_ text: String) -> ChildRecord.State? {
        switch text {
        case "in-flight", "ended": return .inFlight
        default:
            guard let phase = ChildPhase(rawValue: text), phase.isFinished else { return nil }
            return .finished(phase)
        }
    }

    private func damage(_ message: String) -> JournalError {
        JournalError(.damaged, path: path, message)
    }
}
