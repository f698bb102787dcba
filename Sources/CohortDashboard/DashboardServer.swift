import CohortClient
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

import enum CohortSpec.JSONValue

/// The coordinator's web dashboard and its JSON HTTP API (docs/http.md).
///
/// It reads and acts through a ``CohortClient`` connected to the coordinator (the coordinator
/// process connects one to itself), so the dashboard sees what `cohort status`, `cohort
/// workers` and `cohort locks` see, and its cancels and drains go through the coordinator's
/// own checks. Who may cancel or drain is decided here, by the request's bearer token
/// (``AccessTokens``); without a token a request may only read.
///
/// ```swift
/// let server = DashboardServer(client: client, tokens: tokens, logger: logger)
/// try await server.run(address: .defaultAddress) { bound in logger.info("dashboard on \(bound.url)") }
/// ```
///
/// Thread-safety: `Sendable`. ``run(address:onRunning:)`` serves until its task is cancelled.
public final class DashboardServer: Sendable {
    let client: CohortClient
    let tokens: AccessTokens
    let logger: Logger
    /// How often the cluster stream (`/api/events`) looks for changes.
    let pollInterval: Duration
    /// Set when ``run(address:onRunning:)`` is cancelled: open event streams end, so that the
    /// server's graceful shutdown does not wait for them.
    let stopping = Atomic<Bool>(false)

    var isStopping: Bool { stopping.load(ordering: .relaxed) }
    /// Whether reading needs a token too (at least a viewer's): under CURVE, so that a local
    /// process cannot read over HTTP what the CURVE keys protect.
    let readsNeedToken: Bool
    /// The address the server listens on, once it does: requests must name it (or, on a
    /// loopback address, `localhost`) in their `Host` header. `nil`: no check (tests through
    /// the router).
    let boundAddress = Mutex<DashboardAddress?>(nil)
    /// How long a stream stays silent before a `: keep-alive` comment goes out.
    let keepAliveInterval: Duration
    /// The group event streams open now (each holds a watch on the coordinator).
    let openGroupStreams = Atomic<Int>(0)
    /// The log streams open now (each follows a child's log).
    let openLogStreams = Atomic<Int>(0)
    /// The most events of a group's watch that wait for a slow browser; past it the stream ends.
    static let groupStreamBuffer = 1_000
    /// The cluster streams' last look at the cluster (``clusterState()``).
    let clusterCache = Mutex<ClusterSnapshot?>(nil)

    /// - Parameters:
    ///   - client: connected to the coordinator the dashboard shows.
    ///   - tokens: who may do what; empty: everyone reads, nobody cancels or drains.
    ///   - pollInterval: how often `/api/events` looks for changed groups, workers and locks.
    ///   - keepAliveInterval: how long an event stream stays silent before a `: keep-alive`
    ///     comment goes out (so proxies keep the connection).
    ///   - readsNeedToken: every request needs a token, reads too (a viewer's at least): the
    ///     coordinator runs under CURVE.
    public init(
        client: CohortClient, tokens: AccessTokens, pollInterval: Duration = .seconds(1),
        keepAliveInterval: Duration = .seconds(15), readsNeedToken: Bool = false, logger: Logger
    ) {
        self.client = client
        self.tokens = tokens
        self.readsNeedToken = readsNeedToken
        self.pollInterval = pollInterval
        self.keepAliveInterval = keepAliveInterval
        self.logger = logger
    }

    /// Serves the dashboard on `address` until the calling task is cancelled; `onRunning` is
    /// told the bound address (a port 0 resolved) once the server listens.
    ///
    /// A cancellation stops it gracefully: open event streams end (the cluster streams at
    /// their next look, the group streams when `onStop` closes the client, which ends its
    /// watches), then the server closes; past 5 s what is left is cancelled.
    /// - Throws: ``DashboardSettingsError`` when the address cannot be bound (in use, not an
    ///   address of this machine).
    public func run(
        address: DashboardAddress, onRunning: @escaping @Sendable (DashboardAddress) -> Void,
        onStop: @escaping @Sendable () async -> Void = {}
    ) async throws {
        let app = Application(
            router: router(),
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? address.port
                let bound = DashboardAddress(host: address.host, port: port)
                self.boundAddress.withLock { $0 = bound }
                onRunning(bound)
            },
            logger: logger)
        var configuration = ServiceGroupConfiguration(services: [.init(service: app)], logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(5)
        let services = ServiceGroup(configuration: configuration)
        // Not a child task: a cancellation here asks it to shut down gracefully instead. Both
        // tasks are owned: waited for (and cancelled) before this returns.
        let serving = Task { try await services.run() }
        let shutdown = Mutex<Task<Void, Never>?>(nil)
        defer {
            serving.cancel()
            shutdown.withLock { $0?.cancel() }
        }
        do {
            try await withTaskCancellationHandler {
                try await serving.value
            } onCancel: {
                stopping.store(true, ordering: .relaxed)
                shutdown.withLock { task in
                    task = Task {
                        await onStop()
                        await services.triggerGracefulShutdown()
                    }
                }
            }
        } catch is CancellationError {
            await shutdown.withLock { $0 }?.value
            return
        } catch {
            await shutdown.withLock { $0 }?.value
            if Task.isCancelled { return }
            throw DashboardSettingsError("http: cannot serve the dashboard on \(address): \(error)")
        }
        await shutdown.withLock { $0 }?.value
    }

    /// The routes: pages, assets and the API (docs/http.md).
    public func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: HostCheck(server: self))
        router.get("/") { _, _ in Self.page("index.html") }
        router.get("/group") { _, _ in Self.page("group.html") }
        router.get("/workers") { _, _ in Self.page("workers.html") }
        router.get("/assets/{file}") { _, context in
            Self.page(context.parameters.get("file") ?? "")
        }
        router.get("/api/whoami") { request, _ in self.respond { try self.whoami(request) } }
        router.get("/api/groups") { request, _ in await self.respondAsync { try await self.groups(request) } }
        router.get("/api/groups/{id}") { request, context in
            await self.respondAsync {
                try self.reader(request)
                let id = try self.id(context)
                return try await DashboardJSON.group(self.call { try await self.client.status(id) })
            }
        }
        router.get("/api/groups/{id}/result") { request, context in
            await self.respondAsync { try await self.result(request, group: try self.id(context)) }
        }
        router.get("/api/groups/{id}/events") { request, context in
            do throws(APIError) {
                try self.reader(request, queryToken: true)
            } catch {
                return Self.json(DashboardJSON.error(error.code, error.message), status: error.status)
            }
            return self.groupEvents(request, context.parameters.get("id") ?? "")
        }
        router.get("/api/groups/{id}/logs") { request, context in
            let asked: LogsRequest
            let group: String
            do throws(APIError) {
                try self.reader(request, queryToken: true)
                group = try self.id(context)
                asked = try self.logsRequest(request)
                guard asked.follow else { return Self.json(try await self.logsPage(group, asked), status: .ok) }
                // An unknown group, child or attempt: a status, before the stream starts (not
                // for a stream that carries on: a browser reconnecting while the coordinator is
                // away would give up on a status).
                if asked.from == nil {
                    _ = try await self.call {
                        try await self.client.logs(
                            LogsQuery(group: group, path: asked.child, attempt: asked.attempt, tail: 1, limit: 1))
                    }
                }
            } catch {
                return Self.json(DashboardJSON.error(error.code, error.message), status: error.status)
            }
            return self.logEvents(request, group: group, asked)
        }
        router.post("/api/groups/{id}/cancel") { request, context in
            await self.respondAsync(status: .accepted) {
                try await self.cancel(request, group: try self.id(context))
            }
        }
        router.get("/api/workers") { request, _ in
            await self.respondAsync {
                try self.reader(request)
                return try await self.workersJSON()
            }
        }
        router.post("/api/workers/{name}/drain") { request, context in
            await self.respondAsync { try await self.drain(request, worker: context.parameters.get("name") ?? "") }
        }
        router.get("/api/locks") { request, _ in
            await self.respondAsync {
                try self.reader(request)
                return try await self.locksJSON()
            }
        }
        router.get("/api/events") { request, _ in
            do throws(APIError) {
                try self.reader(request, queryToken: true)
            } catch {
                return Self.json(DashboardJSON.error(error.code, error.message), status: error.status)
            }
            return self.clusterEvents(request)
        }
        return router
    }

    // MARK: Answers

    func id(_ context: BasicRequestContext) throws(APIError) -> String {
        guard let id = context.parameters.get("id"), !id.isEmpty else {
            throw APIError(.badRequest, "bad_request", "the path names no group")
        }
        return id
    }

    func respond(status: HTTPResponse.Status = .ok, _ body: () throws -> JSONValue) -> Response {
        do {
            return Self.json(try body(), status: status)
        } catch let error as APIError {
            return Self.json(DashboardJSON.error(error.code, error.message), status: error.status)
        } catch {
            return Self.json(DashboardJSON.error("internal", "\(error)"), status: .internalServerError)
        }
    }

    func respondAsync(status: HTTPResponse.Status = .ok, _ body: () async throws -> JSONValue) async -> Response {
        do {
            return Self.json(try await body(), status: status)
        } catch let error as APIError {
            return Self.json(DashboardJSON.error(error.code, error.message), status: error.status)
        } catch {
            return Self.json(DashboardJSON.error("internal", "\(error)"), status: .internalServerError)
        }
    }

    /// Runs a client call; its errors become the API's.
    func call<T>(_ body: () async throws -> T) async throws(APIError) -> T {
        do {
            return try await body()
        } catch let error as ClientError {
            throw APIError(error)
        } catch {
            throw APIError(.internalServerError, "internal", "\(error)")
        }
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status) -> Response {
        var text = value.jsonString(pretty: false)
        text += "\n"
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func page(_ name: String) -> Response {
        guard let text = EmbeddedPages.files[name] else {
            return Response(
                status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "no such page: \(name)\n")))
        }
        let type: String =
            switch (name as NSString).pathExtension {
            case "html": "text/html; charset=utf-8"
            case "css": "text/css; charset=utf-8"
            case "js": "text/javascript; charset=utf-8"
            case "svg": "image/svg+xml"
            default: "text/plain; charset=utf-8"
            }
        return Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

/// Refuses a request whose `Host` header does not name the server (DNS rebinding: a web page
/// of another site whose name resolves to this address).
struct HostCheck: RouterMiddleware {
    typealias Context = BasicRequestContext
    let server: DashboardServer

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let bound = server.boundAddress.withLock({ $0 }),
            !DashboardServer.hostAllowed(request.head.authority, bound: bound)
        else { return try await next(request, context) }
        return DashboardServer.json(
            DashboardJSON.error(
                "misdirected",
                "the Host header \"\(request.head.authority ?? "")\" does not name this dashboard (\(bound)): "
                    + "open it as http://\(bound)/" + (bound.isLoopback ? " or http://localhost:\(bound.port)/" : "")),
            status: .misdirectedRequest)
    }
}

/// An API request's failure: its HTTP status and the `error` object's code and message.
struct APIError: Error {
    var status: HTTPResponse.Status
    var code: String
    var message: String

    init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// The coordinator's refusal, with the status that fits it.
    init(_ error: ClientError) {
        switch error.code {
        case .notFound: self.init(.notFound, "not_found", error.message)
        case .permissionDenied: self.init(.forbidden, "forbidden", error.message)
        case .rejected, .invalidSpec: self.init(.conflict, "rejected", error.message)
        case .unreachable, .connectionLost, .shuttingDown, .closed, .cancelled:
            self.init(.serviceUnavailable, "unavailable", error.message)
        default: self.init(.internalServerError, "internal", error.message)
        }
    }
}
