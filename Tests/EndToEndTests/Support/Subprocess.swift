import Foundation

/// A process started by a test: spawned with `posix_spawn` in a process group of its own, its
/// stdout and stderr written to files (no pipe can fill up), stopped by pid.
///
/// Its environment carries `COHORT_E2E_TAG=<tag>`, which every process it starts inherits
/// (a worker's shell children too, although each runs in a process group of its own);
/// ``stop(grace:)`` kills whatever still carries the tag once the process itself is gone
/// (``Leftovers``), so nothing it started outlives it, even when it was killed with SIGKILL.
///
/// Thread-safety: used from one test at a time; `stop()` is idempotent.
final class Subprocess: @unchecked Sendable {
    // @unchecked: `status` is only read and written under `lock`; the rest is immutable.
    let pid: pid_t
    let name: String
    /// The value of `COHORT_E2E_TAG` in its environment (and its descendants').
    let tag: String
    /// Whether ``stop(grace:)`` kills what carries ``tag``: yes for a tag of its own; no for a
    /// tag given by the caller (processes meant to outlive it, swept by the caller).
    private let ownsTag: Bool
    let stdoutPath: String
    let stderrPath: String
    private let lock = NSLock()
    private var status: Int32?

    /// Starts `executable` with `arguments`.
    init(
        _ executable: String, _ arguments: [String], name: String? = nil, environment: [String: String] = [:],
        tag: String? = nil
    ) throws {
        self.tag = tag ?? Leftovers.newTag()
        ownsTag = tag == nil
        self.name = name ?? ([(executable as NSString).lastPathComponent] + arguments.prefix(1)).joined(separator: " ")
        let directory = Scratch.directory
        let stem =
            "\(directory)/\(UUID().uuidString.prefix(8))-\((self.name).replacingOccurrences(of: " ", with: "-").replacingOccurrences(of: "/", with: "_"))"
        stdoutPath = stem + ".out"
        stderrPath = stem + ".err"

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF))

        var env = ProcessInfo.processInfo.environment
        env["COHORT_COORDINATOR"] = nil  // tests always say which coordinator they mean
        for (key, value) in environment { env[key] = value }
        env[Leftovers.variable] = self.tag
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw TestFailure("cannot start \(executable): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    /// The exit status once the process has ended (128 + signal when killed); `nil` while running.
    var exitStatus: Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == pid {
            let signal = raw & 0x7f
            status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        } else if result < 0 {
            status = -1
        }
        return status
    }

    var isRunning: Bool { exitStatus == nil }

    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Waits until the process exits, at most `timeout`; kills it (and fails) if it does not.
    @discardableResult
    func wait(timeout: Duration) throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = exitStatus { return status }
            usleep(5_000)
        }
        stop()
        throw TestFailure("\(name) did not exit within \(timeout); stderr:\n\(stderr)")
    }

    /// Waits until a line of stdout satisfies `match`; returns what it extracted.
    func waitForLine<T>(timeout: Duration, _ match: (String) -> T?) throws -> T {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            for line in stdout.split(separator: "\n") {
                if let found = match(String(line)) { return found }
            }
            if !isRunning {
                throw TestFailure("\(name) exited (\(exitStatus ?? -1)) before saying it was ready; stderr:\n\(stderr)")
            }
            usleep(10_000)
        }
        throw TestFailure("\(name) did not say it was ready within \(timeout); stderr:\n\(stderr)")
    }

    /// SIGTERM, then SIGKILL after `grace`; returns once the process is reaped and (tag of its
    /// own) every process carrying its tag, what it started in any process group, is killed.
    /// Idempotent.
    func stop(grace: Duration = .seconds(5)) {
        if isRunning {
            kill(pid, SIGTERM)
            let deadline = ContinuousClock.now + grace
            while isRunning, ContinuousClock.now < deadline { usleep(5_000) }
            if isRunning {
                kill(pid, SIGKILL)
                while isRunning { usleep(5_000) }
            }
        }
        if ownsTag { Leftovers.sweep(tags: [tag]) }
    }
}

/// Processes left behind by the processes a test started, found by the `COHORT_E2E_TAG`
/// variable they inherited (`/proc/PID/environ`, Linux): only ours, by pid.
enum Leftovers {
    static let variable = "COHORT_E2E_TAG"

    /// A tag no other test process or run uses.
    static func newTag() -> String { "\(getpid())-\(UUID().uuidString.prefix(12))" }

    /// The live processes (zombies excluded) whose environment carries one of `tags`.
    static func pids(tags: Set<String>) -> [pid_t] {
        guard !tags.isEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else {
            return []
        }
        let wanted = Set(tags.map { Array("\(variable)=\($0)".utf8) })
        let own = getpid()
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), pid != own else { return nil }
            let environ = contents("/proc/\(entry)/environ")
            return environ.split(separator: 0).contains { wanted.contains(Array($0)) } ? pid : nil
        }
    }

    /// The bytes of a /proc file (its size says 0, so read to the end); empty if unreadable.
    private static func contents(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return bytes }
            bytes += buffer[0..<count]
        }
    }

    /// SIGKILLs every process carrying one of `tags` until none is left (a shell may fork
    /// while we look); gives up after `timeout` and returns the pids still there.
    @discardableResult
    static func sweep(tags: Set<String>, timeout: Duration = .seconds(10)) -> [pid_t] {
        let deadline = ContinuousClock.now + timeout
        var left = pids(tags: tags)
        while !left.isEmpty, ContinuousClock.now < deadline {
            for pid in left { kill(pid, SIGKILL) }
            usleep(2_000)
            left = pids(tags: tags)
        }
        return left
    }
}

/// The outcome of a short `cohort` command.
struct CommandResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    var elapsed: Duration

    var description: String { "exit \(status) after \(elapsed)\nstdout:\n\(stdout)\nstderr:\n\(stderr)" }
}

/// Runs `cohort` with `arguments` to completion (killed after `timeout`).
func cohort(_ arguments: [String], timeout: Duration = .seconds(60), environment: [String: String] = [:]) throws
    -> CommandResult
{
    let start = ContinuousClock.now
    let process = try Subprocess(Binaries.cohort, arguments, environment: environment)
    defer { process.stop() }
    let status = try process.wait(timeout: timeout)
    return CommandResult(
        status: status, stdout: process.stdout, stderr: process.stderr, elapsed: ContinuousClock.now - start)
}

/// A failure in the test machinery itself, with a message.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A directory for the tests' files (process output, specs, records), one per test run,
/// removed when the test process exits; one left by a run that died (its pid no longer
/// running) is removed when the next run starts.
enum Scratch {
    static let prefix = "cohort-e2e-"

    static let directory: String = {
        let temporary = FileManager.default.temporaryDirectory.path
        removeStale(in: temporary)
        let path = "\(temporary)/\(prefix)\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: Scratch.directory) }
        return path
    }()

    /// Removes the `cohort-e2e-PID` directories of test runs whose pid is no longer running.
    private static func removeStale(in temporary: String) {
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
        where entry.hasPrefix(prefix) {
            guard let pid = pid_t(entry.dropFirst(prefix.count)), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(atPath: "\(temporary)/\(entry)")
        }
    }

    /// A new file path in the scratch directory.
    static func file(_ name: String) -> String {
        "\(directory)/\(UUID().uuidString.prefix(8))-\(name)"
    }

    /// Writes `text` to a new file and returns its path.
    static func write(_ text: String, name: String) throws -> String {
        let path = file(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
