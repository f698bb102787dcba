import Foundation
import Testing

/// CURVE keys made with `cohort keygen` in a scratch directory: the coordinator's, and one per
/// named peer; `authorized` is the coordinator's authorised-keys directory.
struct Keys {
    let directory: String
    var authorized: String { "\(directory)/authorized" }

    /// Makes the coordinator's key and, for each `(name, role)`, a key authorised at once.
    init(_ peers: [(String, String)], unauthorized: [(String, String)] = []) throws {
        directory = Scratch.file("keys")
        try FileManager.default.createDirectory(atPath: "\(directory)/authorized", withIntermediateDirectories: true)
        try Self.keygen(["--out", directory, "--role", "coordinator"])
        for (name, role) in peers + unauthorized {
            try Self.keygen(["--out", directory, "--role", role, "--name", name])
        }
        for (name, _) in peers { try authorize(name) }
    }

    private static func keygen(_ arguments: [String]) throws {
        let result = try cohort(["keygen"] + arguments)
        guard result.status == 0 else { throw TestFailure("keygen failed: \(result)") }
    }

    func authorize(_ name: String) throws {
        try FileManager.default.copyItem(atPath: "\(directory)/\(name).pub", toPath: "\(authorized)/\(name).pub")
    }

    func revoke(_ name: String) throws {
        try FileManager.default.removeItem(atPath: "\(authorized)/\(name).pub")
    }

    /// The coordinator's flags.
    var coordinator: [String] { ["--key", "\(directory)/coordinator.key", "--authorized-keys", authorized] }

    /// A worker's or client command's flags for the key `name`.
    func peer(_ name: String) -> [String] {
        ["--key", "\(directory)/\(name).key", "--server-key", "\(directory)/coordinator.pub"]
    }
}

extension Subprocess {
    /// Waits until stderr has a line containing `text` (a log line), at most `timeout`.
    func waitForStderr(containing text: String, timeout: Duration = .seconds(20)) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if stderr.contains(text) { return }
            if !isRunning {
                throw TestFailure("\(name) exited (\(exitStatus ?? -1)) before logging \"\(text)\"; stderr:\n\(stderr)")
            }
            usleep(10_000)
        }
        throw TestFailure("\(name) did not log \"\(text)\" within \(timeout); stderr:\n\(stderr)")
    }
}
