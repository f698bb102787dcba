import Foundation
import Logging

/// Runs a service's `run()` until it returns, cancelling it on SIGINT or SIGTERM: the contract
/// of the services (DESIGN.md §4) is that cancelling the task running `run()` stops them
/// gracefully.
enum ServiceRunner {
    /// Runs `body` in a task that the first SIGINT/SIGTERM cancels; a second signal exits at once.
    /// A stop by signal counts as success.
    static func run(name: String, logger: Logger, _ body: @escaping @Sendable () async throws -> Void) async throws {
        let task = Task { try await body() }
        let trap = SignalTrap { number in
            logger.notice("stopping", metadata: ["service.name": "\(name)", "signal.name": "\(SignalTrap.name(number))"])
            task.cancel()
        }
        defer { trap.cancel() }
        do {
            try await task.value
        } catch is CancellationError where task.isCancelled {
            // Stopped by a signal: a graceful end.
        }
    }
}
