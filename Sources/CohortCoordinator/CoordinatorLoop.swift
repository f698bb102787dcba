import CohortCore
import CohortJournal
import CohortWire
import Foundation
import Logging
import ZeroMQ

/// The coordinator's I/O loop: owns the ROUTER socket on its thread; each turn it polls,
/// decodes what arrived with `WireCodec`, feeds it to the ``Scheduler`` with one `now`,
/// turns the scheduler's actions into messages (batched per peer per turn) and flushes.
///
/// Not thread-safe: created and used only by the loop thread (`run()`); other threads talk
/// to it through the ``Mailbox`` of ``LoopCommand``s.
final class CoordinatorLoop {
    let configuration: CoordinatorConfiguration
    var logger: Logger
    let mailbox: Mailbox<LoopCommand>
    let stats: CoordinatorStatistics
    let onBound: @Sendable (String) -> Void
    let codec: WireCodec
    let clock = LoopClock()
    /// The incarnation sent in WELCOME: the journal's epoch (the lease's once leading).
    var epoch: UInt64
    /// The journal, when the coordinator has a state directory (CoordinatorLoop+Journal.swift).
    let journalWriter: JournalWriter?
    /// What children wrote (CoordinatorLoop+Logs.swift): in `logs.sqlite` beside the SQLite
    /// journal, else in memory.
    let logs: LogDesk?
    /// Attempts whose lines were stored and whose end the store has not been told (a
    /// restart forgets them: their end then reads as not recorded).
    var loggedAttempts: Set<UInt64> = []
    /// The metrics, when the coordinator records them (CoordinatorMetrics.swift).
    let metrics: CoordinatorMetrics?
    /// The lease, when the coordinator takes part in leader election
    /// (CoordinatorLoop+Leadership.swift).
    let leadership: Leadership?
    /// Set when this coordinator lost the lease: the loop ends with it.
    var deposed: JournalError?
    /// The endpoint bound, with a wildcard port resolved.
    private(set) var boundEndpoint: String?

    var scheduler: Scheduler
    var peers = PeerTable()
    var outbox = Outbox()
    /// Who watches which group. Changed only through ``changeWatches(_:)``, which tells the
    /// scheduler which groups are watched.
    private(set) var watches = WatchTable()
    var now: Timestamp
    var stopping = false
    /// CURVE's ZAP handler and authorised keys; `nil` without CURVE.
    var security: LoopSecurity?
    /// The attempt tokens handed out with dispatches (Security/AttemptTokens.swift).
    var attemptTokens = AttemptTokens()
    /// Cancels accepted and waiting for their workers before they are acknowledged.
    var pendingCancels = PendingCancels()
    /// Parses, off the loop thread, every submission but small strict JSON.
    let parsingPool = SpecParsingPool()
    /// The most messages read in one turn before the turn's replies are flushed.
    let readsPerTurn = 4096
    /// Forgets clients silent for long, without watches.
    private var idleClients: IdleClientSweep

    init(
        configuration: CoordinatorConfiguration, logger: Logger, mailbox: Mailbox<LoopCommand>,
        stats: CoordinatorStatistics, journal: JournalWriter? = nil, metrics: CoordinatorMetrics? = nil,
        leadership: Leadership? = nil, onBound: @escaping @Sendable (String) -> Void
    ) {
        self.journalWriter = journal
        self.logs = Self.openLogs(configuration, directory: journal?.directory, logger: logger)
        self.leadership = leadership
        self.metrics = metrics
        self.configuration = configuration
        self.logger = logger
        self.mailbox = mailbox
        self.stats = stats
        self.onBound = onBound
        self.codec = WireCodec(maxFrameSize: configuration.maxFrameSize)
        self.scheduler = Self.makeScheduler(
            configuration, tokenFloor: configuration.tokenFloor, observes: metrics != nil)
        self.now = clock.now()
        self.idleClients = IdleClientSweep(now: now)
        self.epoch = configuration.epoch ?? UInt64(max(now.nanosecondsSinceEpoch / 1_000_000_000, 1))
        self.logger[metadataKey: "coordinator.id"] = "\(configuration.coordinatorID)"
    }

    /// The log store: `logs.sqlite` in the state directory, or the journal's PostgreSQL
    /// database (so a standby that takes over has every stored line), else (no journal) in
    /// memory; in memory too, with an error logged, if it cannot be opened.
    static func openLogs(_ configuration: CoordinatorConfiguration, directory: StateDirectory?, logger: Logger)
        -> LogDesk?
    {
        let (attemptBytes, totalBytes) = (configuration.maxLogBytes, configuration.maxLogStoreBytes)
        do {
            if let open = configuration.journalStore?.openLogs {
                return LogDesk(store: try open(attemptBytes, totalBytes))
            }
            let path = directory.map { $0.path + "/logs.sqlite" }
            return LogDesk(store: try LogStore(path: path, maxAttemptBytes: attemptBytes, maxTotalBytes: totalBytes))
        } catch {
            logger.error("cannot open the log store; keeping logs in memory", metadata: ["error": "\(error)"])
            return try? LogDesk(store: LogStore(path: nil, maxAttemptBytes: attemptBytes, maxTotalBytes: totalBytes))
        }
    }

    /// A scheduler with the configuration's settings, every fencing token above `tokenFloor`.
    static func makeScheduler(
        _ configuration: CoordinatorConfiguration, tokenFloor: UInt64, observes: Bool
    ) -> Scheduler {
        var settings = SchedulerConfiguration()
        settings.prefetch = configuration.prefetch
        settings.shortAttempt = configuration.shortAttempt
        settings.heartbeatInterval = configuration.heartbeatInterval
        settings.liveness = configuration.heartbeatLiveness
        settings.finishedGroupRetention = configuration.finishedGroupRetention
        settings.maxWorkerLosses = configuration.maxWorkerLosses
        settings.tokenFloor = tokenFloor
        settings.lockLimits = configuration.lockLimits
        settings.priorityAging = configuration.priorityAging
        settings.maxMapItems = configuration.specLimits.maxChildrenPerGroup
        settings.maxProcedures = configuration.specLimits.maxTotalChildren
        settings.randomSeed = UInt64.random(in: 1...UInt64.max)
        var scheduler = Scheduler(configuration: settings)
        scheduler.observes = observes
        return scheduler
    }

    /// Binds, serves until a stop command, then tells peers and closes. Runs on the loop thread.
    func run() throws {
        defer { logs?.close() }
        let context = try Context(ioThreads: 1, defaultLinger: configuration.linger)
        defer { context.terminate() }
        // The ZAP handler must be bound in the context before the router binds.
        if let curve = configuration.curve {
            let security = try LoopSecurity(settings: curve, context: context)
            self.security = security
            logger.info(
                "CURVE on",
                metadata: [
                    "keys.count": "\(security.keys.count)", "keys.directory": "\(curve.authorizedKeysDirectory)",
                ])
        }
        guard let handler = security?.handler else { return try serve(context) }
        // CURVE's handshakes are decided on the handler's thread while the loop serves.
        let logger = self.logger
        let decide: @Sendable () -> Void = {
            do {
                try handler.runOnCurrentThread()
            } catch {
                // Every CURVE handshake is refused from here on (the handler fails closed).
                logger.critical(
                    "the ZAP handler stopped; CURVE handshakes are refused", metadata: ["error": "\(error)"])
            }
        }
        try withServiceThread(named: "cohort-zap", run: decide, finish: handler.stop) {
            try serve(context)
        }
    }

    /// Binds the router and serves until a stop command (the rest of ``run()``).
    private func serve(_ context: Context) throws {
        let router = try context.socket(.router)
        defer { router.close() }
        try router.set(.routerMandatory, to: true)
        try router.set(.sendHighWaterMark, to: 100_000)
        try router.set(.receiveHighWaterMark, to: 100_000)
        try router.set(.maxMessageSize, to: Int64(configuration.effectiveMaxMessageSize))
        try security?.secure(router)
        // A standby loads the journal once it holds the lease (startLeadership); a coordinator
        // that does not stand by takes the lease and loads it right after binding, before it
        // reads a message (takeLeaseAlone).
        if leadership == nil { try restoreFromJournal() }
        try router.bind(configuration.endpoint)
        let endpoint = try router.lastEndpoint
        boundEndpoint = endpoint
        warnIfExposed(endpoint)
        try takeLeaseAlone(boundEndpoint: endpoint)
        // Stopped (SIGTERM) while it waited for the lease: it never served.
        if stopping { return }
        try startLeadership(boundEndpoint: endpoint)
        announce(endpoint)

        let poller = Poller()
        let network = try poller.register(router)
        let commands = poller.register(mailbox.waker)
        while !stopping {
            if try !poll(poller) { break }
            now = clock.now()
            try checkLeadership()
            // Deposed: not one more message read or answered as the leader.
            if deposed != nil { break }
            if poller.isReadable(network) {
                var reads = 0
                if security == nil {
                    while reads < readsPerTurn, let frames = try router.receiveFrames(wait: .never) {
                        reads += 1
                        handle(frames)
                    }
                } else {
                    while reads < readsPerTurn, let message = try router.receiveWithUserID(wait: .never) {
                        reads += 1
                        handle(message.frames, userID: message.userID)
                    }
                }
            }
            if poller.isReadable(commands) {
                for command in mailbox.drain() {
                    switch command {
                    case .stop(let reason): beginStop(reason: reason)
                    case .parsed(let parsed): acceptParsed(parsed)
                    case .reloadKeys: reloadAuthorizedKeys()
                    case .journalCommitted: break  // the turn's end sends what it made sendable
                    case .historyRead(let read): answerHistory(read)
                    case .rerunRead(let read): answerRerun(read)
                    case .logsStored(let routing, let stored): acknowledgeLogs(stored, to: routing)
                    case .logsRead(let answer): answerLogs(answer)
                    }
                }
            }
            if !stopping, !isStandby { housekeeping() }
            answerSettledCancels()
            if let metrics { recordMetrics(metrics) }
            // Nothing goes out as the leader once the lease may be another's.
            guard stillLeading() else { break }
            flush(router)
        }
        if let deposed { throw deposed }
        if let journalWriter { finishJournal(router, journal: journalWriter) }
        releaseLeadership()
        if let metrics {
            // The last turns' counts (and what the stop sent), not left pending.
            scheduler.drainObservations { metrics.record($0) }
            metrics.finish()
        }
        if let failure = journalWriter?.failure { throw failure }
        logger.info(
            "coordinator stopped",
            metadata: [
                "messages.received": "\(stats.messagesReceived.load(ordering: .relaxed))",
                "frames.bad": "\(stats.badFrames.load(ordering: .relaxed))",
                "frames.wrongVersion": "\(stats.wrongVersion.load(ordering: .relaxed))",
            ])
    }

    /// Waits for the next event; false once the context was shut down.
    private func poll(_ poller: Poller) throws(ZeroMQError) -> Bool {
        do {
            try poller.poll(timeout: pollTimeout())
            return true
        } catch {
            if error.isTerminated { return false }
            throw error
        }
    }

    /// Until the next timer, heartbeat or liveness check, at most one heartbeat interval.
    private func pollTimeout() -> Duration {
        let interval = configuration.heartbeatInterval
        if !outbox.isEmpty { return .zero }
        let lease = leadershipWait() ?? interval
        let deadlines = [scheduler.nextDeadline, peers.nextHeartbeat(interval: interval)].compactMap { $0 }
        guard let next = deadlines.min() else { return min(interval, lease) }
        let wait = next - clock.now()
        return wait <= .zero ? .zero : min(wait, interval, lease)
    }

    /// Timers, liveness and heartbeats, once per turn.
    private func housekeeping() {
        if let deadline = scheduler.nextDeadline, deadline <= now {
            apply(scheduler.tick(now: now))
        }
        for routing in peers.workersToHeartbeat(now: now, interval: configuration.heartbeatInterval)
        where !outbox.hasItems(for: routing) {
            outbox.send(.heartbeat(acknowledged: 0), to: routing)
        }
        pruneJournalIfDue()
        let watches = self.watches
        for routing in idleClients.expired(peers.sessions, watching: { watches.clients }, now: now) {
            peers.close(routing)
        }
    }

    /// The turn's observations, and the gauges when they are due.
    private func recordMetrics(_ metrics: CoordinatorMetrics) {
        scheduler.drainObservations { metrics.record($0) }
        metrics.refreshIfDue(&scheduler, logs: logs?.store, now: now)
    }

    private func announce(_ endpoint: String) {
        let role = isStandby ? "standby" : "leader"
        metrics?.role(serving: !isStandby, epoch: epoch)
        if leadership == nil {
            logger.info("coordinator listening", metadata: ["endpoint": "\(endpoint)", "epoch": "\(epoch)"])
        } else {
            logger.info(
                "coordinator listening",
                metadata: ["endpoint": "\(endpoint)", "role": "\(role)", "epoch": "\(isStandby ? 0 : epoch)"])
        }
        onBound(endpoint)
    }

    /// Tells every worker and client the coordinator is stopping; the loop ends after this turn.
    /// With a journal (that has not failed) the notice says it is `restarting`: what it
    /// accepted is on disk, so clients wait for it and reconnect (docs/operations.md).
    private func beginStop(reason: String) {
        guard !stopping else { return }
        stopping = true
        let restarting = journalWriter.map { $0.failure == nil } ?? false
        logger.info("coordinator stopping", metadata: ["reason": "\(reason)", "restarting": "\(restarting)"])
        for (routing, session) in peers.sessions {
            switch session.role {
            case .worker:
                outbox.send(.shutdown(ShutdownNotice(reason: reason, restarting: restarting)), to: routing)
            case .client:
                let notice = ProtocolError(code: .shuttingDown, message: reason, restarting: restarting)
                outbox.send(CoordinatorReply(requestID: 0, .error(notice)), to: routing)
            }
        }
    }

    /// The one place the watch table changes: the scheduler reports a group's child changes
    /// (``SchedulerAction/childChanged(group:_:)``) exactly while someone watches it.
    func changeWatches(_ body: (inout WatchTable) -> [WatchTable.Change]) {
        for change in body(&watches) { scheduler.setWatched(change.group, change.watched) }
    }
}
