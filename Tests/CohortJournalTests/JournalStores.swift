import CohortJournal
import CohortJournalPostgres
import CohortTestSupport
import Foundation
import GRDB
import Testing

/// The journal stores every journal test runs against (Swift Testing `arguments:`): SQLite
/// under a state directory, and PostgreSQL in a database of its own on the tests' server
/// (``PostgresServer/shared``).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }
}

/// One fresh journal location of a ``StoreKind``: opened as a coordinator's start opens it
/// (``open()``, a new epoch each time), for maintenance (``openExisting()``), and read with
/// SQL behind the store's back (``strings(_:)``).
struct JournalPlace {
    let kind: StoreKind
    /// The state directory (SQLite) or the database's URL (PostgreSQL).
    let location: String
    /// PostgreSQL's database name.
    let database: String

    func open() throws -> any JournalStore {
        switch kind {
        case .sqlite: try Journal(directory: try StateDirectory(path: location))
        case .postgres: try PostgresJournal(url: try PostgresConnectionURL(location))
        }
    }

    func openExisting() throws -> any JournalStore {
        switch kind {
        case .sqlite: try Journal.openExisting(at: location + "/journal.sqlite")
        case .postgres: try PostgresJournal(url: try PostgresConnectionURL(location), opening: .maintenance)
        }
    }

    /// The first column of every row `sql` returns, as text.
    func strings(_ sql: String) throws -> [String] {
        switch kind {
        case .sqlite:
            let database = try DatabaseQueue(path: location + "/journal.sqlite")
            defer { try? database.close() }
            return try database.read { db in
                try Row.fetchAll(db, sql: sql).map { row in
                    switch (row[0] as DatabaseValue).storage {
                    case .string(let text): text
                    case .int64(let number): String(number)
                    case .double(let number): String(number)
                    case .blob(let data): String(decoding: data, as: UTF8.self)
                    case .null: ""
                    }
                }
            }
        case .postgres:
            let output = try PostgresServer.shared.psql(sql, database: database)
            return output.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        }
    }

    /// Runs `sql` behind the store's back.
    func execute(_ sql: String) throws {
        switch kind {
        case .sqlite:
            let database = try DatabaseQueue(path: location + "/journal.sqlite")
            defer { try? database.close() }
            try database.write { db in try db.execute(sql: sql) }
        case .postgres:
            try PostgresServer.shared.psql(sql, database: database)
        }
    }
}

/// A fresh journal location of `kind`, removed at the end (SQLite's state directory; a
/// PostgreSQL database goes with the tests' server).
func withJournalPlace<T>(_ kind: StoreKind, _ body: (JournalPlace) throws -> T) throws -> T {
    switch kind {
    case .sqlite:
        return try withStateDirectory { path in try body(JournalPlace(kind: kind, location: path, database: "")) }
    case .postgres:
        let url = try PostgresServer.shared.makeDatabase()
        let database = String(url.split(separator: "/").last ?? "")
        return try body(JournalPlace(kind: kind, location: url, database: database))
    }
}
