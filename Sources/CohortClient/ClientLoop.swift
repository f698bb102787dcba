import CohortClientCore
import CohortWire
import Foundation
import Logging
import ZeroMQ

/// The loop on the client's own thread: owns the DEALER socket, its monitor and the codec, and
/// carries out what the ``ClientSession`` decides (which holds every decision: handshake,
/// deadlines, probes, reconnecting). It keeps only the callers' responders, by request id.
///
/// Lives and dies on its thread, so it needs no locks; everything else reaches it through the
/// ``ClientInbox``.
final class ClientLoop {
    private typealias Responder = ClientConnection.Responder
    typealias Session = ClientSession<ContinuousClock.Instant>

    private let configuration: ClientConfiguration
    private let inbox: ClientInbox
    private let logger: Logger
    private let codec = WireCodec()
    private let clock = ContinuousClock()

    private var session: Session
    /// Who waits for each open request's answers.
    private var responders: [UInt64: Responder] = [:]
    /// The caller of ``run(handshake:)``, until the handshake ends.
    private var handshake: CheckedContinuation<Result<Welcome, ClientError>, Never>?
    private var closers: [CheckedContinuation<Void, Never>] = []

    init(configuration: ClientConfiguration, inbox: ClientInbox, logger: Logger) {
        self.configuration = configuration
        self.inbox = inbox
        self.logger = logger
        self.session = Session(settings: Session.Settings(configuration))
    }

    /// The coordinator the session talks to now (one of a list, or a leader a standby named).
    private var endpoint: String { session.endpoint }
    /// The endpoint the socket is connected to.
    private var connected: String?

    /// Connects, shakes hands (answering `handshake`), then serves requests until closed.
    func run(handshake: CheckedContinuation<Result<Welcome, ClientError>, Never>) {
        let context: Context
        let socket: Socket
        let monitor: Monitor
        do {
            context = try Context(ioThreads: 1, defaultLinger: .milliseconds(200))
            socket = try context.socket(.dealer)
            if let curve = configuration.curve { try socket.makeCurveClient(curve) }
            // Handshake failures (a refused key, CURVE on one side only) are otherwise silent:
            // libzmq just retries. The monitor turns them into a clear error.
            monitor = try socket.monitor(MonitorEvents.handshakes.union(.connectAttempts))
            try socket.connect(endpoint)
            connected = endpoint
        } catch {
            let code: ClientError.Code = error.code == ZeroMQError.Code.invalidArgument ? .rejected : .unreachable
            handshake.resume(
                returning: .failure(
                    ClientError(code, "cannot connect to the coordinator at \(endpoint): \(error.message)")))
            finish(socket: nil, context: nil)
            return
        }
        self.handshake = handshake
        shakeHands(socket, monitor)
        monitor.close()
        if session.endedWith == nil { serve(socket) }
        finish(socket: socket, context: context)
    }

    // MARK: - Carrying out the session's actions

    private func perform(_ actions: [Session.Action], _ socket: Socket) {
        for action in actions {
            switch action {
            case .sendHello:
                let hello = Hello(
                    role: .client, softwareVersion: CohortClient.softwareVersion, peerName: configuration.peerName)
                do {
                    _ = try socket.send(codec.encode(.handshake(.hello(hello))), wait: .never)
                } catch {
                    perform(session.helloNotSent("\(error)", now: clock.now), socket)
                }
            case .send(let request):
                do {
                    try send(request, socket)
                } catch {
                    perform(session.requestNotSent(request.requestID, error, now: clock.now), socket)
                }
            case .moveTo(let target):
                if let connected { try? socket.disconnect(connected) }
                do {
                    try socket.connect(target)
                    connected = target
                } catch {
                    connected = nil
                    logger.warning(
                        "cannot connect to the coordinator",
                        metadata: ["coordinator.endpoint": "\(target)", "error": "\(error)"])
                }
            case .welcomed(let welcome):
                logger.debug(
                    "connected", metadata: ["coordinator.endpoint": "\(endpoint)", "client.id": "\(welcome.peerID)"])
                handshake?.resume(returning: .success(welcome))
                handshake = nil
            case .answer(let id, let kind):
                switch responders.removeValue(forKey: id) {
                case .reply(let continuation)?: continuation.resume(returning: kind)
                case .stream(let continuation)?:
                    continuation.yield(kind)
                    continuation.finish()
                case nil: break
                }
            case .yield(let id, let kind):
                if case .stream(let continuation)? = responders[id] { continuation.yield(kind) }
            case .finish(let id):
                if case .stream(let continuation)? = responders.removeValue(forKey: id) { continuation.finish() }
            case .fail(let id, let error):
                if let responder = responders.removeValue(forKey: id) { fail(responder, error) }
            case .connectionChanged(let change):
                switch change {
                case .waiting(let reason, _, _):
                    logger.info(
                        "the coordinator went away; reconnecting",
                        metadata: ["coordinator.endpoint": "\(endpoint)", "reason": "\(reason)"])
                case .reconnected(let epoch):
                    logger.info(
                        "reconnected",
                        metadata: ["coordinator.endpoint": "\(endpoint)", "coordinator.epoch": "\(epoch)"])
                }
                configuration.onConnectionChange?(change)
            case .log(let level, let message):
                logger.log(level: level.logging, "\(message)", metadata: ["coordinator.endpoint": "\(endpoint)"])
            case .stop(let error):
                guard let handshake else { continue }
                // Nothing worth lingering for: the HELLO may still sit in the queue of a peer that is not there.
                try? socket.set(.linger, to: .zero)
                handshake.resume(returning: .failure(error))
                self.handshake = nil
            }
        }
    }

    private func send(_ request: ClientRequest, _ socket: Socket) throws(ClientError) {
        var request = request
        if request.attemptToken == nil, request.carriesAttemptToken {
            request.attemptToken = configuration.attemptToken
        }
        let frames: [[UInt8]]
        do {
            frames = try codec.encode(.clientRequest(request))
        } catch {
            throw ClientError(.rejected, "cannot encode the request: \(error)")
        }
        let sent: Bool
        do {
            sent = try socket.send(frames, wait: .never)
        } catch {
            throw ClientError(.internal, "cannot send to \(endpoint): \(error)")
        }
        if !sent { throw ClientError(.connectionLost, "cannot send to \(endpoint): its queue is full") }
    }

    private func decode(_ frames: [[UInt8]]) -> Result<WireMessage, WireError> {
        Result(catching: { () throws(WireError) in try codec.decode(frames: frames) })
    }

    // MARK: - Handshake

    private func shakeHands(_ socket: Socket, _ monitor: Monitor) {
        perform(session.connect(now: clock.now), socket)
        let poller = Poller()
        let events: Int
        do {
            try poller.register(socket)
            events = try poller.register(monitor.socket)
        } catch {
            let failure = ClientError(.internal, "cannot poll the client socket: \(error)")
            return perform(session.socketFailed(failure, now: clock.now), socket)
        }
        while session.isHandshaking {
            do {
                try poller.poll(timeout: session.wait(now: clock.now))
                while session.isHandshaking, poller.isReadable(events), let event = try monitor.next(wait: .never) {
                    guard let seen = Self.connectionEvent(event, curve: configuration.curve != nil) else { continue }
                    perform(session.connection(seen, now: clock.now), socket)
                }
                if session.isHandshaking, let frames = try socket.receiveFrames(wait: .never) {
                    perform(session.received(decode(frames), now: clock.now), socket)
                }
            } catch {
                let failure = ClientError(.internal, "cannot receive from \(endpoint): \(error)")
                perform(session.socketFailed(failure, now: clock.now), socket)
            }
            perform(session.tick(now: clock.now), socket)
        }
    }

    /// What a monitor event means to the session; `nil` for events it does not care about.
    private static func connectionEvent(_ event: MonitorEvent, curve: Bool) -> Session.ConnectionEvent? {
        switch event.kind {
        case .connected: return .connected
        case .connectRetried: return .connectRetried
        case .disconnected: return .disconnected
        default:
            guard let explanation = event.handshakeFailureExplanation(curve: curve) else { return nil }
            return .handshakeFailed(
                Session.HandshakeFailure(
                    explanation: explanation, detail: event.handshakeFailureDetail,
                    keyRefused: event.kind == .handshakeFailedAuth, definite: event.isDefiniteHandshakeFailure))
        }
    }

    // MARK: - Serving

    private func serve(_ socket: Socket) {
        let poller = Poller()
        let network: Int
        // A dropped connection (the coordinator died or restarts) is seen at once, not after a probe.
        let monitor = try? socket.monitor(.disconnections)
        defer { monitor?.close() }
        var disconnections: Int?
        do {
            network = try poller.register(socket)
            if let monitor { disconnections = try poller.register(monitor.socket) }
        } catch {
            let failure = ClientError(.internal, "cannot poll the client socket: \(error)")
            return perform(session.socketFailed(failure, now: clock.now), socket)
        }
        let wakeups = poller.register(inbox.waker)
        while session.endedWith == nil {
            do {
                try poller.poll(timeout: session.wait(now: clock.now))
                // Messages first: a stop notice (restarting or not) arrives just before the
                // disconnection and says more about it.
                if poller.isReadable(network) {
                    while let frames = try socket.receiveFrames(wait: .never) {
                        perform(session.received(decode(frames), now: clock.now), socket)
                    }
                }
                if let disconnections, let monitor, poller.isReadable(disconnections) {
                    while let event = try monitor.next(wait: .never) {
                        guard event.kind == .disconnected else { continue }
                        while let frames = try socket.receiveFrames(wait: .never) {
                            perform(session.received(decode(frames), now: clock.now), socket)
                        }
                        perform(session.connection(.disconnected, now: clock.now), socket)
                    }
                }
                if poller.isReadable(wakeups) {
                    for command in inbox.drain() { handle(command, socket) }
                }
            } catch {
                let failure = ClientError(.internal, "the client socket failed: \(error)")
                perform(session.socketFailed(failure, now: clock.now), socket)
            }
            perform(session.tick(now: clock.now), socket)
        }
    }

    private func handle(_ command: ClientConnection.Command, _ socket: Socket) {
        let now = clock.now
        switch command {
        case .request(let id, let kind, let responder):
            responders[id] = responder
            let answering: Session.Answering = if case .reply = responder { .once } else { .stream }
            perform(session.request(id, kind, answering: answering, now: now), socket)
        case .unwatch(let id, let group):
            // The caller no longer listens: nothing more is delivered to it.
            responders[id] = nil
            perform(session.unwatch(id, group: group, now: now), socket)
        case .abandon(let id):
            perform(session.abandon(id, now: now), socket)
        case .close(let continuation):
            closers.append(continuation)
            perform(session.close(now: now), socket)
        }
    }

    private func fail(_ responder: Responder, _ error: ClientError) {
        switch responder {
        case .reply(let continuation): continuation.resume(throwing: error)
        case .stream(let continuation): continuation.finish(throwing: error)
        }
    }

    /// Answers everything still open, closes the socket and the context, and resumes closers.
    private func finish(socket: Socket?, context: Context?) {
        let ending = session.endedWith ?? ClientError.closed
        for responder in responders.values { fail(responder, ending) }
        responders = [:]
        for command in inbox.seal(reason: ending) {
            switch command {
            case .request(_, _, let responder): fail(responder, ending)
            case .unwatch, .abandon: break
            case .close(let continuation): closers.append(continuation)
            }
        }
        socket?.close()
        context?.terminate()
        for closer in closers { closer.resume() }
        closers = []
    }
}

extension ClientLoop.Session.Settings {
    /// The session's settings from the client's configuration.
    init(_ configuration: ClientConfiguration) {
        self.init(endpoint: configuration.coordinator)
        connectTimeout = configuration.connectTimeout
        requestTimeout = configuration.requestTimeout
        probeAfter = configuration.probeAfter
        reconnectTimeout = configuration.reconnectTimeout
        curve = configuration.curve != nil
    }
}

extension ClientLoop.Session.LogLevel {
    /// The logger's level for a session's log line.
    var logging: Logger.Level {
        switch self {
        case .debug: .debug
        case .warning: .warning
        }
    }
}
