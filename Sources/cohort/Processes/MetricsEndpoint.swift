import ArgumentParser
import CohortMetrics
import Foundation
import Logging
import Metrics
import Prometheus

/// `--metrics` of `cohort coordinator` and `cohort worker`: where the process serves
/// Prometheus metrics, and running that server beside the service.
///
/// The address comes from the `metrics` setting (flag < environment < file, as every
/// setting); when none was given, the role's default port is tried and, if another process
/// has it (a second coordinator or worker on the host), a free port is used instead, with a
/// notice. An address that was given must be free: a busy one is an error naming it.
struct MetricsEndpoint {
    /// The address to bind; nil: metrics are off.
    let address: MetricsAddress?
    /// Whether the address was configured (flag, environment or file) rather than the default.
    let configured: Bool
    /// `coordinator` or `worker`, for the announcement.
    let role: String

    /// Reads the setting (`nil` when not configured), with the role's default.
    /// - Throws: `ValidationError` naming the value and what is wrong with it.
    init(setting: String?, default defaultAddress: MetricsAddress, role: String) throws {
        self.role = role
        self.configured = setting != nil
        guard let setting else {
            address = defaultAddress
            return
        }
        do {
            address = try MetricsAddress.parse(setting)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// Serves metrics (if on) while `body` runs, and stops serving when it returns.
    ///
    /// Binds first: once bound it prints `cohort ROLE metrics on http://HOST:PORT/metrics`
    /// (port 0 resolved), then calls `body` with the factory the service records into (nil
    /// with metrics off). A configured address that cannot be bound throws
    /// ``MetricsServerError`` before `body` runs.
    func serve(logger: Logger, _ body: @escaping @Sendable ((any MetricsFactory)?) async throws -> Void) async throws {
        guard let address else { return try await body(nil) }
        let registry = CohortPrometheus.bootstrap()
        let factory = MetricsSystem.factory
        if let failure = try await serve(address, registry: registry, logger: logger, body: { try await body(factory) })
        {
            // Only the default port can be taken without it being an error: try a free one.
            guard !configured, failure.portInUse else { throw failure }
            let fallback = MetricsAddress(host: address.host, port: 0)
            Console.err(
                "cohort: notice: metrics port \(address.port) is in use; serving metrics on a free port instead")
            if let failure = try await serve(
                fallback, registry: registry, logger: logger, body: { try await body(factory) })
            {
                throw failure
            }
        }
    }

    /// Runs the server and, once it is bound, `body`; returns the server's failure to bind
    /// (then `body` did not run).
    private func serve(
        _ address: MetricsAddress, registry: PrometheusCollectorRegistry, logger: Logger,
        body: @escaping @Sendable () async throws -> Void
    ) async throws -> MetricsServerError? {
        let (bound, continuation) = AsyncStream<Result<MetricsAddress, any Error>>.makeStream()
        let role = role
        let server = MetricsServer(address: address, registry: registry, logger: logger) { resolved in
            Console.out("cohort \(role) metrics on \(resolved.url)")
            continuation.yield(.success(resolved))
        }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await server.run()
                } catch {
                    continuation.yield(.failure(error))
                }
                continuation.finish()
            }
            var events = bound.makeAsyncIterator()
            switch await events.next() {
            case .success?:
                break
            case .failure(let error as MetricsServerError)?:
                return error
            case .failure(let error)?:
                throw error
            case nil:
                return nil
            }
            defer { group.cancelAll() }
            try await body()
            return nil
        }
    }
}
