import CohortWire
import Foundation
import Logging
import ZeroMQ

/// What other threads hand the loop through its mailbox.
enum LoopInput: Sendable {
    /// An attempt started or finished.
    case attempt(AttemptEvent)
    /// A lock request, withdrawal or release from the cluster exclusivity manager.
    case lock(LockMessage)
    /// `Worker.run()`'s task was cancelled: stop.
    case stop
    /// `Worker.drain()`: take no new work, finish what runs, then stop.
    case drain
}

/// The worker's I/O loop: owns the DEALER socket to the coordinator, on one dedicated
/// thread, and drives the session state machine, the attempts and the lock messages.
///
/// Everything here runs on the loop's thread; other threads talk to it only through
/// ``mailbox``. Each turn: wait for the socket, the mailbox or the next deadline; read
/// every message that is there; take every event posted; let the session act; then send
/// what the turn produced, batched (one `started` and one `results` message per turn,
/// never on a timer).
final class WorkerLoop {
    struct Attempt {
        let procedure: AttemptProcedure
        var startedAt: WireTimestamp?
        /// Cancelled because the worker is stopping: its result is not reported, the final
        /// `disconnect` tells the coordinator to treat it as lost.
        var interrupted = false
    }

    let configuration: WorkerConfiguration
    let registry: ProcedureRegistry
    let logger: Logger
    let mailbox: Mailbox<LoopInput>
    let codec = WireCodec()
    let context: Context
    let queue: ProcedureQueue
    let locks: ClusterExclusivityManager
    let settings: KindSettings
    let report: @Sendable (AttemptEvent) -> Void

    var session: WorkerSession
    var socket: Socket?
    var poller = Poller()
    var socketIndex: Int?
    /// Handshake events of ``socket``: a refused key or a CURVE mismatch stops the worker.
    var monitor: Monitor?
    var monitorIndex: Int?
    var mailboxIndex = 0
    var attempts: [UInt64: Attempt] = [:]
    var outbox = Outbox()
    /// Results that finished while no session was ready, sent after the next READY.
    var unsentResults: [AttemptResult] = []
    /// Lock withdrawals and releases made while no session was ready.
    var unsentLockMessages: [LockMessage] = []
    /// Frames a send could not queue (the socket was full), sent first when it is writable.
    var blocked: [[[UInt8]]] = []
    var stopDeadline: ContinuousClock.Instant?
    /// Set while draining: when what still runs is cancelled and handed back.
    var drainDeadline: ContinuousClock.Instant?
    /// How many attempts stopping interrupted (reported in the final `disconnect`).
    var interruptedByStop = 0
    /// READY was sent in a session that follows a lost one, and the queue holds its
    /// attempts until the coordinator's first answer (which cancels those it does not adopt).
    var holdingForAdoption = false
    var failure: WorkerRunError?
    /// Told of every welcomed session; the library prints nothing itself.
    let onReady: @Sendable (WorkerSessionStarted) -> Void
    var undecodable = 0

    init(
        configuration: WorkerConfiguration, registry: ProcedureRegistry, logger: Logger, mailbox: Mailbox<LoopInput>,
        onReady: @escaping @Sendable (WorkerSessionStarted) -> Void = { _ in }
    ) throws {
        self.configuration = configuration
        self.onReady = onReady
        self.registry = registry
        var logger = logger
        logger[metadataKey: "worker.name"] = "\(configuration.name)"
        self.logger = logger
        self.mailbox = mailbox
        context = try Context()
        queue = ProcedureQueue(name: "worker", maxConcurrentCount: configuration.slots)
        // Nothing starts before the worker holds a lease (docs/scheduling.md, "Leases").
        queue.isSuspended = true
        locks = ClusterExclusivityManager(logger: logger) { [mailbox] message in mailbox.post(.lock(message)) }
        queue.exclusivityManager = locks
        settings = KindSettings(killGrace: configuration.killGrace, maxCapturedOutput: configuration.maxCapturedOutput)
        report = { [mailbox] event in mailbox.post(.attempt(event)) }
        session = WorkerSession(
            settings: .init(
                heartbeatInterval: configuration.heartbeatInterval, heartbeatLiveness: configuration.heartbeatLiveness,
                reconnectDelay: configuration.reconnectDelay, maxReconnectDelay: configuration.maxReconnectDelay),
            now: .now, makeSessionID: WorkerLoop.makeSessionID)
    }

    /// Runs until the worker has stopped. Call it on the loop's own thread.
    /// - Throws: ``WorkerRunError`` if the coordinator refused the worker for good, or the socket failed.
    func run() throws(WorkerRunError) {
        mailboxIndex = poller.register(mailbox.waker)
        defer { shutDown() }
        perform(session.tick(now: .now), now: .now)
        while failure == nil {
            let now = ContinuousClock.now
            if let stopDeadline, attempts.isEmpty || now >= stopDeadline { break }
            if stopDeadline == nil, let drainDeadline {
                // Drained once nothing runs and every result reached the coordinator (or the
                // coordinator stayed away until the deadline).
                if attempts.isEmpty, unsentResults.isEmpty || now >= drainDeadline { break }
                if now >= drainDeadline {
                    beginStopping(now: now, reason: "its drain timeout (\(configuration.drainTimeout)) passed")
                }
            }
            flush(now: now)
            var deadline = session.nextDeadline
            if stopDeadline == nil, let drainDeadline {
                deadline = deadline.map { min($0, drainDeadline) } ?? drainDeadline
            }
            if let stopDeadline { deadline = deadline.map { min($0, stopDeadline) } ?? stopDeadline }
            do {
                try poller.poll(timeout: deadline.map { max($0 - ContinuousClock.now, .zero) })
            } catch {
                throw WorkerRunError(.transport, "polling the coordinator's socket failed: \(error)")
            }
            let turn = ContinuousClock.now
            if let socketIndex, poller.events(at: socketIndex).contains(.writable) { sendBlocked() }
            if let socketIndex, poller.isReadable(socketIndex) { receiveAll(now: turn) }
            if let monitorIndex, poller.isReadable(monitorIndex) { checkHandshake() }
            if poller.isReadable(mailboxIndex) {
                for input in mailbox.drain() { handle(input, now: turn) }
            }
            perform(session.tick(now: turn), now: turn)
        }
        if let failure { throw failure }
    }

    // MARK: Session actions

    func perform(_ actions: [WorkerSession.Action], now: ContinuousClock.Instant) {
        for action in actions {
            switch action {
            case .connect(let sessionID):
                connect(sessionID: sessionID, now: now)
            case .announce(let sessionID, let peerID):
                announce(sessionID: sessionID, peerID: peerID, now: now)
            case .heartbeat(let sequence):
                send(.worker(.heartbeat(sequence: sequence)), now: now)
            case .leaseEnded(let reason):
                stopExclusiveAttempts(reason: reason)
            case .leaseRenewed:
                logger.info("lease renewed")
                if stopDeadline == nil, !holdingForAdoption { queue.isSuspended = false }
            case .disconnect(let reason):
                disconnect(reason: reason)
            case .fail(let error):
                failure = WorkerRunError(
                    error.code == .permissionDenied ? .permissionDenied : .refused,
                    "the coordinator refused this worker: \(error.message)")
            }
        }
    }

    private func connect(sessionID: String, now: ContinuousClock.Instant) {
        logger.debug(
            "connecting", metadata: ["coordinator": "\(configuration.coordinator)", "session.id": "\(sessionID)"])
        do {
            let socket = try context.socket(.dealer)
            if let curve = configuration.curve { try socket.makeCurveClient(curve) }
            let monitor = try socket.monitor(.handshakes)
            try socket.connect(configuration.coordinator)
            install(socket, monitor: monitor)
        } catch {
            // zmq_connect fails only for the endpoint itself (malformed, an unknown transport)
            // or for want of descriptors: retrying would not help.
            failure = WorkerRunError(.transport, "cannot connect to \(configuration.coordinator): \(error)")
            return
        }
        let hello = Hello(role: .worker, softwareVersion: Worker.softwareVersion, peerName: configuration.name)
        send(.handshake(.hello(hello)), now: now)
    }

    private func announce(sessionID: String, peerID: String, now: ContinuousClock.Instant) {
        // Every attempt still here, started or still queued (no `startedAt`): the coordinator
        // adopts each or cancels it, in its answer to READY.
        let running = attempts.values.filter { !$0.interrupted }.sorted {
            $0.procedure.dispatch.ref.id < $1.procedure.dispatch.ref.id
        }
        .map { attempt -> RunningAttempt in
            let dispatch = attempt.procedure.dispatch
            let held = dispatch.fencingTokens.merging(locks.heldTokens(of: dispatch.ref.id)) { _, new in new }
            return RunningAttempt(ref: dispatch.ref, startedAt: attempt.startedAt, heldTokens: held)
        }
        holdingForAdoption = queue.isSuspended
        let draining = drainDeadline != nil || stopDeadline != nil
        let ready = WorkerReady(
            name: configuration.name, host: configuration.host, sessionID: sessionID, labels: configuration.labels,
            slots: UInt32(configuration.slots), kinds: registry.kindNames, running: running, draining: draining)
        send(.worker(.ready(ready)), now: now)
        // READY says it already; the message is for coordinators that do not read that field.
        if draining {
            send(.worker(.draining(reason: "worker \(configuration.name) is draining")), now: now)
        }
        for request in locks.outstandingRequests() { outbox.locks.append(.request(request)) }
        outbox.locks.append(contentsOf: unsentLockMessages)
        unsentLockMessages = []
        outbox.results.append(contentsOf: unsentResults)
        unsentResults = []
        logger.info(
            "ready", metadata: ["session.id": "\(sessionID)", "worker.id": "\(peerID)", "running": "\(running.count)"])
        onReady(WorkerSessionStarted(name: configuration.name, sessionID: sessionID, running: running.count))
    }

    /// Closes the connection and stops starting new work: the queue is suspended, so queued
    /// attempts wait and running ones go on. The next READY reports them all; the queue
    /// resumes once the coordinator has answered it (see ``resumeAfterAdoption()``).
    func disconnect(reason: String) {
        logger.warning("disconnected from the coordinator", metadata: ["reason": "\(reason)"])
        closeSocket()
        unsentResults.append(contentsOf: outbox.results)
        outbox = Outbox()
        blocked = []
        holdingForAdoption = false
        if stopDeadline == nil { queue.isSuspended = true }
    }

    /// The coordinator's first message after a READY that reported attempts has been
    /// handled (its cancels of the attempts it does not adopt come first): queued attempts
    /// may start.
    func resumeAfterAdoption() {
        guard holdingForAdoption else { return }
        holdingForAdoption = false
        if session.holdsLease, stopDeadline == nil { queue.isSuspended = false }
    }

    private func install(_ socket: Socket, monitor: Monitor) {
        closeSocket()
        poller = Poller()
        mailboxIndex = poller.register(mailbox.waker)
        socketIndex = try? poller.register(socket)
        monitorIndex = try? poller.register(monitor.socket)
        self.socket = socket
        self.monitor = monitor
    }

    /// A refused key or a protocol error stops the worker (retrying cannot help); a connection
    /// closed during the handshake (CURVE on one side only, or the coordinator restarting) is
    /// logged and retried.
    private func checkHandshake() {
        while let event = try? monitor?.next(wait: .never) {
            guard let explanation = event.handshakeFailureExplanation(curve: configuration.curve != nil) else {
                continue
            }
            let text = "the coordinator at \(configuration.coordinator) refused the handshake: \(explanation)"
            guard event.isDefiniteHandshakeFailure else {
                logger.warning("handshake failed; retrying", metadata: ["reason": "\(text)"])
                continue
            }
            failure = WorkerRunError(event.kind == .handshakeFailedAuth ? .permissionDenied : .refused, text)
            return
        }
    }

    private func closeSocket() {
        monitor?.close()
        monitor = nil
        monitorIndex = nil
        socket?.close()
        socket = nil
        socketIndex = nil
        poller = Poller()
        mailboxIndex = poller.register(mailbox.waker)
    }

    // MARK: The lease

    /// The lease ended (docs/scheduling.md, "Leases"): every attempt that holds a cluster-wide
    /// category, or waits for one, is stopped at once (its processes killed without a grace:
    /// the coordinator may soon grant the category to someone else) and reported cancelled
    /// with code `WORKER_LOST`, which the coordinator counts as a worker loss. Attempts that
    /// hold no category carry on.
    func stopExclusiveAttempts(reason: String) {
        let exclusive = attempts.filter { id, attempt in
            !attempt.procedure.dispatch.holds.isEmpty || locks.hasRequests(of: id)
        }
        logger.warning(
            "lease ended; stopping the attempts that hold cluster locks",
            metadata: ["reason": "\(reason)", "attempts": "\(exclusive.count)"])
        let words = "worker \(configuration.name) lost its lease: \(reason)"
        // Nothing new starts without a lease: the next session (or a renewal) resumes.
        if stopDeadline == nil { queue.isSuspended = true }
        for (_, attempt) in exclusive.sorted(by: { $0.key < $1.key }) {
            attempt.procedure.context.scope.killAtOnce()
            attempt.procedure.cancel(with: CancellationReason(words, code: .workerLost))
        }
    }

    // MARK: Stopping

    /// Starts draining: the coordinator is told to send no new work; what runs (and what it
    /// sent already) finishes; the loop ends once nothing is left, or stops at the drain
    /// timeout (see ``run()``).
    func beginDraining(now: ContinuousClock.Instant) {
        guard drainDeadline == nil, stopDeadline == nil else { return }
        drainDeadline = now + configuration.drainTimeout
        logger.notice(
            "draining", metadata: ["running": "\(attempts.count)", "drain.timeout": "\(configuration.drainTimeout)"])
        if session.isReady { send(.worker(.draining(reason: "worker \(configuration.name) is draining")), now: now) }
    }

    /// Starts stopping: no new work, every attempt cancelled; the loop ends when they have
    /// finished (or the kill grace and a margin have passed), and the final `disconnect`
    /// hands the interrupted attempts back to the coordinator.
    func beginStopping(now: ContinuousClock.Instant, reason: String = "it was told to stop") {
        guard stopDeadline == nil else { return }
        stopDeadline = now + configuration.killGrace + .seconds(3)
        logger.notice("stopping", metadata: ["running": "\(attempts.count)", "reason": "\(reason)"])
        if session.isReady, drainDeadline == nil {
            send(.worker(.draining(reason: "worker \(configuration.name) is stopping")), now: now)
        }
        for id in attempts.keys { attempts[id]!.interrupted = true }
        interruptedByStop = attempts.count
        queue.cancelAll(with: CancellationReason("worker \(configuration.name) stopped", code: .shutdown))
        // Queued attempts held while the coordinator was lost must run to finish cancelled.
        holdingForAdoption = false
        queue.isSuspended = false
    }

    private func shutDown() {
        let now = ContinuousClock.now
        if session.isReady {
            flush(now: now)
            let reason =
                interruptedByStop == 0
                ? "worker \(configuration.name) stopped"
                : "worker \(configuration.name) stopped; \(interruptedByStop) \(interruptedByStop == 1 ? "attempt" : "attempts") handed back"
            send(.worker(.disconnect(reason: reason)), now: now)
            logger.notice("stopped", metadata: ["attempts.handedBack": "\(interruptedByStop)"])
        }
        session.stop()
        closeSocket()
        context.terminate()
        if undecodable > 0 { logger.warning("dropped undecodable messages", metadata: ["count": "\(undecodable)"]) }
    }

    /// A fresh session id: 16 random hex digits.
    static func makeSessionID() -> String {
        let value = UInt64.random(in: .min ... .max)
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
