import CCohortSpawn
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The descriptors between the worker and a child: stdout and stderr pipes, and a
/// socket pair for stdin (a socket, so writes can say `MSG_NOSIGNAL` and a child that
/// exits without reading cannot kill the worker with SIGPIPE). Every descriptor is
/// close-on-exec; the child gets its ends through `dup2` (CCohortSpawn).
struct SpawnPipes {
    var stdoutRead: Int32 = -1, stdoutWrite: Int32 = -1
    var stderrRead: Int32 = -1, stderrWrite: Int32 = -1
    var stdinRead: Int32 = -1, stdinWrite: Int32 = -1

    init(stdin: Bool) throws(SpawnError) {
        do throws(SpawnError) {
            (stdoutRead, stdoutWrite) = try Self.makePipe()
            (stderrRead, stderrWrite) = try Self.makePipe()
            if stdin {
                var pair: [Int32] = [-1, -1]
                guard socketpair(AF_UNIX, Self.streamCloexec, 0, &pair) == 0 else {
                    throw SpawnError(
                        message: "cannot make a socket pair for stdin: \(String(cString: strerror(errno)))")
                }
                (stdinRead, stdinWrite) = (pair[0], pair[1])
            }
            for fd in [stdoutRead, stderrRead, stdinWrite] where fd >= 0 {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
        } catch {
            closeAll()
            throw error
        }
    }

    func closeChildEnds() {
        for fd in [stdoutWrite, stderrWrite, stdinRead] where fd >= 0 { close(fd) }
    }

    func closeAll() {
        for fd in [stdoutRead, stdoutWrite, stderrRead, stderrWrite, stdinRead, stdinWrite] where fd >= 0 { close(fd) }
    }

    #if os(Linux)
        private static let streamCloexec = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    #else
        private static let streamCloexec = SOCK_STREAM
    #endif

    private static func makePipe() throws(SpawnError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        let result: Int32
        if let pipe2 = SpawnSymbols.pipe2 {
            result = pipe2(&fds, O_CLOEXEC)
        } else {
            result = pipe(&fds)
            if result == 0 { for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) } }
        }
        guard result == 0 else { throw SpawnError(message: "cannot make a pipe: \(String(cString: strerror(errno)))") }
        return (fds[0], fds[1])
    }
}

/// glibc's GNU extensions the Swift Glibc module does not import (it is built without
/// `_GNU_SOURCE`), looked up once by name.
enum SpawnSymbols {
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32

    static let pipe2: Pipe2? = symbol("pipe2")

    private static func symbol<T>(_ name: String) -> T? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: T.self)
    }
}

/// The spawn of a child: `cohort_spawn` (CCohortSpawn) forks and execs with a new process
/// group, default signal dispositions and an empty signal mask, the pipes on 0/1/2, nothing
/// else inherited, the working directory, and (on Linux) `PR_SET_PDEATHSIG`: the child is
/// killed with SIGKILL when its parent dies, so a worker killed with `kill -9` does not leave
/// its shell commands running as orphans, perhaps inside a category the coordinator has
/// since granted to someone else.
///
/// The kernel ties that signal to the *thread* that forked, not the process: a child spawned
/// from a pool thread would be killed when the pool retires the thread. So every spawn runs
/// on ``SpawnThread``, one thread that lives as long as the process.
///
/// Only the direct child has the signal: a process it starts and does not `exec` into (a
/// shell's background job) is in the child's process group, which the worker signals when
/// it cancels, but not when the worker itself is killed (docs/worker.md).
enum SpawnCall {
    static func spawn(_ command: ShellCommand, pipes: SpawnPipes) throws(SpawnError) -> pid_t {
        let (pid, error, stage) = SpawnThread.shared.run {
            let argv = command.arguments.map { strdup($0) } + [nil]
            let envp = command.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer {
                for pointer in argv { free(pointer) }
                for pointer in envp { free(pointer) }
            }
            var error: Int32 = 0
            var stage: Int32 = 0
            let pid = cohort_spawn(
                command.executable, argv, envp, pipes.stdinRead, pipes.stdoutWrite, pipes.stderrWrite,
                command.directory, &error, &stage)
            return (pid, error, stage)
        }
        guard pid < 0 else { return pid }
        let program = command.arguments.first ?? command.executable
        let reason = String(cString: strerror(error))
        if stage == 1, let directory = command.directory {
            throw SpawnError(message: "cannot run \(program) in \(directory): \(reason)")
        }
        throw SpawnError(message: "cannot run \(program): \(reason)")
    }
}

/// The one thread that spawns the worker's children (see ``SpawnCall``): it runs each spawn
/// handed to it, one at a time, and never ends. A caller waits for its spawn (a fork and an
/// exec, a millisecond or less).
final class SpawnThread: Sendable {
    static let shared = SpawnThread()

    private let work = Mutex<[@Sendable () -> Void]>([])
    private let wake = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in
            while true {
                self.wake.wait()
                let jobs = self.work.withLock { jobs in
                    defer { jobs = [] }
                    return jobs
                }
                for job in jobs { job() }
            }
        }
        thread.name = "cohort-spawn"
        thread.start()
    }

    /// Runs `body` on the spawn thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<T?>(nil)
        work.withLock {
            $0.append {
                let value = body()
                result.withLock { $0 = value }
                done.signal()
            }
        }
        wake.signal()
        done.wait()
        return result.withLock { $0! }
    }
}
