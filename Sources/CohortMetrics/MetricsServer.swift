import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// Serves a registry's metrics over HTTP: `GET /metrics` answers Prometheus' text exposition
/// format (version 0.0.4); anything else is 404.
///
/// A swift-service-lifecycle `Service`: ``run()`` binds, calls `onBound` with the address it
/// bound (port 0 resolved), serves until the calling task is cancelled (or a graceful
/// shutdown), then returns.
///
/// ```swift
/// let registry = CohortPrometheus.bootstrap()
/// let server = MetricsServer(address: .coordinatorDefault, registry: registry, logger: logger) { bound in
///     print("metrics on \(bound.url)")
/// }
/// try await server.run()
/// ```
public struct MetricsServer: Service {
    public let address: MetricsAddress
    let registry: PrometheusCollectorRegistry
    let logger: Logger
    let onBound: @Sendable (MetricsAddress) -> Void

    /// A server for `registry` on `address`; `onBound` is called once it listens.
    public init(
        address: MetricsAddress, registry: PrometheusCollectorRegistry, logger: Logger,
        onBound: @escaping @Sendable (MetricsAddress) -> Void = { _ in }
    ) {
        self.address = address
        self.registry = registry
        self.logger = logger
        self.onBound = onBound
    }

    /// Binds and serves until cancelled.
    ///
    /// - Throws: ``MetricsServerError`` when the address cannot be bound (the port is in use,
    ///   the host is not an address of this machine…), naming the address.
    public func run() async throws {
        let router = Router()
        router.get("metrics") { [registry] _, _ -> Response in
            let body = registry.emitToBuffer()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
        }
        var httpLogger = logger
        // Hummingbird logs each request at debug, its start at info, and a cancelled connection
        // wait at error when it stops; failures to bind are thrown (and reported) below, and
        // the caller announces the address.
        httpLogger.logLevel = .critical
        let (address, onBound, logger) = (self.address, self.onBound, self.logger)
        let application = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? address.port
                let bound = MetricsAddress(host: address.host, port: port)
                logger.info("metrics served", metadata: ["metrics.url": "\(bound.url)"])
                onBound(bound)
            },
            logger: httpLogger)
        do {
            try await application.run()
        } catch let error as IOError {
            throw MetricsServerError(address: address, error: error)
        } catch let error as SocketAddressError {
            throw MetricsServerError(address: address, reason: "\(error)")
        }
    }
}

/// The metrics address could not be served.
public struct MetricsServerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The address at fault.
    public var address: MetricsAddress
    /// Why, in words (`the port is in use`).
    public var reason: String
    /// Whether the port was in use (another process listens there).
    public var portInUse: Bool

    public init(address: MetricsAddress, reason: String, portInUse: Bool = false) {
        self.address = address
        self.reason = reason
        self.portInUse = portInUse
    }

    init(address: MetricsAddress, error: IOError) {
        if error.errnoCode == EADDRINUSE {
            self.init(
                address: address,
                reason: "port \(address.port) is in use (another coordinator or worker?); choose another with "
                    + "--metrics HOST:PORT, port 0 for a free one, or turn metrics off with --metrics off",
                portInUse: true)
        } else if error.errnoCode == EADDRNOTAVAIL {
            self.init(address: address, reason: "\(address.host) is not an address of this machine")
        } else {
            self.init(address: address, reason: "\(error)")
        }
    }

    public var description: String { "cannot serve metrics on \(address): \(reason)" }
}
