import CohortCore
import CohortJournal
import CohortSpec
import Foundation
import Logging
import PostgresNIO

/// The journal's queries beside the coordinator's loop, on a PostgreSQL connection of their
/// own: each query sees every committed transaction and neither waits for the writer nor
/// makes it wait.
///
/// Thread-safety: every method may be called from any thread but a NIO event loop's; calls
/// are serialised.
public final class PostgresJournalReader: JournalStoreReader {
    let session: PostgresSession

    public var location: String { session.url.description }

    /// Connects to the journal's database.
    /// - Throws: ``JournalError`` as ``PostgresJournal/init(url:opening:logger:)``.
    public init(url: PostgresConnectionURL, logger: Logger = PostgresJournal.defaultLogger) throws(JournalError) {
        session = try PostgresSession(url, logger: logger)
    }

    public func close() {
        session.close()
    }

    public func finishedGroups(matching query: GroupQuery) throws(JournalError) -> [GroupSnapshot] {
        guard query.wantsFinished else { return [] }
        let rows = try session.run(Self.statement(query), doing: "the journal cannot be read")
        var groups: [GroupSnapshot] = []
        do {
            for row in rows {
                let (id, name, state, submittedAt, finishedAt, reason) = try row.decode(
                    (String, String, String, Int64, Int64?, String?).self)
                guard let phase = GroupPhase(rawValue: state) else { continue }
                groups.append(
                    GroupSnapshot(
                        id: id, name: name, phase: phase, submittedAt: Timestamp(nanosecondsSinceEpoch: submittedAt),
                        finishedAt: finishedAt.map(Timestamp.init(nanosecondsSinceEpoch:)), reason: reason))
            }
        } catch {
            throw JournalError(.damaged, path: location, "the journal cannot be read: \(error)")
        }
        return groups
    }

    /// The query of ``finishedGroups(matching:)``: the glob becomes an anchored regular
    /// expression (``Glob/postgresPattern``).
    static func statement(_ query: GroupQuery) -> PostgresQuery {
        var conditions = ["finished_at IS NOT NULL"]
        var binds = PostgresBindings()
        let phases = query.phases.filter(\.isFinished).map(\.rawValue).sorted()
        if !phases.isEmpty {
            var marks: [String] = []
            for phase in phases {
                binds.append(phase)
                marks.append("$\(binds.count)")
            }
            conditions.append("state IN (\(marks.joined(separator: ", ")))")
        }
        if let since = query.submittedSince {
            binds.append(since.nanosecondsSinceEpoch)
            conditions.append("submitted_at >= $\(binds.count)")
        }
        if let glob = query.nameGlob {
            binds.append(glob.postgresPattern)
            conditions.append("name ~ $\(binds.count)")
        }
        binds.append(Int64(query.effectiveLimit))
        return PostgresQuery(
            unsafeSQL: """
                SELECT id, name, state, submitted_at, finished_at, reason FROM groups
                WHERE \(conditions.joined(separator: " AND "))
                ORDER BY submitted_at DESC, id DESC LIMIT $\(binds.count)
                """, binds: binds)
    }

    public func rerunSource(group id: String) throws(JournalError) -> RerunSource? {
        let location = self.location
        return try session.transaction(doing: "the journal cannot be read") { execute -> RerunSource? in
            guard let row = try execute("SELECT spec, state, finished_at FROM groups WHERE id = \(id)").first else {
                return nil
            }
            let (text, state, finishedAt) = try row.decode((String, String, Int64?).self)
            // The spec as the group ran: the submitted one with its additions, in order.
            var spec: GroupSpec
            do {
                spec = try SpecParser.parse(text: text, format: .json, limits: Journal.restoreLimits)
                let additions = try execute(
                    "SELECT into_path, children FROM additions WHERE group_id = \(id) ORDER BY seq")
                for addition in additions {
                    let (into, children) = try addition.decode((String, String).self)
                    spec = try spec.adding(
                        try SpecParser.parseChildren(text: children, format: .json, limits: Journal.restoreLimits),
                        into: into, limits: Journal.restoreLimits)
                }
            } catch let error as SpecErrors {
                throw JournalError(.damaged, path: location, "group \"\(id)\" has a spec that cannot be read: \(error)")
            }
            let phase = finishedAt != nil ? GroupPhase(rawValue: state) : nil
            var latest: [String: (state: String, output: Data?, truncated: Bool)] = [:]
            let attempts = try execute(
                "SELECT path, state, output, output_truncated FROM attempts WHERE group_id = \(id) ORDER BY path, attempt"
            )
            for attempt in attempts {
                let (path, state, output, truncated) = try attempt.decode((String, String, Data?, Bool).self)
                latest[path] = (state, output, truncated)
            }
            var outputs: [String: Data] = [:]
            for (path, record) in latest where record.state == ChildPhase.succeeded.rawValue && !record.truncated {
                outputs[path] = record.output ?? Data("null".utf8)
            }
            return RerunSource(id: id, spec: spec, phase: phase, outputs: outputs)
        }
    }
}

extension Glob {
    /// The pattern as an anchored POSIX regular expression for PostgreSQL's `~` (`*` is `.*`,
    /// `?` is `.`, a set is kept with `[!` written `[^`, everything else matches itself).
    var postgresPattern: String {
        var text = "^"
        var inSet = false
        var setStart = false
        for scalar in sqlitePattern.unicodeScalars {
            if inSet {
                if scalar == "]" && !setStart {
                    inSet = false
                    text.unicodeScalars.append(scalar)
                } else if scalar == "\\" {
                    text += "\\\\"
                } else {
                    if !(setStart && scalar == "^") { setStart = false }
                    text.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case "*": text += ".*"
            case "?": text += "."
            case "[":
                inSet = true
                setStart = true
                text += "["
            default:
                if "\\.^$|()+{}".unicodeScalars.contains(scalar) { text += "\\" }
                text.unicodeScalars.append(scalar)
            }
        }
        return text + "$"
    }
}
