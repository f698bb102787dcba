#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The descriptors between the worker and a child: stdout and stderr pipes, and a
/// socket pair for stdin (a socket, so writes can say `MSG_NOSIGNAL` and a child that
/// exits without reading cannot kill the worker with SIGPIPE). Every descriptor is
/// close-on-exec; the child gets its ends through `dup2` in the spawn's file actions.
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
    typealias AddChdir =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    static let pipe2: Pipe2? = symbol("pipe2")
    /// glibc 2.29+.
    static let addChdir: AddChdir? = symbol("posix_spawn_file_actions_addchdir_np")
    /// glibc 2.34+: closes every inherited descriptor from 3 up in the child.
    static let addCloseFrom: AddCloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np")

    private static func symbol<T>(_ name: String) -> T? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: T.self)
    }
}

/// The `posix_spawn` call: a new process group, default signal dispositions and an empty
/// signal mask, the pipes on 0/1/2, nothing else inherited, the working directory.
enum SpawnCall {
    static func spawn(_ command: ShellCommand, pipes: SpawnPipes) throws(SpawnError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if pipes.stdinRead >= 0 {
            posix_spawn_file_actions_adddup2(&actions, pipes.stdinRead, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, pipes.stdoutWrite, 1)
        posix_spawn_file_actions_adddup2(&actions, pipes.stderrWrite, 2)
        if let addCloseFrom = SpawnSymbols.addCloseFrom { _ = addCloseFrom(&actions, 3) }
        if let directory = command.directory {
            guard let addChdir = SpawnSymbols.addChdir else {
                throw SpawnError(message: "this system's posix_spawn cannot set a working directory")
            }
            _ = addChdir(&actions, directory)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [
            SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU,
        ] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)

        let argv = command.arguments.map { strdup($0) } + [nil]
        let envp = command.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command.executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            let program = command.arguments.first ?? command.executable
            let reason = String(cString: strerror(result))
            if result == ENOENT, command.directory != nil {
                throw SpawnError(message: "cannot run \(program) in \(command.directory!): \(reason)")
            }
            throw SpawnError(message: "cannot run \(program): \(reason)")
        }
        return pid
    }
}
