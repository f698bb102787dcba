import CohortCoordinator
import CohortWire
import Foundation
import Logging
import Testing
import ZeroMQ

/// How long tests wait for something that should happen (generous: the machine is shared).
enum Deadline {
    static let event: Duration = .seconds(10)
}

/// Runs a coordinator on a free loopback port for the duration of `body`, and stops it (by
/// cancelling its task) afterwards, even when `body` throws.
func withCoordinator<R>(
    configure: (inout CoordinatorConfiguration) -> Void = { _ in },
    _ body: (CoordinatorHandle) async throws -> R
) async throws -> R {
    var configuration = CoordinatorConfiguration(endpoint: "tcp://127.0.0.1:*")
    configure(&configuration)
    var logger = Logger(label: "test.coordinator")
    logger.logLevel = .error
    let coordinator = Coordinator(configuration: configuration, logger: logger)
    let service = Task { try await coordinator.run() }
    defer { service.cancel() }
    let endpoint = try await coordinator.boundEndpoint()
    let handle = CoordinatorHandle(coordinator: coordinator, endpoint: endpoint, service: service)
    let result = try await body(handle)
    service.cancel()
    try await service.value
    return result
}

/// A running coordinator in a test.
struct CoordinatorHandle: Sendable {
    let coordinator: Coordinator
    let endpoint: String
    let service: Task<Void, any Error>

    /// A DEALER connected to the coordinator.
    func peer() throws -> WirePeer { try WirePeer(endpoint: endpoint) }

    /// A client that said HELLO and was welcomed.
    func client(_ name: String = "test-client") throws -> WirePeer {
        let peer = try self.peer()
        _ = try peer.hello(role: .client, name: name)
        return peer
    }

    /// A worker that said HELLO and READY.
    func worker(
        _ name: String, slots: UInt32 = 4, labels: [String] = [], kinds: [String] = ["shell", "sleep", "echo", "fail"]
    ) throws -> WirePeer {
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
        let deadline = ContinuousClock.now + Deadline.event
        while ContinuousClock.now < deadline {
            if case .workers(let workers) = try probe.request(.workers),
                workers.contains(where: { $0.name == name && $0.state == .ready })
            {
                return peer
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
        Issue.record("worker \(name) never became ready")
        return peer
    }
}

/// A fake worker or client: a DEALER socket speaking CohortWire.
///
/// Every call adopts the socket first: a test's `await`s may resume it on another thread, and
/// the continuation that resumes it orders the previous thread's last use before this one.
final class WirePeer: @unchecked Sendable {
    // @unchecked: used by one test at a time, sequentially (see above).
    let context: Context
    let socket: Socket
    let codec = WireCodec()
    private var nextRequest: UInt64 = 0

    init(endpoint: String) throws {
        context = try Context(defaultLinger: .zero)
        socket = try context.socket(.dealer)
        try socket.connect(endpoint)
    }

    deinit {
        socket.adopt()
        socket.close()
    }

    func send(_ message: WireMessage) throws {
        socket.adopt()
        try socket.send(try codec.encode(message))
    }

    func sendRaw(_ frames: [[UInt8]]) throws {
        socket.adopt()
        try socket.send(frames)
    }

    /// The next message, or nil after `timeout`.
    func receive(timeout: Duration = Deadline.event) throws -> WireMessage? {
        socket.adopt()
        guard let frames = try socket.receiveFrames(wait: .upTo(timeout)) else { return nil }
        return try codec.decode(frames: frames)
    }

    /// The first message `match` accepts (others are skipped, e.g. heartbeats), within the deadline.
    func expect<T>(
        _ what: String, timeout: Duration = Deadline.event, sourceLocation: SourceLocation = #_sourceLocation,
        _ match: (WireMessage) -> T?
    ) throws -> T {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let message = try receive(timeout: deadline - ContinuousClock.now) else { break }
            if let value = match(message) { return value }
        }
        Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
        throw ExpectationTimeout(what: what)
    }

    @discardableResult
    func hello(role: PeerRole, name: String) throws -> Welcome {
        try send(.handshake(.hello(Hello(role: role, softwareVersion: "test", peerName: name))))
        return try expect("WELCOME") { message in
            if case .handshake(.welcome(let welcome)) = message { return welcome }
            if case .handshake(.error(let error)) = message { Issue.record("refused: \(error)") }
            return nil
        }
    }

    // MARK: Client

    /// Sends a request and waits for the reply with its id.
    func request(_ kind: ClientRequest.Kind) throws -> CoordinatorReply.Kind {
        nextRequest += 1
        let id = nextRequest
        try send(.clientRequest(ClientRequest(requestID: id, kind)))
        return try expect("reply to request \(id)") { message in
            if case .coordinatorReply(let reply) = message, reply.requestID == id { return reply.kind }
            return nil
        }
    }

    /// Submits a YAML spec; returns the reply.
    func submit(_ yaml: String, id: String? = nil) throws -> CoordinatorReply.Kind {
        try request(.submit(Submission(groupID: id, document: yaml, format: .yaml, sourceName: "test.yaml")))
    }

    func status(_ group: String) throws -> GroupDetail {
        let reply = try request(.status(group: group))
        guard case .group(let detail) = reply else { throw UnexpectedReply(reply: reply) }
        return detail
    }

    /// Polls the group's status until `predicate` holds.
    func waitForStatus(
        _ group: String, timeout: Duration = Deadline.event, sourceLocation: SourceLocation = #_sourceLocation,
        until predicate: (GroupDetail) -> Bool
    ) throws -> GroupDetail {
        let deadline = ContinuousClock.now + timeout
        var last = try status(group)
        while !predicate(last), ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.01)
            last = try status(group)
        }
        #expect(predicate(last), "status never matched; last: \(last.state) \(last.children.map { "\($0.path)=\($0.state)" })", sourceLocation: sourceLocation)
        return last
    }

    // MARK: Worker

    /// The next dispatch (its tasks).
    func dispatched(timeout: Duration = Deadline.event, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [AttemptDispatch]
    {
        try expect("DISPATCH", timeout: timeout, sourceLocation: sourceLocation) { message in
            if case .toWorker(.dispatch(let tasks)) = message { return tasks }
            return nil
        }
    }

    /// Reports attempts started and finished.
    func finish(_ task: AttemptDispatch, _ outcome: WireOutcome) throws {
        let now = WireTimestamp(Date())
        try send(.worker(.started([AttemptStart(ref: task.ref, startedAt: now)])))
        try send(.worker(.results([AttemptResult(ref: task.ref, outcome: outcome, startedAt: now, finishedAt: now)])))
    }
}

struct ExpectationTimeout: Error {
    var what: String
}

struct UnexpectedReply: Error {
    var reply: CoordinatorReply.Kind
}

extension Data {
    /// The JSON text as a value, for comparisons.
    var json: NSDictionary? {
        (try? JSONSerialization.jsonObject(with: self)) as? NSDictionary
    }
}
