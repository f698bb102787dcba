import ArgumentParser
import CohortClient
import Logging

/// The exit statuses of docs/cli.md (sysexits).
enum ExitStatus {
    static let success: Int32 = 0
    static let groupFailed: Int32 = 1
    static let groupCancelled: Int32 = 3
    static let usage: Int32 = 64
    static let invalidSpec: Int32 = 65
    static let unavailable: Int32 = 69
    static let software: Int32 = 70
    static let permission: Int32 = 77

    /// 0 succeeded, 1 failed, 3 cancelled; 0 for a group still running.
    static func of(_ state: GroupState) -> Int32 {
        switch state {
        case .succeeded, .pending, .running: success
        case .failed: groupFailed
        case .cancelled: groupCancelled
        }
    }
}

/// Connects, runs `body` and closes; a ``ClientError`` is printed on stderr and becomes the
/// command's exit status. Every client command's `run()` goes through here.
func withClient(
    _ connection: ConnectionOptions, logger: Logger, strict: Bool = false,
    _ body: (CohortClient) async throws -> Int32
) async throws {
    let status: Int32
    do {
        var configuration = try connection.clientConfiguration()
        configuration.strict = strict
        status = try await CohortClient.withClient(configuration, logger: logger, body)
    } catch let error as ClientError {
        Console.error(error.description)
        throw ExitCode(error.exitCode)
    }
    if status != 0 { throw ExitCode(status) }
}
