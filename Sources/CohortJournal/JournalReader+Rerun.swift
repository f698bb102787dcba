import CohortCore
import CohortSpec
import Foundation
import GRDB

/// What `cohort rerun` needs of an earlier group: its spec, whether and how it finished, and
/// the outputs of its procedures that succeeded.
public struct RerunSource: Sendable {
    public var id: String
    /// The spec as the group ran: the submitted one with every child added while it ran
    /// (`cohort add`) in place, so that a reused child that added children does not take
    /// them away from the new run.
    public var spec: GroupSpec
    /// How it finished; nil while it runs.
    public var phase: GroupPhase?
    /// Path → output of each procedure that succeeded with its whole output (one the
    /// coordinator cut down to its size limit is not reused: its dependents would read less
    /// than the earlier run gave them).
    public var outputs: [String: Data]

    public init(id: String, spec: GroupSpec, phase: GroupPhase?, outputs: [String: Data]) {
        self.id = id
        self.spec = spec
        self.phase = phase
        self.outputs = outputs
    }
}

extension JournalReader {
    /// The spec and succeeded outputs of group `id`, or nil if the journal does not have it
    /// (never submitted, or pruned).
    /// - Throws: ``JournalError`` `damaged` if the journal cannot be read.
    public func rerunSource(group id: String) throws(JournalError) -> RerunSource? {
        do {
            return try database.read { db -> RerunSource? in
                guard
                    let row = try Row.fetchOne(
                        db, sql: "SELECT spec, state, finished_at FROM groups WHERE id = ?", arguments: [id])
                else { return nil }
                var spec: GroupSpec
                do {
                    spec = try SpecParser.parse(text: row["spec"], format: .json, limits: Journal.restoreLimits)
                    let additions = try Row.fetchCursor(
                        db, sql: "SELECT into_path, children FROM additions WHERE group_id = ? ORDER BY rowid",
                        arguments: [id])
                    while let addition = try additions.next() {
                        let children = try SpecParser.parseChildren(
                            text: addition["children"], format: .json, limits: Journal.restoreLimits)
                        spec = try spec.adding(children, into: addition["into_path"], limits: Journal.restoreLimits)
                    }
                } catch let error as SpecErrors {
                    throw JournalError(.damaged, path: path, "group \"\(id)\" has a spec that cannot be read: \(error)")
                }
                let finished = (row["finished_at"] as Int64?) != nil
                let phase = finished ? GroupPhase(rawValue: row["state"]) : nil
                // The latest record of each child: rows come by path and attempt (the primary key).
                var latest: [String: (state: String, output: Data?, truncated: Bool)] = [:]
                let attempts = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT path, state, output, output_truncated FROM attempts
                        WHERE group_id = ? ORDER BY path, attempt
                        """,
                    arguments: [id])
                while let attempt = try attempts.next() {
                    latest[attempt["path"]] = (
                        attempt["state"], attempt["output"], (attempt["output_truncated"] as Int64) != 0
                    )
                }
                var outputs: [String: Data] = [:]
                for (path, record) in latest where record.state == ChildPhase.succeeded.rawValue && !record.truncated {
                    outputs[path] = record.output ?? Data("null".utf8)
                }
                return RerunSource(id: id, spec: spec, phase: phase, outputs: outputs)
            }
        } catch let error as JournalError {
            throw error
        } catch {
            throw JournalError(.damaged, path: path, "the journal cannot be read: \(Journal.describe(error))")
        }
    }
}
