import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a child's I/O thread does: feed stdin, capture stdout and stderr, reap the child,
/// and after a termination wait until the whole process group is gone.
///
/// Runs on a thread of its own (it blocks in `poll` and `waitid`), never on a Swift
/// concurrency pool thread.
struct SubprocessIO: Sendable {
    let pid: pid_t
    let stdout: Int32
    let stderr: Int32
    /// The worker's end of the stdin socket, or -1 (the child reads /dev/null).
    let stdin: Int32
    let input: [UInt8]
    let maxOutput: Int
    /// How long to wait for a terminated child's group to vanish after the leader exits:
    /// the kill grace and a little more, so a SIGKILL after the grace is waited for.
    let groupWait: Duration
    /// Gets every chunk read from stdout (`false`) or stderr (`true`) as it is read, for the
    /// attempt's log; it may block (backpressure) while `mayWait` says so.
    var log: (@Sendable (_ isStderr: Bool, _ bytes: UnsafeRawBufferPointer, _ mayWait: () -> Bool) -> Void)?

    /// How often to look whether the child exited while something else holds its pipes open.
    private static let exitCheckInterval: Int32 = 100

    func run(terminating: () -> Bool) -> Subprocess.Termination {
        let mayWait = { !terminating() }
        var output = TailBuffer(limit: maxOutput)
        var errors = TailBuffer(limit: maxOutput)
        var openOut = stdout
        var openErr = stderr
        var openIn = stdin
        var written = 0
        if openIn >= 0, input.isEmpty { closeDescriptor(&openIn) }

        while openOut >= 0 || openErr >= 0 || openIn >= 0 {
            var items: [pollfd] = []
            for fd in [openOut, openErr] where fd >= 0 {
                items.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
            }
            if openIn >= 0 { items.append(pollfd(fd: openIn, events: Int16(POLLOUT), revents: 0)) }
            let ready = poll(&items, nfds_t(items.count), Self.exitCheckInterval)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if ready == 0 {
                // Something outside the child (a daemonised grandchild) may hold the pipes
                // open: once the child itself has exited, take what is there and stop.
                if leaderHasExited() {
                    drain(&openOut, into: &output, isStderr: false, mayWait: mayWait)
                    drain(&openErr, into: &errors, isStderr: true, mayWait: mayWait)
                    break
                }
                continue
            }
            for item in items where item.revents != 0 {
                if item.fd == openOut {
                    drain(&openOut, into: &output, isStderr: false, mayWait: mayWait)
                } else if item.fd == openErr {
                    drain(&openErr, into: &errors, isStderr: true, mayWait: mayWait)
                } else if item.fd == openIn {
                    feed(&openIn, written: &written)
                }
            }
        }
        for fd in [openOut, openErr, openIn] where fd >= 0 { close(fd) }

        let status = reap()
        if terminating() { waitForGroupToVanish() }
        let (stdoutBytes, droppedOut) = output.finish()
        let (stderrBytes, droppedErr) = errors.finish()
        return Subprocess.Termination(
            status: status, stdout: stdoutBytes, stderr: stderrBytes, droppedStdout: droppedOut,
            droppedStderr: droppedErr)
    }

    /// Reads everything available; closes the descriptor at end of file or on an error.
    private func drain(_ fd: inout Int32, into buffer: inout TailBuffer, isStderr: Bool, mayWait: () -> Bool) {
        guard fd >= 0 else { return }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                chunk.withUnsafeBytes { bytes in
                    let read = UnsafeRawBufferPointer(rebasing: bytes.prefix(count))
                    buffer.append(read)
                    log?(isStderr, read, mayWait)
                }
                continue
            }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { return }
            closeDescriptor(&fd)
            return
        }
    }

    /// Writes as much of stdin as the socket takes; closes it when all is written or the
    /// child stopped reading.
    private func feed(_ fd: inout Int32, written: inout Int) {
        while written < input.count {
            let count = input.withUnsafeBytes { bytes in
                send(fd, bytes.baseAddress! + written, bytes.count - written, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                written += count
                continue
            }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { return }
            break  // EPIPE, ECONNRESET: the child does not read any more
        }
        closeDescriptor(&fd)
    }

    private func closeDescriptor(_ fd: inout Int32) {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    /// Whether the child has exited, without reaping it.
    private func leaderHasExited() -> Bool {
        var info = siginfo_t()
        let result = waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT)
        return result == 0 && Self.pid(of: info) == pid
    }

    /// Waits for the child to exit and reaps it.
    private func reap() -> Subprocess.Termination.Status {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return .exited(-1) }
        }
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
    }

    /// After a termination: waits, bounded by ``groupWait``, until no live process of the
    /// group is left (the SIGKILL after the grace takes care of those that ignore SIGTERM).
    /// Members that became the worker's children (when it is a container's PID 1 or a
    /// subreaper) are reaped on the way, so they do not linger as zombies.
    private func waitForGroupToVanish() {
        let deadline = ContinuousClock.now + groupWait
        while ProcessGroup.hasLiveMembers(pid) {
            var status: Int32 = 0
            while waitpid(-pid, &status, WNOHANG) > 0 {}
            if ContinuousClock.now >= deadline { return }
            usleep(5_000)
        }
    }

    private static func pid(of info: siginfo_t) -> pid_t {
        #if os(Linux)
            info._sifields._sigchld.si_pid
        #else
            info.si_pid
        #endif
    }
}

/// Keeps the last `limit` bytes appended.
struct TailBuffer {
    let limit: Int
    private var bytes: [UInt8] = []
    private var dropped = 0

    init(limit: Int) { self.limit = limit }

    mutating func append(_ chunk: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: chunk)
        // Trim only once twice the limit is reached, so trimming costs O(1) per byte.
        if bytes.count > 2 * limit { trim() }
    }

    /// The kept bytes and how many were dropped before them.
    mutating func finish() -> ([UInt8], Int) {
        trim()
        return (bytes, dropped)
    }

    private mutating func trim() {
        guard bytes.count > limit else { return }
        let excess = bytes.count - limit
        bytes.removeFirst(excess)
        dropped += excess
    }
}

/// Whether a process group still has a process that is not a zombie.
enum ProcessGroup {
    static func hasLiveMembers(_ group: pid_t) -> Bool {
        guard kill(-group, 0) == 0 || errno == EPERM else { return false }
        #if os(Linux)
            // A zombie still counts for kill(2); /proc tells them apart.
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return true }
            for entry in entries where entry.first?.isNumber == true {
                guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { continue }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                // After the command: state, ppid, pgrp, …
                guard fields.count > 2, Int32(fields[2]) == group else { continue }
                if fields[0] != "Z" && fields[0] != "X" { return true }
            }
            return false
        #else
            return true
        #endif
    }
}
