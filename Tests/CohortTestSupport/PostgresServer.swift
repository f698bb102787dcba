import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL server of the tests' own: `initdb` in a new temporary directory, `postgres`
/// on a free port of 127.0.0.1 only (its socket in that directory too), run as `nobody` when
/// the tests run as root (CI does; PostgreSQL refuses root), with a superuser `cohort` whose
/// password is ``password``. ``shared`` starts one for the whole test process, lazily; each
/// test takes a database of its own (``makeDatabase()``). The server is stopped by its pid and
/// its directory removed when the process exits (``stop()``, registered with `atexit`), also
/// after a failed test.
///
/// The binaries are found on PATH or in Debian's `/usr/lib/postgresql/VERSION/bin`
/// (`scripts/bootstrap --tests` installs Debian's `postgresql`).
public final class PostgresServer: @unchecked Sendable {
    // @unchecked Sendable: `process` is set once in init; `lock` guards `databases` and `stopped`.
    public let port: Int
    public let directory: URL
    public static let user = "cohort"
    public static let password = "cohort-test"
    private let process: Process
    private let bin: URL
    private let lock = NSLock()
    private var databases = 0
    private var stopped = false

    /// The server of this test process, started on first use.
    public static var shared: PostgresServer {
        get throws {
            try sharedServer.get()
        }
    }

    private static let sharedServer: Result<PostgresServer, any Error> = {
        let result = Result { try PostgresServer() }
        if case .success = result { atexit { try? PostgresServer.shared.stop() } }
        return result
    }()

    /// Starts a new server and waits (up to 60 s) until it accepts connections.
    public init() throws {
        let bin = try Self.binaries()
        // As root, under /tmp: `nobody` must reach it (TMPDIR may be under /root).
        let temporary = getuid() == 0 ? URL(fileURLWithPath: "/tmp") : FileManager.default.temporaryDirectory
        let directory = temporary.appendingPathComponent("cohort-pg-\(UUID().uuidString)")
        self.bin = bin
        self.directory = directory
        let data = directory.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var started = false
        defer { if !started { try? FileManager.default.removeItem(at: directory) } }
        let passwordFile = directory.appendingPathComponent("password")
        try Data(Self.password.utf8).write(to: passwordFile)
        if getuid() == 0 {
            try Self.run("/bin/chown", ["-R", "nobody:nogroup", directory.path])
        }
        try Self.run(
            bin.appendingPathComponent("initdb").path,
            [
                "-D", data.path, "-U", Self.user, "--pwfile", passwordFile.path, "--auth-local=trust",
                "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C",
            ], unprivileged: true)
        var chosen = 0
        var server: Process?
        // A port free a moment ago may be taken meanwhile: try a few.
        for _ in 0..<5 {
            chosen = try freeTCPPort()
            let candidate = try Self.start(
                bin.appendingPathComponent("postgres").path,
                [
                    "-D", data.path, "-p", String(chosen), "-c", "listen_addresses=127.0.0.1", "-k", directory.path,
                    "-c", "fsync=off", "-c", "max_connections=200",
                ],
                log: directory.appendingPathComponent("server.log"))
            if try Self.waitUntilReady(candidate, bin: bin, port: chosen) {
                server = candidate
                break
            }
            if candidate.isRunning { kill(candidate.processIdentifier, SIGQUIT) }
            candidate.waitUntilExit()
        }
        guard let server else {
            let log = (try? String(contentsOf: directory.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
            throw PostgresServerError("PostgreSQL did not start: \(log.suffix(2000))")
        }
        process = server
        port = chosen
        started = true
    }

    /// A new, empty database; its URL `postgres://cohort:PASSWORD@127.0.0.1:PORT/NAME`.
    public func makeDatabase() throws -> String {
        let name = lock.withLock {
            databases += 1
            return "cohort_test_\(getpid())_\(databases)"
        }
        try Self.run(
            bin.appendingPathComponent("createdb").path,
            ["-h", directory.path, "-p", String(port), "-U", Self.user, name])
        return url(database: name)
    }

    /// The URL of `database` on this server, with `password` (the right one by default).
    public func url(database: String, password: String = PostgresServer.password) -> String {
        "postgres://\(Self.user):\(password)@127.0.0.1:\(port)/\(database)"
    }

    /// Runs `sql` in `database` with psql over the server's socket; returns its output.
    @discardableResult
    public func psql(_ sql: String, database: String) throws -> String {
        let psql = bin.appendingPathComponent("psql")
        let path = FileManager.default.isExecutableFile(atPath: psql.path) ? psql.path : "/usr/bin/psql"
        return try Self.run(
            path,
            [
                "-h", directory.path, "-p", String(port), "-U", Self.user, "-d", database, "-XAtq", "-v",
                "ON_ERROR_STOP=1",
                "-c", sql,
            ])
    }

    /// Stops the server by its pid (a fast shutdown, then SIGKILL after 10 s) and removes its
    /// directory. Safe to call again.
    public func stop() throws {
        let first = lock.withLock {
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        let pid = process.processIdentifier
        if process.isRunning { kill(pid, SIGINT) }
        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning, ContinuousClock.now < deadline { sleepBriefly(.milliseconds(10)) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Processes

    private static func binaries() throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        var candidates = path.split(separator: ":").map { URL(fileURLWithPath: String($0)) }
        if let versions = try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql") {
            for version in versions.sorted(by: >) {
                candidates.append(URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin"))
            }
        }
        for directory in candidates {
            let initdb = directory.appendingPathComponent("initdb").resolvingSymlinksInPath()
            if FileManager.default.isExecutableFile(atPath: initdb.path) {
                return initdb.deletingLastPathComponent()
            }
        }
        throw PostgresServerError(
            "PostgreSQL's initdb is not on PATH nor in /usr/lib/postgresql/*/bin: run scripts/bootstrap --tests")
    }

    /// `arguments` as `nobody` when running as root.
    private static func command(_ executable: String, _ arguments: [String], unprivileged: Bool) -> (String, [String]) {
        guard unprivileged, getuid() == 0 else { return (executable, arguments) }
        return (
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", executable] + arguments
        )
    }

    @discardableResult
    private static func run(_ executable: String, _ arguments: [String], unprivileged: Bool = false) throws -> String {
        let (path, arguments) = command(executable, arguments, unprivileged: unprivileged)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw PostgresServerError("\(executable) \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }

    private static func start(_ executable: String, _ arguments: [String], log: URL) throws -> Process {
        let (path, arguments) = command(executable, arguments, unprivileged: true)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? handle.close()
        return process
    }

    /// Polls `pg_isready` until the server accepts connections; false if it exited.
    private static func waitUntilReady(_ server: Process, bin: URL, port: Int) throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            guard server.isRunning else { return false }
            let check = Process()
            check.executableURL = bin.appendingPathComponent("pg_isready")
            check.arguments = ["-q", "-h", "127.0.0.1", "-p", String(port)]
            check.standardOutput = FileHandle.nullDevice
            check.standardError = FileHandle.nullDevice
            try check.run()
            check.waitUntilExit()
            if check.terminationStatus == 0 { return true }
            sleepBriefly(.milliseconds(20))
        }
        throw PostgresServerError("PostgreSQL did not accept connections on 127.0.0.1:\(port) within 60 s")
    }
}

/// Why the tests' PostgreSQL server cannot be had.
public struct PostgresServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
