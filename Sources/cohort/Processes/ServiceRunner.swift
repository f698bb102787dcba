import Foundation
import Logging

/// Runs a service's `run()` until it returns, cancelling it on SIGINT or SIGTERM: the contract
/// of the services (docs/architecture.md) is that cancelling the task running `run()` stops them
/// gracefully.
enum ServiceRunner {
    /// Runs `body` in a task that the first SIGINT/SIGTERM cancels; a second signal exits at once.
    /// With `drain`, the first signal calls `drain` instead (the service winds down and
    /// returns on its own), the second cancels the task (stop at once), the third exits.
    /// A stop by signal counts as success.
    static func run(
        name: String, logger: Logger, drain: (@Sendable () -> Void)? = nil,
        _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        let task = Task { try await body() }
        let trap = SignalTrap(exitAfter: drain == nil ? 2 : 3) { number, count in
            let signal = SignalTrap.name(number)
            if let drain, count == 1 {
                logger.notice("draining", metadata: ["service.name": "\(name)", "signal.name": "\(signal)"])
                drain()
            } else {
                logger.notice("stopping", metadata: ["service.name": "\(name)", "signal.name": "\(signal)"])
                task.cancel()
            }
        }
        defer { trap.cancel() }
        do {
            try await task.value
        } catch is CancellationError where task.isCancelled {
            // Stopped by a signal: a graceful end.
        }
    }
}
