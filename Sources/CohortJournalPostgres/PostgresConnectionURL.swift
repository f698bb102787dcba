import CohortJournal
import Foundation

/// A `--journal` URL: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (`postgresql://` too).
/// Without a password in the URL, `PGPASSWORD` is used when set. The connection is not
/// encrypted (no TLS yet): keep the database on loopback or a private network.
public struct PostgresConnectionURL: Sendable, Hashable, CustomStringConvertible {
    public var user: String
    public var password: String?
    public var host: String
    public var port: Int
    public var database: String

    /// Whether `text` names a PostgreSQL journal (a `postgres://` or `postgresql://` URL).
    public static func isPostgres(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// - Throws: ``JournalError`` `badLocation` (exit 64) naming what is wrong.
    public init(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(JournalError)
    {
        func bad(_ message: String) -> JournalError {
            JournalError(.badLocation, path: Self.redacted(text), message)
        }
        guard Self.isPostgres(text) else {
            throw bad(
                "the journal must be a postgres://USER@HOST:PORT/DATABASE URL (without one, SQLite under --state-dir)")
        }
        // HOST[:PORT] after the user, checked by hand: a port that is not a number must not
        // quietly become 5432.
        let afterScheme = text.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        if afterScheme.count > 2 {
            let authority = afterScheme[2].split(separator: "@").last.map(String.init) ?? ""
            if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
                let port = authority[authority.index(after: colon)...]
                guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber) else {
                    throw bad("the port \"\(port)\" is not a number")
                }
                guard let number = Int(port), (1...65535).contains(number) else {
                    throw bad("the port \(port) is not between 1 and 65535")
                }
            }
        }
        guard let components = URLComponents(string: text) else {
            throw bad("this is not a URL (is the port a number? a password with @, : or / must be percent-encoded)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw bad("the URL names no host (postgres://USER@HOST:PORT/DATABASE)")
        }
        guard let user = components.user, !user.isEmpty else {
            throw bad("the URL names no user (postgres://USER@HOST:PORT/DATABASE)")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw bad("the URL names no database (postgres://USER@HOST:PORT/DATABASE)")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw bad("the port \(port) is not between 1 and 65535")
        }
        if let query = components.queryItems, let item = query.first {
            throw bad("the URL parameter \"\(item.name)\" is not supported (TLS is not supported yet)")
        }
        self.user = user
        self.password = components.password ?? environment["PGPASSWORD"]
        self.host = host
        self.port = components.port ?? 5432
        self.database = database
    }

    /// The URL without its password, for messages and logs.
    public var description: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    /// `text` with any password replaced by `***`.
    static func redacted(_ text: String) -> String {
        text.replacingOccurrences(of: #"(://[^:@/]*):[^@/]*@"#, with: "$1:***@", options: .regularExpression)
    }
}
