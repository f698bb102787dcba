import CohortCore
import Foundation
import GRDB

/// The coordinator's journal: every accepted group and what became of it, in SQLite (WAL mode)
/// under the state directory, so a restarted coordinator reloads what it had accepted.
///
/// The coordinator's loop writes one ``JournalBatch`` per turn (``write(_:)``, one transaction)
/// before it sends that turn's replies: a client never holds a group id that is not on disk.
/// Opening checks the file (an unreadable, truncated or foreign file stops the coordinator with
/// a ``JournalError`` naming it: the journal is never replaced by an empty one) and increments
/// the coordinator's epoch, which is part of every fencing token.
///
/// Thread-safety: every method may be called from any thread; calls are serialised. The
/// coordinator calls them from its loop thread only.
public final class Journal: Sendable {
    /// The journal file.
    public let path: String
    /// This incarnation's epoch: 1 for a new journal, one more at every open.
    public let epoch: UInt64
    let database: DatabaseQueue

    /// Opens (or creates) the journal of a locked state directory and increments its epoch.
    ///
    /// - Throws: ``JournalError`` `damaged` naming the file if it is not a readable journal
    ///   (truncated, garbage, an integrity check failed, its write-ahead log without it),
    ///   `schemaVersion` if another version of Cohort wrote it.
    public convenience init(directory: StateDirectory, synchronous: JournalSynchronous = .full) throws(JournalError) {
        let path = directory.journalPath
        if !FileManager.default.fileExists(atPath: path) {
            try Self.create(at: path)
        }
        try self.init(existing: path, synchronous: synchronous, startingIncarnation: true)
    }

    /// Opens an existing journal for maintenance (`cohort prune`), without its directory's lock
    /// and without starting an incarnation; SQLite serialises it with a running coordinator.
    /// - Throws: ``JournalError`` as ``init(directory:synchronous:)``, `unusable` if there is none.
    public static func openExisting(at path: String) throws(JournalError) -> Journal {
        guard FileManager.default.fileExists(atPath: path) else {
            throw JournalError(.unusable, path: path, "there is no journal here")
        }
        return try Journal(existing: path, synchronous: .full, startingIncarnation: false)
    }

    private init(existing path: String, synchronous: JournalSynchronous, startingIncarnation: Bool) throws(JournalError)
    {
        self.path = path
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        guard size >= 512 else {
            throw JournalError(
                .damaged, path: path,
                "the journal is truncated (\(size) bytes); the coordinator will not start over it. "
                    + "Restore it from a backup, or move it away to start with an empty journal")
        }
        do {
            database = try DatabaseQueue(path: path, configuration: Self.configuration(synchronous))
            // After GRDB's WAL set-up, which sets `synchronous = NORMAL` once `prepareDatabase`
            // has run: set there, FULL was silently replaced by NORMAL.
            try database.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(synchronous == .full ? "FULL" : "NORMAL")")
            }
            let check = try database.writeWithoutTransaction { db in
                try String.fetchAll(db, sql: "PRAGMA quick_check")
            }
            guard check == ["ok"] else {
                throw JournalError(
                    .damaged, path: path,
                    "the journal failed its integrity check: \(check.prefix(3).joined(separator: "; "))")
            }
            epoch = try database.write { db -> UInt64 in
                guard try db.tableExists("meta") else {
                    throw JournalError(
                        .damaged, path: path, "this is an SQLite database, but not a Cohort journal (no meta table)")
                }
                let text = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'schemaVersion'")
                var version = text.flatMap { Int($0) }
                while let current = version, current != JournalSchema.version,
                    let steps = JournalSchema.migrations[current]
                {
                    for statement in steps { try db.execute(sql: statement) }
                    version = current + 1
                    try db.execute(
                        sql: "UPDATE meta SET value = ? WHERE key = 'schemaVersion'", arguments: [String(current + 1)])
                }
                guard version == JournalSchema.version else {
                    let migrated = JournalSchema.migrations.keys.sorted().map(String.init).joined(separator: ", ")
                    throw JournalError(
                        .schemaVersion, path: path,
                        "the journal has schema version \(text ?? "none"); this coordinator reads version "
                            + "\(JournalSchema.version) and migrates version \(migrated)")
                }
                let last = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'epoch'").flatMap {
                    UInt64($0)
                }
                guard let last else { throw JournalError(.damaged, path: path, "the journal has no epoch") }
                guard startingIncarnation else { return last }
                try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'epoch'", arguments: [String(last + 1)])
                return last + 1
            }
        } catch let error as JournalError {
            throw error
        } catch {
            throw JournalError(.damaged, path: path, "the journal cannot be read: \(Self.describe(error))")
        }
    }

    /// Creates an empty journal beside `path` and moves it into place, so that a journal file
    /// that exists is always a complete one (and one that is empty or cut short is damage).
    private static func create(at path: String) throws(JournalError) {
        let files = FileManager.default
        if files.fileExists(atPath: path + "-wal") {
            throw JournalError(
                .damaged, path: path,
                "the journal is missing but its write-ahead log \(path)-wal is there; the coordinator will not start empty"
            )
        }
        let fresh = path + ".new"
        for suffix in ["", "-wal", "-shm", "-journal"] { try? files.removeItem(atPath: fresh + suffix) }
        do {
            let database = try DatabaseQueue(path: fresh, configuration: configuration(.full))
            try database.write { db in
                for statement in JournalSchema.statements { try db.execute(sql: statement) }
                let now = String(Int64(Date().timeIntervalSince1970 * 1e9))
                try db.execute(
                    sql: "INSERT INTO meta (key, value) VALUES ('schemaVersion', ?), ('epoch', '0'), ('createdAt', ?)",
                    arguments: [String(JournalSchema.version), now])
            }
            try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try database.close()
            try files.moveItem(atPath: fresh, toPath: path)
        } catch {
            throw JournalError(.unusable, path: path, "cannot create the journal: \(describe(error))")
        }
    }

    private static func configuration(_ synchronous: JournalSynchronous) -> Configuration {
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(10)
        configuration.label = "cohort.journal"
        return configuration
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return "\(error)"
    }

    /// Closes the file (checkpointing the write-ahead log into it). Further calls throw.
    public func close() {
        try? database.close()
    }

    /// A stable fingerprint of a spec (FNV-1a, 64 bits, of its JSON text), for operators.
    package static func fingerprint(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
