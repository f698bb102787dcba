import CohortJournal
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// One connection to PostgreSQL on an event loop group of its own, used synchronously: every
/// call sends its statement and waits for the answer on the CALLING thread (never a NIO
/// thread: the committer's, the loop's or the history queue's), so the journal keeps the
/// synchronous ``JournalStore`` protocol the coordinator's threads call. Calls are serialised
/// by a lock, a transaction as a whole. A connection that was lost (closed by the server, or
/// given up unanswered) is opened again at the next call, so that a coordinator outlives a
/// restart or failover of its database.
final class PostgresSession: @unchecked Sendable {
    // @unchecked Sendable: `connection` and `group` are Sendable; `lock` serialises their use.
    let url: PostgresConnectionURL
    private let group: MultiThreadedEventLoopGroup
    private let configuration: PostgresConnection.Configuration
    /// Guarded by `lock`; replaced when lost (``reconnectIfLost()``).
    private var connection: PostgresConnection
    private let logger: Logger
    private let lock = NSLock()

    /// Connects and authenticates.
    /// - Throws: ``JournalError`` `unreachable` naming the host and port, `denied` for
    ///   credentials PostgreSQL refused.
    init(_ url: PostgresConnectionURL, logger: Logger) throws(JournalError) {
        self.url = url
        self.logger = logger
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database,
            tls: .disable)
        configuration.options.connectTimeout = .seconds(10)
        self.configuration = configuration
        do {
            connection = try PostgresConnection.connect(
                on: group.next(), configuration: configuration, id: 1, logger: logger
            ).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw Self.journalError(error, url: url, doing: "cannot connect to PostgreSQL")
        }
        self.group = group
    }

    /// Closes the connection and stops its event loop; again, nothing happens (a stopped
    /// event loop would never answer a second close).
    func close() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        try? connection.close().wait()
        try? group.syncShutdownGracefully()
    }

    /// Set by ``close()``; guarded by `lock`.
    private var closed = false

    /// How long a statement waits for its answer unless its call says otherwise: then the
    /// connection is given up for lost (a server that went away without closing it, or a
    /// network cut off).
    static let answerTimeout: Duration = .seconds(30)

    /// Runs one statement outside a transaction, waiting at most `answerTimeout` for its
    /// answer (and to connect again first).
    func run(
        _ query: PostgresQuery, doing: String, answerTimeout: Duration = PostgresSession.answerTimeout
    ) throws(JournalError) -> [PostgresRow] {
        lock.lock()
        defer { lock.unlock() }
        try reconnectIfLost(within: answerTimeout)
        do {
            return try execute(query, within: answerTimeout)
        } catch {
            throw Self.journalError(error, url: url, doing: doing)
        }
    }

    /// Runs `body` in one transaction (`BEGIN` … `COMMIT`, `ROLLBACK` if it throws). `body`
    /// runs its statements with the `execute` it is given; each waits at most `answerTimeout`
    /// for its answer.
    /// `timeoutsAreTransient`: a lock or statement timeout (SQLSTATE 55P03, 57014) fails
    /// `unreachable`, to be tried again, rather than `damaged` (for the lease's statements,
    /// which set those timeouts themselves).
    func transaction<T>(
        doing: String, answerTimeout: Duration = PostgresSession.answerTimeout, timeoutsAreTransient: Bool = false,
        _ body: ((PostgresQuery) throws -> [PostgresRow]) throws -> T
    ) throws(JournalError) -> T {
        lock.lock()
        defer { lock.unlock() }
        try reconnectIfLost(within: answerTimeout)
        let execute = { (query: PostgresQuery) throws -> [PostgresRow] in
            try self.execute(query, within: answerTimeout)
        }
        do {
            _ = try execute("BEGIN")
            do {
                let value = try body(execute)
                _ = try execute("COMMIT")
                return value
            } catch {
                _ = try? execute("ROLLBACK")
                throw error
            }
        } catch let error as JournalError {
            throw error
        } catch {
            throw Self.journalError(error, url: url, doing: doing, timeoutsAreTransient: timeoutsAreTransient)
        }
    }

    /// Set once a statement went unanswered: every later call fails at once.
    private var lost: String?

    /// Before a call (with `lock` held): a connection the server closed or that was given up
    /// is replaced by a new one, waiting at most `answerTimeout` (and 10 s) to connect.
    /// - Throws: ``JournalError`` `unreachable` (or `denied`) if the new connection fails;
    ///   the next call tries again.
    private func reconnectIfLost(within answerTimeout: Duration) throws(JournalError) {
        if closed { throw JournalError(.unusable, path: url.description, "the connection to PostgreSQL is closed") }
        guard lost != nil || connection.isClosed else { return }
        // The old connection lives until it is closed (it must not be released open).
        let old = connection
        let closing: EventLoopFuture<Void> = old.close()
        closing.whenComplete { _ in withExtendedLifetime(old) {} }
        var configuration = configuration
        let timeout = min(answerTimeout, .seconds(10))
        configuration.options.connectTimeout = .milliseconds(
            max(timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000, 1))
        do {
            connection = try PostgresConnection.connect(
                on: group.next(), configuration: configuration, id: 1, logger: logger
            ).wait()
            lost = nil
        } catch {
            throw Self.journalError(error, url: url, doing: "cannot connect to PostgreSQL again")
        }
    }

    private func execute(_ query: PostgresQuery, within answerTimeout: Duration) throws -> [PostgresRow] {
        if let lost { throw JournalError(.unreachable, path: url.description, lost) }
        let answered = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<[PostgresRow], any Error>?>(nil)
        connection.query(query, logger: logger).whenComplete { result in
            outcome.withLock { $0 = result.map(\.rows) }
            answered.signal()
        }
        let (seconds, attoseconds) = answerTimeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        guard answered.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success,
            let result = outcome.withLock({ $0 })
        else {
            let text =
                "PostgreSQL at \(url.host):\(url.port) did not answer within \(answerTimeout): the connection is "
                + "given up"
            lost = text
            let closing: EventLoopFuture<Void> = connection.close()
            closing.whenComplete { _ in }
            throw JournalError(.unreachable, path: url.description, text)
        }
        return try result.get()
    }

    /// What PostgreSQL's (or the connection's) error means for the journal, with the words.
    static func journalError(
        _ error: any Error, url: PostgresConnectionURL, doing: String, timeoutsAreTransient: Bool = false
    ) -> JournalError {
        let location = url.description
        guard let error = error as? PSQLError else {
            return JournalError(.unreachable, path: location, "\(doing) at \(url.host):\(url.port): \(error)")
        }
        if let server = error.serverInfo {
            let state = server[.sqlState] ?? ""
            let message = server[.message] ?? "error \(state)"
            switch state {
            case "28P01", "28000":
                return JournalError(
                    .denied, path: location,
                    "PostgreSQL at \(url.host):\(url.port) refused the credentials of user \"\(url.user)\": \(message)")
            case "3D000":
                return JournalError(
                    .unreachable, path: location, "PostgreSQL at \(url.host):\(url.port): \(message) (create it first)")
            case let code where code.hasPrefix("08") || code.hasPrefix("57P"):
                return JournalError(.unreachable, path: location, "\(doing) at \(url.host):\(url.port): \(message)")
            case "55P03",
                "57014" where timeoutsAreTransient:
                // lock_not_available, query_canceled of the lease's statements (their own lock
                // or statement timeout: a row another connection held too long): worth trying
                // again, as for a connection that failed; nothing about the journal is wrong.
                // Elsewhere (an operator's cancel, a server-wide timeout) they stay `damaged`.
                return JournalError(
                    .unreachable, path: location, "\(doing) at \(url.host):\(url.port): \(message) (SQLSTATE \(state))")
            default:
                return JournalError(.damaged, path: location, "\(doing): \(message) (SQLSTATE \(state))")
            }
        }
        let underlying = error.underlying.map { "\($0)" } ?? "\(error.code)"
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            return JournalError(.unreachable, path: location, "\(doing) at \(url.host):\(url.port): \(underlying)")
        default:
            return JournalError(.damaged, path: location, "\(doing): \(error.code): \(underlying)")
        }
    }
}

/// Multi-row statements: `VALUES (…), (…)` with their bindings, so that a batch's records of
/// one kind go to PostgreSQL in one round trip.
struct RowsStatement {
    /// The most rows in one statement (PostgreSQL takes at most 65,535 parameters).
    static let maxRows = 1000

    private(set) var values = ""
    private(set) var bindings = PostgresBindings()
    private(set) var rows = 0

    /// Adds a row: `template` is the row's text with one `?` per parameter (appended to
    /// `bindings` by `bind`), e.g. `(?, ?::text, 'pending')`.
    mutating func row(_ template: String, bind: (inout PostgresBindings) throws -> Void) rethrows {
        if rows > 0 { values += ", " }
        var index = bindings.count
        for character in template {
            if character == "?" {
                index += 1
                values += "$\(index)"
            } else {
                values.append(character)
            }
        }
        try bind(&bindings)
        rows += 1
    }

    /// The statement: `prefix`, the rows, `suffix`.
    func query(_ prefix: String, _ suffix: String = "") -> PostgresQuery {
        PostgresQuery(unsafeSQL: prefix + " " + values + " " + suffix, binds: bindings)
    }
}
