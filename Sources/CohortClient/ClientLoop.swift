import CohortWire
import Foundation
import Logging
import ZeroMQ

/// The loop on the client's own thread: owns the DEALER socket, sends posted requests, routes
/// replies by request id, and times out requests and silent watches.
///
/// Lives and dies on its thread, so it needs no locks; everything else reaches it through the
/// ``ClientInbox``.
final class ClientLoop {
    private typealias Responder = ClientConnection.Responder

    private struct Pending {
        var responder: Responder
        /// When a one-answer request gives up; `nil` for watches.
        var deadline: ContinuousClock.Instant?
        /// The request, to send again after a reconnection.
        var kind: ClientRequest.Kind
    }

    private let configuration: ClientConfiguration
    private let inbox: ClientInbox
    private let logger: Logger
    private let codec = WireCodec()
    private let clock = ContinuousClock()

    private var pending: [UInt64: Pending] = [:]
    /// When the coordinator last sent anything.
    private var lastHeard: ContinuousClock.Instant
    /// An outstanding liveness probe (sent while watches are silent).
    private var probe: (id: UInt64, sentAt: ContinuousClock.Instant)?
    /// Ids for the loop's own requests (probes, unwatches), apart from the callers' ids.
    private var nextInternalID: UInt64 = 1 << 62
    private var closers: [CheckedContinuation<Void, Never>] = []
    /// Requests whose callers gave up before the loop saw the request (a cancellation can
    /// overtake the request it cancels); each is answered as soon as it arrives.
    private var abandoned: Set<UInt64> = []
    /// Set when the connection cannot go on (the coordinator refused us or shut down).
    private var fatal: ClientError?
    /// Set while the coordinator is gone (restarting) and the client says HELLO again;
    /// `announced`: it said it was restarting (rather than its connection dropping).
    private var reconnecting: (since: ContinuousClock.Instant, lastHello: ContinuousClock.Instant, announced: Bool)?
    /// The coordinator said it is restarting while nothing was open: a loss seen later (a
    /// request sent meanwhile) is that restart. Cleared when it is back.
    private var restartAnnounced = false

    init(configuration: ClientConfiguration, inbox: ClientInbox, logger: Logger) {
        self.configuration = configuration
        self.inbox = inbox
        self.logger = logger
        self.lastHeard = clock.now
    }

    private var endpoint: String { configuration.coordinator }

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
        } catch {
            let code: ClientError.Code = error.code == ZeroMQError.Code.invalidArgument ? .rejected : .unreachable
            handshake.resume(
                returning: .failure(
                    ClientError(code, "cannot connect to the coordinator at \(endpoint): \(error.message)")))
            finish(socket: nil, context: nil)
            return
        }
        let outcome = shakeHands(socket, monitor)
        monitor.close()
        switch outcome {
        case .success(let welcome):
            handshake.resume(returning: .success(welcome))
        case .failure(let error):
            // Nothing worth lingering for: the HELLO may still sit in the queue of a peer that is not there.
            try? socket.set(.linger, to: .zero)
            handshake.resume(returning: .failure(error))
            finish(socket: socket, context: context)
            return
        }
        serve(socket)
        finish(socket: socket, context: context)
    }

    // MARK: - Handshake

    private func shakeHands(_ socket: Socket, _ monitor: Monitor) -> Result<Welcome, ClientError> {
        let hello = Hello(
            role: .client, softwareVersion: CohortClient.softwareVersion, peerName: configuration.peerName)
        do {
            try socket.send(codec.encode(.handshake(.hello(hello))), wait: .never)
        } catch {
            return .failure(ClientError(.internal, "cannot send HELLO to \(endpoint): \(error)"))
        }
        let deadline = clock.now + configuration.connectTimeout
        var brokenHandshakes = 0
        var lastHandshakeFailure: ClientError?
        // TCP connections refused before any was made: nothing listens at the endpoint.
        var connected = false
        var refusals = 0
        let poller = Poller()
        let events: Int
        do {
            try poller.register(socket)
            events = try poller.register(monitor.socket)
        } catch {
            return .failure(ClientError(.internal, "cannot poll the client socket: \(error)"))
        }
        while clock.now < deadline {
            let frames: [[UInt8]]?
            do {
                try poller.poll(timeout: max(deadline - clock.now, .zero))
                while poller.isReadable(events), let event = try monitor.next(wait: .never) {
                    switch event.kind {
                    case .connected:
                        connected = true
                        continue
                    case .connectRetried:
                        // libzmq retries a refused connect every 100 ms; two refusals in a
                        // row, with no connection between, are an answer: nothing listens.
                        refusals += connected ? 0 : 1
                        if refusals >= 2 {
                            return .failure(
                                ClientError(
                                    .unreachable,
                                    "cannot reach the coordinator at \(endpoint): the connection was refused (nothing listens there; is the coordinator running?)"
                                ))
                        }
                        continue
                    default:
                        break
                    }
                    guard let failure = handshakeFailure(event) else { continue }
                    // A broken connection looks like a refusal once; three in a row are one.
                    brokenHandshakes += event.isDefiniteHandshakeFailure ? 3 : 1
                    lastHandshakeFailure = failure
                    if brokenHandshakes >= 3 { return .failure(failure) }
                }
                frames = try socket.receiveFrames(wait: .never)
            } catch {
                return .failure(ClientError(.internal, "cannot receive from \(endpoint): \(error)"))
            }
            guard let frames else { continue }
            switch Result(catching: { () throws(WireError) in try codec.decode(frames: frames) }) {
            case .success(.handshake(.welcome(let welcome))):
                lastHeard = clock.now
                logger.debug(
                    "connected", metadata: ["coordinator.endpoint": "\(endpoint)", "client.id": "\(welcome.peerID)"])
                return .success(welcome)
            case .success(.handshake(.error(let refusal))):
                return .failure(ClientError(refusal: refusal, endpoint: endpoint))
            case .success(let other):
                logger.debug("ignored a message before WELCOME", metadata: ["wire.family": "\(other.family)"])
            case .failure(.unsupportedVersion(let got, _)):
                return .failure(
                    ClientError(
                        .protocolMismatch,
                        "the coordinator at \(endpoint) speaks protocol version \(got); this client speaks \(WireVersion.current)"
                    ))
            case .failure(let error):
                logger.debug("ignored undecodable frames before WELCOME", metadata: ["wire.error": "\(error)"])
            }
        }
        if let lastHandshakeFailure { return .failure(lastHandshakeFailure) }
        return .failure(
            ClientError(
                .unreachable,
                "cannot reach the coordinator at \(endpoint): no answer within \(ClientLoop.describe(configuration.connectTimeout))"
                    + (configuration.curve == nil
                        ? " (if it requires CURVE, give this client its keys: --key and --server-key)"
                        : " (the CURVE handshake did not complete: check --server-key and that the coordinator uses CURVE)")
            ))
    }

    /// The error a failed handshake becomes: a refused key is a permission error (exit 77),
    /// any other failure a protocol mismatch (exit 69).
    private func handshakeFailure(_ event: MonitorEvent) -> ClientError? {
        guard let explanation = event.handshakeFailureExplanation(curve: configuration.curve != nil) else { return nil }
        if event.kind == .handshakeFailedAuth {
            return ClientError(
                .permissionDenied, "the coordinator at \(endpoint) refused the handshake: \(explanation)")
        }
        if configuration.curve == nil {
            return ClientError(
                .protocolMismatch,
                "the coordinator at \(endpoint) requires CURVE and this client has no keys (\(event.handshakeFailureDetail)): "
                    + "pass --server-key FILE (the coordinator's public key) and --key FILE (this client's key pair; "
                    + "cohort keygen --role client), see docs/security.md")
        }
        return ClientError(.protocolMismatch, "the coordinator at \(endpoint) refused the handshake: \(explanation)")
    }

    /// `5 s`, `500 ms`.
    static func describe(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return "\(seconds) s" }
        return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
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
            fatal = ClientError(.internal, "cannot poll the client socket: \(error)")
            return
        }
        let wakeups = poller.register(inbox.waker)
        while closers.isEmpty, fatal == nil {
            do {
                try poller.poll(timeout: pollTimeout())
                // Messages first: a stop notice (restarting or not) arrives just before the
                // disconnection and says more about it.
                if poller.isReadable(network) {
                    while let frames = try socket.receiveFrames(wait: .never) {
                        receive(frames, socket)
                    }
                }
                if let disconnections, let monitor, poller.isReadable(disconnections) {
                    while let event = try monitor.next(wait: .never) {
                        guard event.kind == .disconnected else { continue }
                        while let frames = try socket.receiveFrames(wait: .never) { receive(frames, socket) }
                        coordinatorLost(socket, "its connection dropped")
                    }
                }
                if poller.isReadable(wakeups) {
                    for command in inbox.drain() { handle(command, socket) }
                }
            } catch {
                fatal = ClientError(.internal, "the client socket failed: \(error)")
            }
            checkTimers(socket)
        }
        if fatal == nil {
            let goodbye = ClientRequest(requestID: internalID(), .disconnect(reason: "client closed"))
            _ = try? socket.send(codec.encode(.clientRequest(goodbye)), wait: .never)
        }
    }

    /// Until the nearest deadline, at most 250 ms (probes are checked on each turn).
    private func pollTimeout() -> Duration {
        let now = clock.now
        var timeout = Duration.milliseconds(250)
        for entry in pending.values {
            if let deadline = entry.deadline { timeout = min(timeout, max(.zero, deadline - now)) }
        }
        return timeout
    }

    private func internalID() -> UInt64 {
        defer { nextInternalID += 1 }
        return nextInternalID
    }

    private func send(_ request: ClientRequest, _ socket: Socket) throws(ClientError) {
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

    private func handle(_ command: ClientConnection.Command, _ socket: Socket) {
        switch command {
        case .request(let id, let kind, let responder):
            if abandoned.remove(id) != nil {
                fail(responder, ClientError.cancelled)
                return
            }
            do {
                try send(ClientRequest(requestID: id, kind), socket)
            } catch {
                fail(responder, error)
                return
            }
            let deadline: ContinuousClock.Instant? =
                if case .reply = responder { clock.now + configuration.requestTimeout } else { nil }
            pending[id] = Pending(responder: responder, deadline: deadline, kind: kind)
        case .unwatch(let id, let group):
            guard pending.removeValue(forKey: id) != nil else { return }
            try? send(ClientRequest(requestID: internalID(), .unwatch(group: group)), socket)
        case .abandon(let id):
            if let entry = pending.removeValue(forKey: id) {
                fail(entry.responder, ClientError.cancelled)
            } else {
                abandoned.insert(id)
            }
        case .close(let continuation):
            closers.append(continuation)
        }
    }

    private func receive(_ frames: [[UInt8]], _ socket: Socket) {
        lastHeard = clock.now
        probe = nil
        let message: WireMessage
        do {
            message = try codec.decode(frames: frames)
        } catch {
            logger.warning("ignored undecodable frames from the coordinator", metadata: ["wire.error": "\(error)"])
            return
        }
        switch message {
        case .coordinatorReply(let reply):
            if case .error(let error) = reply.kind, error.code == .handshakeRequired, !pending.isEmpty {
                // The coordinator restarted and does not know this session: say HELLO again;
                // the request waits to be sent again.
                coordinatorLost(socket, error.message)
                return
            }
            if reply.requestID == 0, case .error(let error) = reply.kind, error.code == .shuttingDown, error.restarting
            {
                // Stopped with a journal (a planned restart): what is open waits for it, as after
                // a crash; with nothing open, the next request finds it back (HANDSHAKE_REQUIRED,
                // then HELLO again) or times out. A coordinator without a journal fails what is
                // pending at once (`route`).
                restartAnnounced = true
                coordinatorLost(socket, "it is restarting (\(error.message))")
                reconnecting?.announced = true
                return
            }
            route(reply)
        case .handshake(.welcome(let welcome)) where reconnecting != nil:
            reconnected(welcome, socket)
        case .handshake(.error(let refusal)):
            fatal = ClientError(refusal: refusal, endpoint: endpoint)
        default:
            logger.debug("ignored a message", metadata: ["wire.family": "\(message.family)"])
        }
    }

    private func route(_ reply: CoordinatorReply) {
        if case .error(let error) = reply.kind, error.code == .handshakeRequired {
            // A coordinator restarted on the same endpoint does not know this session: every
            // pending call (a watch of a group the old one ran, too) fails rather than hangs.
            fatal = ClientError(
                .connectionLost,
                "the coordinator at \(endpoint) no longer knows this client: it restarted (\(error.message))")
            return
        }
        if reply.requestID == 0 {
            if case .error(let error) = reply.kind {
                // Sent to every client as a coordinator without a journal stops (SIGTERM): what
                // is pending fails with a message that says so, rather than waiting for a timeout.
                fatal =
                    error.code == .shuttingDown
                    ? ClientError(.shuttingDown, "the coordinator at \(endpoint) is shutting down (\(error.message))")
                    : ClientError(error)
            }
            return
        }
        guard let entry = pending[reply.requestID] else { return }
        switch entry.responder {
        case .reply(let continuation):
            pending[reply.requestID] = nil
            continuation.resume(returning: reply.kind)
        case .stream(let continuation):
            switch reply.kind {
            case .error(let error):
                pending[reply.requestID] = nil
                continuation.finish(throwing: ClientError(error))
            case .group(let detail):
                continuation.yield(reply.kind)
                if detail.state.isFinished {
                    pending[reply.requestID] = nil
                    continuation.finish()
                }
            case .watchEvents(let events):
                continuation.yield(reply.kind)
                if events.contains(where: { if case .finished = $0.kind { true } else { false } }) {
                    pending[reply.requestID] = nil
                    continuation.finish()
                }
            default:
                continuation.yield(reply.kind)
            }
        }
    }

    private func checkTimers(_ socket: Socket) {
        let now = clock.now
        for (id, entry) in pending {
            if let deadline = entry.deadline, deadline <= now {
                pending[id] = nil
                fail(
                    entry.responder,
                    ClientError(.connectionLost, "no answer from the coordinator at \(endpoint) in time"))
            }
        }
        let watching = pending.values.contains { if case .stream = $0.responder { true } else { false } }
        guard watching else {
            probe = nil
            return
        }
        if let reconnecting {
            if now - reconnecting.since >= configuration.reconnectTimeout {
                let limit = ClientLoop.describe(configuration.reconnectTimeout)
                let lost = ClientError(
                    .connectionLost,
                    reconnecting.announced
                        ? "the coordinator at \(endpoint) said it was restarting but was not back within \(limit)"
                        : "the coordinator at \(endpoint) went away and was not back within \(limit)")
                for entry in pending.values { fail(entry.responder, lost) }
                pending = [:]
                self.reconnecting = nil
            } else if now - reconnecting.lastHello >= .seconds(1) {
                sayHelloAgain(socket)
            }
            return
        }
        if let probe {
            if now - probe.sentAt >= configuration.probeAfter {
                let lost = ClientError(.connectionLost, "the coordinator at \(endpoint) stopped answering")
                for entry in pending.values { fail(entry.responder, lost) }
                pending = [:]
                self.probe = nil
            }
        } else if now - lastHeard >= configuration.probeAfter {
            let id = internalID()
            if (try? send(ClientRequest(requestID: id, .workers), socket)) != nil {
                probe = (id, now)
            }
        }
    }

    // MARK: - Reconnecting

    /// The coordinator went away (it restarts, having said so, or died):
    /// with requests or watches open, say HELLO again until it is back (a restarted coordinator
    /// reloads its journal), at most ``ClientConfiguration/reconnectTimeout``.
    private func coordinatorLost(_ socket: Socket, _ why: String) {
        guard reconnecting == nil, fatal == nil, !pending.isEmpty else { return }
        let announced = restartAnnounced
        logger.info(
            "the coordinator went away; reconnecting",
            metadata: ["coordinator.endpoint": "\(endpoint)", "reason": "\(why)"])
        probe = nil
        reconnecting = (clock.now, clock.now, announced)
        configuration.onConnectionChange?(
            .waiting(reason: why, restarting: announced, timeout: configuration.reconnectTimeout))
        sayHelloAgain(socket)
    }

    private func sayHelloAgain(_ socket: Socket) {
        reconnecting?.lastHello = clock.now
        let hello = Hello(
            role: .client, softwareVersion: CohortClient.softwareVersion, peerName: configuration.peerName)
        _ = try? socket.send(codec.encode(.handshake(.hello(hello))), wait: .never)
    }

    /// Welcomed again: open requests and watches are sent again under their ids (a watch starts
    /// over with a fresh snapshot). A submission without a group id is not sent again (it might
    /// have been accepted already); it fails with ``ClientError/Code/connectionLost``.
    private func reconnected(_ welcome: Welcome, _ socket: Socket) {
        reconnecting = nil
        restartAnnounced = false
        logger.info(
            "reconnected", metadata: ["coordinator.endpoint": "\(endpoint)", "coordinator.epoch": "\(welcome.epoch)"])
        configuration.onConnectionChange?(.reconnected(epoch: welcome.epoch))
        for (id, entry) in pending.sorted(by: { $0.key < $1.key }) {
            if case .submit(let submission) = entry.kind, submission.groupID == nil {
                pending[id] = nil
                fail(
                    entry.responder,
                    ClientError(
                        .connectionLost,
                        "the coordinator at \(endpoint) restarted before it answered; the group may have been accepted (use --id to resubmit safely)"
                    ))
                continue
            }
            do {
                try send(ClientRequest(requestID: id, entry.kind), socket)
            } catch {
                pending[id] = nil
                fail(entry.responder, error)
            }
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
        let ending = fatal ?? ClientError.closed
        for entry in pending.values { fail(entry.responder, ending) }
        pending = [:]
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
