import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The coordinator's state directory: the journal and the lock file that keeps a second
/// coordinator out of it.
///
/// The lock is an exclusive `flock` on `coordinator.lock`, which also holds the owner's pid for
/// the error message; the kernel releases it when the process ends, however it ends, so a
/// coordinator killed with `kill -9` never leaves a stale lock behind.
public final class StateDirectory: Sendable {
    /// The directory.
    public let path: String
    /// The lock file's descriptor, held open (and locked) for the life of this value.
    private let lockDescriptor: Int32

    /// `path/journal.sqlite`.
    public var journalPath: String { path + "/journal.sqlite" }
    /// `path/coordinator.lock`.
    public var lockPath: String { path + "/coordinator.lock" }

    /// The state directory of a coordinator run by hand: `$XDG_STATE_HOME/cohort`, else
    /// `~/.local/state/cohort`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/cohort" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/state/cohort"
    }

    /// Creates the directory if needed (mode 0700) and takes its lock.
    /// - Throws: ``JournalError`` `locked` naming the other coordinator's pid, `unusable` if the
    ///   directory or lock file cannot be created.
    public init(path: String) throws(JournalError) {
        let path = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        self.path = path
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw JournalError(
                .unusable, path: path, "cannot create the state directory: \(error.localizedDescription)")
        }
        let lockPath = path + "/coordinator.lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw JournalError(
                .unusable, path: lockPath, "cannot open the lock file: \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &buffer, 31, 0)
            close(descriptor)
            guard reason == EWOULDBLOCK else {
                throw JournalError(.unusable, path: lockPath, "cannot lock: \(String(cString: strerror(reason)))")
            }
            let pid = String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw JournalError(
                .locked, path: path,
                "the state directory is in use by another coordinator (pid \(pid.isEmpty ? "unknown" : pid)); "
                    + "stop it or give this one another --state-dir")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pwrite(descriptor, pid, pid.count, 0)
        lockDescriptor = descriptor
    }

    deinit {
        _ = flock(lockDescriptor, LOCK_UN)
        close(lockDescriptor)
    }
}
