import CohortCoordinator
import CohortTestSupport
import CohortWire
import Foundation
import Logging
import Metrics
import Testing

/// Runs a coordinator in this process on a free loopback port (or `configure`'s endpoint) for
/// the duration of `body`, and stops it (by cancelling its task, as SIGTERM does) afterwards,
/// even when `body` throws.
@discardableResult
public func withCoordinator<R>(
    configure: (inout CoordinatorConfiguration) -> Void = { _ in },
    _ body: (CoordinatorHandle) async throws -> R
) async throws -> R {
    let handle = try await CoordinatorHandle.start(configure: configure)
    defer { handle.service.cancel() }
    let result = try await body(handle)
    try await handle.stop()
    return result
}

/// A running in-process coordinator in a test.
public struct CoordinatorHandle: Sendable {
    public let coordinator: Coordinator
    public let endpoint: String
    public let service: Task<Void, any Error>

    public init(coordinator: Coordinator, endpoint: String, service: Task<Void, any Error>) {
        self.coordinator = coordinator
        self.endpoint = endpoint
        self.service = service
    }

    /// Starts a coordinator (`tcp://127.0.0.1:*` unless `configure` says otherwise) and waits
    /// until it is bound. The caller stops it with ``stop()``.
    /// `metrics` is the factory the coordinator records its metrics into (none by default).
    public static func start(
        metrics: (any MetricsFactory)? = nil, configure: (inout CoordinatorConfiguration) -> Void = { _ in }
    ) async throws
        -> CoordinatorHandle
    {
        var configuration = CoordinatorConfiguration(endpoint: "tcp://127.0.0.1:*")
        configure(&configuration)
        var logger = Logger(label: "test.coordinator")
        logger.logLevel = .error
        let coordinator = Coordinator(configuration: configuration, logger: logger, metrics: metrics)
        let service = Task { try await coordinator.run() }
        do {
            let endpoint = try await coordinator.boundEndpoint()
            return CoordinatorHandle(coordinator: coordinator, endpoint: endpoint, service: service)
        } catch {
            service.cancel()
            throw error
        }
    }

    /// Stops the coordinator as SIGTERM does (it tells its peers it stops) and waits for it.
    public func stop() async throws {
        service.cancel()
        try await service.value
    }

    /// A DEALER connected to the coordinator.
    public func peer() throws -> FakePeer { try FakePeer(connectingTo: endpoint) }

    /// A client that said HELLO and was welcomed.
    public func client(_ name: String = "test-client") throws -> FakePeer {
        let peer = try self.peer()
        _ = try peer.hello(role: .client, name: name)
        return peer
    }

    /// A worker that said HELLO and READY, once the coordinator lists it as ready.
    public func worker(
        _ name: String, slots: UInt32 = 4, labels: [String] = [], kinds: [String] = ["shell", "sleep", "echo", "fail"],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> FakePeer {
        let peer = try self.peer()
        _ = try peer.hello(role: .worker, name: name)
        try peer.send(
            .worker(
                .ready(
                    WorkerReady(
                        name: name, host: "localhost", sessionID: UUID().uuidString, labels: labels, slots: slots,
                        kinds: kinds))))
        // READY has no answer, and another connection's request may overtake it: wait until
        // the coordinator lists the worker, so tests see it registered.
        let probe = try client("probe")
        let listed = try eventuallyBlocking(Deadline.event) {
            if case .workers(let workers) = try probe.request(.workers) {
                return workers.contains { $0.name == name && $0.state == .ready }
            }
            return false
        }
        if !listed { Issue.record("worker \(name) never became ready", sourceLocation: sourceLocation) }
        return peer
    }
}
