import Foundation
import Synchronization

/// A process this command started (the demo's coordinator and workers), in a process group of
/// its own so that a Ctrl-C on the terminal reaches only this command, which then stops its
/// children in order.
///
/// Its stdout is read line by line on a thread of its own (``lines``) and copied, with stderr,
/// to a log file. Stopping is by pid: SIGTERM, then SIGKILL after a grace period.
final class ChildProcess: Sendable {
    /// A short name for messages, e.g. `worker alpha`.
    let name: String
    let pid: pid_t
    /// The child's stdout, line by line; ends when the child closes it.
    let lines: AsyncStream<String>
    private let exitStatus = Mutex<Int32?>(nil)

    private init(name: String, pid: pid_t, lines: AsyncStream<String>) {
        self.name = name
        self.pid = pid
        self.lines = lines
    }

    /// Starts `executable` with `arguments`; stdout and stderr are appended to `logFile`
    /// (stdout also feeds ``lines``).
    /// - Throws: `POSIXError`-style `CocoaError` when the log file or the process cannot be made.
    static func spawn(name: String, executable: String, arguments: [String], logFile: String) throws -> ChildProcess {
        let log = open(logFile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard log >= 0 else {
            throw SpawnError(name: name, reason: "cannot open \(logFile): \(String(cString: strerror(errno)))")
        }
        defer { close(log) }
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            throw SpawnError(name: name, reason: "pipe: \(String(cString: strerror(errno)))")
        }
        let (readEnd, writeEnd) = (pipeFDs[0], pipeFDs[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, log, 2)
        posix_spawn_file_actions_addclose(&actions, writeEnd)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own; default signal handling and an empty mask (this process
        // ignores SIGINT/SIGTERM while its trap is installed, and children inherit that otherwise).
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGPIPE)
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        close(writeEnd)
        guard rc == 0 else {
            close(readEnd)
            throw SpawnError(name: name, reason: "cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        let (lines, continuation) = AsyncStream<String>.makeStream()
        let logCopy = dup(log)
        let reader = Thread {
            LineReader.pump(from: readEnd, copyTo: logCopy) { continuation.yield($0) }
            close(readEnd)
            close(logCopy)
            continuation.finish()
        }
        reader.name = "cohort-\(name)-stdout"
        reader.start()
        return ChildProcess(name: name, pid: pid, lines: lines)
    }

    /// Waits for a stdout line satisfying `match` and returns what `match` extracted from it.
    /// - Throws: ``SpawnError`` if the child ends its stdout (exits) or `timeout` passes first.
    func firstLine<T: Sendable>(within timeout: Duration, _ match: @escaping @Sendable (String) -> T?) async throws -> T
    {
        let lines = self.lines
        let name = self.name
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask {
                for await line in lines {
                    if let found = match(line) { return found }
                }
                return nil
            }
            tasks.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { tasks.cancelAll() }
            guard let first = try await tasks.next(), let found = first else {
                throw SpawnError(
                    name: name, reason: "did not say it was ready within \(timeout) (it may have exited; see its log)")
            }
            return found
        }
    }

    /// Whether the process has exited (and was reaped by this object).
    var hasExited: Bool { reap() != nil }

    /// The exit status once reaped: the code, or 128 + the signal that ended it.
    @discardableResult
    func reap() -> Int32? {
        exitStatus.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            let result = waitpid(pid, &raw, WNOHANG)
            if result == pid {
                let signal = raw & 0x7f
                status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            } else if result < 0 {
                status = -1  // not our child any more (already reaped elsewhere)
            }
            return status
        }
    }

    /// SIGTERM, then SIGKILL if the process still runs after `grace`; returns once it is reaped.
    func stop(grace: Duration) async {
        guard !hasExited else { return }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline {
            if hasExited { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
        kill(pid, SIGKILL)
        while !hasExited {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// A child that could not be started or did not become ready.
struct SpawnError: Error, CustomStringConvertible {
    var name: String
    var reason: String
    var description: String { "\(name): \(reason)" }
}

/// Reads a file descriptor to its end, line by line.
enum LineReader {
    static func pump(from fd: Int32, copyTo copy: Int32, _ line: (String) -> Void) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            if copy >= 0 { _ = buffer.withUnsafeBytes { write(copy, $0.baseAddress, count) } }
            pending.append(contentsOf: buffer[0..<count])
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                line(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
        }
        if !pending.isEmpty { line(String(decoding: pending, as: UTF8.self)) }
    }
}
