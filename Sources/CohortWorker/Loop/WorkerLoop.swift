import CohortCore
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
    /// A running attempt's request about its own group (`context.cancelGroup`,
    /// `context.group.add`), sent over the worker's connection.
    case groupRequest(WorkerMessage)
    /// Running attempts wrote log lines (``LogShipper``): send what the window allows.
    case logs
}

/// The worker's I/O loop: a thin shell around its state machine (``WorkerMachine``, in
/// CohortCore, which makes every decision: the session, the lease, slots and the queue of
/// dispatched attempts, cancels, lock requests, what is reported and when, draining). The
/// loop owns the DEALER socket to the coordinator, the engine (a ``ProcedureQueue``) and the
/// lock manager, on one dedicated thread; it feeds the machine what they say, with the time,
/// and carries out its actions.
///
/// Everything here runs on the loop's thread; other threads talk to it only through
/// ``mailbox``. Each turn: send what the last turn produced (one `started` and one `results`
/// message per turn, never on a timer); wait for the socket, the mailbox or the machine's
/// next deadline; read every message that is there; take every event posted; let time pass.
final class WorkerLoop {
    typealias Machine = WorkerMachine<WireVocabulary>

    let configuration: WorkerConfiguration
    let registry: ProcedureRegistry
    let logger: Logger
    let mailbox: Mailbox<LoopInput>
    let codec = WireCodec()
    let clock = LoopClock()
    let context: Context
    let queue: ProcedureQueue
    let locks: ClusterExclusivityManager
    let settings: KindSettings
    let report: @Sendable (AttemptEvent) -> Void
    /// Hands a running attempt's request about its group to the loop.
    let groupRequests: @Sendable (WorkerMessage) -> Void
    /// What running attempts write, on its way to the coordinator.
    let logs: LogShipper

    var machine: Machine
    /// The attempts the engine runs, by id.
    var procedures: [UInt64: AttemptProcedure] = [:]
    /// Results of built-ins run on the loop's thread, given to the machine once the actions
    /// that started them are done.
    var inlineResults: [AttemptResult] = []
    var socket: Socket?
    var poller = Poller()
    var socketIndex: Int?
    /// Handshake events of ``socket``: a refused key or a CURVE mismatch stops the worker.
    var monitor: Monitor?
    var monitorIndex: Int?
    var mailboxIndex = 0
    /// Encoded messages the socket could not take yet, oldest first.
    var blocked: [[[UInt8]]] = []
    var failure: WorkerRunError?
    /// The coordinator connected to (one of ``WorkerConfiguration/coordinator``'s list, or a
    /// leader a standby named).
    var endpoint = ""
    /// The leader the last NOT_LEADER named ("" when it named none), for the next connection.
    var redirect: String?
    /// Connections made so far.
    var connections = 0
    /// Told of every welcomed session; the library prints nothing itself.
    let onReady: @Sendable (WorkerSessionStarted) -> Void
    var undecodable = 0
    /// The worker's metrics, when it records them.
    let metrics: WorkerMetrics?

    init(
        configuration: WorkerConfiguration, registry: ProcedureRegistry, logger: Logger, mailbox: Mailbox<LoopInput>,
        metrics: WorkerMetrics? = nil, onReady: @escaping @Sendable (WorkerSessionStarted) -> Void = { _ in }
    ) throws {
        self.configuration = configuration
        self.metrics = metrics
        metrics?.slots.record(configuration.slots)
        metrics?.connected.record(0)
        self.onReady = onReady
        self.registry = registry
        var logger = logger
        logger[metadataKey: "worker.name"] = "\(configuration.name)"
        self.logger = logger
        self.mailbox = mailbox
        context = try Context()
        // The machine hands the engine at most `slots` attempts at once.
        queue = ProcedureQueue(name: "worker", maxConcurrentCount: configuration.slots)
        let logs = LogShipper { [mailbox] in mailbox.post(.logs) }
        self.logs = logs
        locks = ClusterExclusivityManager(logger: logger) { [mailbox] message in mailbox.post(.lock(message)) }
        queue.exclusivityManager = locks
        settings = KindSettings(
            killGrace: configuration.killGrace, maxCapturedOutput: configuration.maxCapturedOutput,
            processesStarted: metrics?.processesStarted, logs: logs)
        report = { [mailbox] event in mailbox.post(.attempt(event)) }
        groupRequests = { [mailbox] message in mailbox.post(.groupRequest(message)) }
        machine = Machine(
            settings: .init(
                slots: configuration.slots,
                session: .init(
                    heartbeatInterval: configuration.heartbeatInterval,
                    heartbeatLiveness: configuration.heartbeatLiveness, reconnectDelay: configuration.reconnectDelay,
                    maxReconnectDelay: configuration.maxReconnectDelay),
                drainTimeout: configuration.drainTimeout, stopGrace: configuration.killGrace + .seconds(3)),
            now: clock.now(), makeSessionID: WorkerLoop.makeSessionID)
    }

    /// Runs until the worker has stopped. Call it on the loop's own thread.
    /// - Throws: ``WorkerRunError`` if the coordinator refused the worker for good, or the socket failed.
    func run() throws(WorkerRunError) {
        mailboxIndex = poller.register(mailbox.waker)
        defer { shutDown() }
        perform(machine.tick(now: clock.now()))
        while failure == nil {
            if machine.isDone(now: clock.now()) { break }
            perform(machine.flush())
            shipLogs()
            var timeout = machine.nextDeadline.map { max($0 - clock.now(), .zero) }
            // A line a child left unended is sent as a piece once it is old enough.
            // (Only when it could be sent: not while disconnected or the window is full.)
            if machine.session.isReady, logs.inFlightBytes < Self.logWindowBytes,
                let fragment = logs.nextFragmentDeadline
            {
                let wait = max(fragment - .now, .milliseconds(1))
                timeout = min(timeout ?? wait, wait)
            }
            do {
                try poller.poll(timeout: timeout)
            } catch {
                throw WorkerRunError(.transport, "polling the coordinator's socket failed: \(error)")
            }
            let turn = clock.now()
            if let socketIndex, poller.events(at: socketIndex).contains(.writable) { sendBlocked() }
            if let socketIndex, poller.isReadable(socketIndex) { receiveAll(now: turn) }
            if let monitorIndex, poller.isReadable(monitorIndex) { checkHandshake() }
            if poller.isReadable(mailboxIndex) {
                for input in mailbox.drain() { handle(input, now: turn) }
            }
            perform(machine.tick(now: turn))
            metrics?.running.record(procedures.count)
        }
        if let failure { throw failure }
    }

    // MARK: The machine's actions

    /// Carries out the machine's actions; built-ins run here feed their results back, which
    /// may start more.
    func perform(_ actions: [Machine.Action]) {
        var pending = actions
        while !pending.isEmpty {
            for action in pending { perform(action) }
            pending = []
            let results = inlineResults
            inlineResults = []
            for result in results { pending += machine.attemptFinished(result, now: clock.now()) }
        }
    }

    private func perform(_ action: Machine.Action) {
        switch action {
        case .connect(let sessionID):
            connect(sessionID: sessionID)
        case .send(let message):
            send(message)
        case .disconnect(let reason):
            logger.warning("disconnected from the coordinator", metadata: ["reason": "\(reason)"])
            metrics?.connected.record(0)
            closeSocket()
            blocked = []
        case .fail(let refusal):
            failure = WorkerRunError(
                refusal.kind == .permissionDenied ? .permissionDenied : .refused,
                "the coordinator refused this worker: \(refusal.message)")
        case .start(let dispatch):
            start(dispatch)
        case .cancel(let attemptID, let cancellation):
            procedures[attemptID]?.cancel(
                with: CancellationReason(cancellation.reason, code: cancellation.code))
        case .kill(let attemptID, let reason):
            // The coordinator may soon grant its categories to someone else: its processes are
            // killed without a grace, and it is reported as a worker loss.
            // Cancelled first, then killed: were the processes killed first, their exit could
            // be reaped, and the attempt reported failed by the signal, before the cancel.
            guard let procedure = procedures[attemptID] else { return }
            procedure.context.scope.killsAtOnceFromNowOn()
            procedure.cancel(
                with: CancellationReason(
                    "worker \(configuration.name) lost its lease: \(reason)", code: .workerLost))
            procedure.context.scope.killAtOnce()
        case .cancelAll:
            queue.cancelAll(
                with: CancellationReason("worker \(configuration.name) stopped", code: .shutdown))
        case .welcomed(let sessionID, let peerID, let held, let resent):
            logger.info(
                "ready",
                metadata: [
                    "session.id": "\(sessionID)", "worker.id": "\(peerID)", "running": "\(held)",
                    "results.resent": "\(resent.count)",
                ])
            metrics?.connected.record(1)
            onReady(WorkerSessionStarted(name: configuration.name, sessionID: sessionID, running: held))
        case .leaseRenewed:
            logger.info("lease renewed")
        case .ignored(let attemptID, let reason):
            logger.info("dispatch not run", metadata: ["attempt.id": "\(attemptID)", "reason": "\(reason)"])
        case .drainTimedOut(let running):
            logger.notice(
                "stopping",
                metadata: [
                    "running": "\(running)", "reason": "its drain timeout (\(configuration.drainTimeout)) passed",
                ])
        case .leaseEnded(let reason, let stopped):
            logger.warning(
                "lease ended; stopping the attempts that hold cluster locks",
                metadata: ["reason": "\(reason)", "attempts": "\(stopped)"])
        }
    }

    /// The coordinator to connect to next: the first of the list at first; then the leader a
    /// standby named (``redirect``), else the next of the list after each lost connection.
    private func nextEndpoint() -> String {
        let list = Endpoint.list(configuration.coordinator)
        defer { (redirect, connections) = (nil, connections + 1) }
        guard connections > 0, !list.isEmpty else { return list.first ?? configuration.coordinator }
        if let redirect, !redirect.isEmpty, redirect != endpoint { return redirect }
        guard list.count > 1 else { return list[0] }
        let index = list.firstIndex(of: endpoint) ?? -1
        return list[(index + 1) % list.count]
    }

    private func connect(sessionID: String) {
        endpoint = nextEndpoint()
        logger.debug("connecting", metadata: ["coordinator": "\(endpoint)", "session.id": "\(sessionID)"])
        do {
            let socket = try context.socket(.dealer)
            if let curve = configuration.curve { try socket.makeCurveClient(curve) }
            let monitor = try socket.monitor(.handshakes)
            try socket.connect(endpoint)
            install(socket, monitor: monitor)
            // Lines sent on the last connection and not acknowledged go again on this one.
            logs.rewind()
        } catch {
            // zmq_connect fails only for the endpoint itself (malformed, an unknown transport)
            // or for want of descriptors: retrying would not help.
            failure = WorkerRunError(.transport, "cannot connect to \(endpoint): \(error)")
            return
        }
        let hello = Hello(role: .worker, softwareVersion: Worker.softwareVersion, peerName: configuration.name)
        send(.handshake(.hello(hello)))
    }

    /// Hands a dispatched attempt to the engine. A built-in that does no waiting (`echo`,
    /// `fail`) and holds no tokens runs here, on the loop's thread (the machine gave it a
    /// slot for the time of the call), without the two thread hand-offs of the queue and the
    /// mailbox; its result goes to the machine with the turn's.
    private func start(_ dispatch: AttemptDispatch) {
        let task = dispatch.ref
        let context = ProcedureContext(
            group: task.group, child: task.path, attempt: Int(task.attempt), attemptID: task.id,
            workerName: configuration.name, fencingTokens: dispatch.fencingTokens, extraEnvironment: dispatch.env,
            logger: logger,
            coordinator: CoordinatorAccess(
                endpoint: configuration.coordinator, publicKey: configuration.curve?.serverKey.z85,
                attemptToken: dispatch.attemptToken, send: groupRequests),
            scope: AttemptScope(
                exclusivity: .cluster(
                    locks, task, held: dispatch.fencingTokens.filter { dispatch.holds.contains($0.key) })
            ),
            settings: settings)
        let kind = registry.kind(named: dispatch.kind)
        metrics?.started.increment()
        if case .immediate(let body)? = kind?.body, dispatch.fencingTokens.isEmpty {
            let startedAt = WireTimestamp(Date())
            let outcome: WireOutcome
            do {
                outcome = .succeeded(output: try body(dispatch.input, context))
            } catch {
                outcome = .failed(error: AttemptProcedure.describe(error))
            }
            context.scope.close()
            logs.finish(task.id)
            metrics?.finished(outcome)
            inlineResults.append(
                AttemptResult(ref: task, outcome: outcome, startedAt: startedAt, finishedAt: WireTimestamp(Date())))
            return
        }
        let procedure = AttemptProcedure(dispatch: dispatch, kind: kind, context: context, report: report)
        procedures[task.id] = procedure
        queue.add(procedure)
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
            let text = "the coordinator at \(endpoint) refused the handshake: \(explanation)"
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

    private func shutDown() {
        let wasReady = machine.session.isReady
        let handedBack = machine.interruptedByStop
        perform(machine.disconnect())
        if wasReady { logger.notice("stopped", metadata: ["attempts.handedBack": "\(handedBack)"]) }
        closeSocket()
        logs.removeAll()
        context.terminate()
        if undecodable > 0 { logger.warning("dropped undecodable messages", metadata: ["count": "\(undecodable)"]) }
    }

    /// A fresh session id: 16 random hex digits.
    @Sendable static func makeSessionID() -> String {
        let value = UInt64.random(in: .min ... .max)
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
