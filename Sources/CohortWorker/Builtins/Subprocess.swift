import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process in a process group of its own, with its stdout and stderr captured
/// (the last bytes, bounded) by a thread of its own.
///
/// The thread writes stdin, reads both pipes until they close, waits for the process,
/// and, when the process was terminated, waits until its whole process group is gone.
/// ``terminate(grace:)`` sends SIGTERM to the group and SIGKILL after the grace.
///
/// Thread-safety: `Sendable`; state is behind a `Mutex`; signals are sent only while the
/// process group is known to exist (never to a recycled process id).
final class Subprocess: Sendable {
    /// How the process ended and what it wrote.
    struct Termination: Sendable {
        enum Status: Sendable, Equatable {
            case exited(Int32)
            case signalled(Int32)
        }

        var status: Status
        var stdout: [UInt8]
        var stderr: [UInt8]
        /// Bytes dropped from the front of stdout and stderr because of the capture limit.
        var droppedStdout: Int
        var droppedStderr: Int
    }

    private struct State {
        var termination: Termination?
        var waiter: CheckedContinuation<Termination, Never>?
        var terminateRequested = false
        /// Set once nothing of the group is left to signal (or the thread gave up waiting).
        var finished = false
    }

    /// The process id, which is also its process group's id.
    let pid: pid_t
    private let state = Mutex(State())

    private init(pid: pid_t) {
        self.pid = pid
    }

    /// Starts `command`; its I/O thread starts with it.
    ///
    /// - Throws: ``SpawnError`` if a pipe cannot be made or `posix_spawn` fails (no such
    ///   program, not executable, no such directory).
    static func spawn(
        _ command: ShellCommand, maxOutput: Int, killGrace: Duration,
        log: (@Sendable (_ isStderr: Bool, _ bytes: UnsafeRawBufferPointer, _ mayWait: () -> Bool) -> Void)? = nil
    ) throws(SpawnError) -> Subprocess {
        let pipes = try SpawnPipes(stdin: command.stdin != nil)
        let pid: pid_t
        do {
            pid = try SpawnCall.spawn(command, pipes: pipes)
        } catch {
            pipes.closeAll()
            throw error
        }
        pipes.closeChildEnds()
        let process = Subprocess(pid: pid)
        let io = SubprocessIO(
            pid: pid, stdout: pipes.stdoutRead, stderr: pipes.stderrRead, stdin: pipes.stdinWrite,
            input: command.stdin.map { Array($0.utf8) } ?? [], maxOutput: maxOutput,
            groupWait: killGrace + .seconds(2), log: log)
        let thread = Thread { [process] in
            let termination = io.run(terminating: { process.isTerminating })
            process.didTerminate(termination)
        }
        thread.name = "cohort-shell-\(pid)"
        thread.start()
        return process
    }

    /// Waits until the process has ended (and, if it was terminated, its group is gone).
    /// Call it once.
    func wait() async -> Termination {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Termination? in
                if let termination = state.termination { return termination }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Sends SIGTERM to the process group now and SIGKILL after `grace` if anything of it is
    /// left. Idempotent, except that a zero grace after a graceful terminate kills at once.
    func terminate(grace: Duration) {
        let first = state.withLock { state -> Bool in
            guard !state.terminateRequested, !state.finished else { return false }
            state.terminateRequested = true
            return true
        }
        guard first else {
            if grace == .zero { signalGroup(SIGKILL) }
            return
        }
        signalGroup(grace > .zero ? SIGTERM : SIGKILL)
        guard grace > .zero else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(grace.nanoseconds))) { [self] in
            signalGroup(SIGKILL)
        }
    }

    private var isTerminating: Bool { state.withLock { $0.terminateRequested } }

    /// Signals the group unless the I/O thread has seen the last of it.
    private func signalGroup(_ signal: Int32) {
        state.withLock { state in
            // Under the lock: `finished` is set under it too, so the group id cannot have
            // been given up (and recycled) between the check and the kill.
            guard !state.finished else { return }
            _ = kill(-pid, signal)
        }
    }

    private func didTerminate(_ termination: Termination) {
        let waiter = state.withLock { state in
            state.finished = true
            state.termination = termination
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: termination)
    }
}

extension Duration {
    /// The duration in whole nanoseconds (clamped to `Int64`).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (seconds < 0 ? .min : .max) : product &+ attoseconds / 1_000_000_000
    }
}

/// Why a process could not be started.
struct SpawnError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
