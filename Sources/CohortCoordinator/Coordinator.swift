import CohortCore
import CohortJournal
import CohortWire
import Foundation
import Logging
import Metrics
import Synchronization
import ZeroMQ

/// The coordinator service: one ROUTER endpoint that clients and workers connect to, and the
/// loop that drives CohortCore's state machines (scheduler, lock table, membership).
///
/// ```swift
/// let coordinator = Coordinator(configuration: CoordinatorConfiguration(endpoint: "tcp://127.0.0.1:*"),
///                               logger: Logger(label: "cohort.coordinator"))
/// let service = Task { try await coordinator.run() }
/// let endpoint = try await coordinator.boundEndpoint()   // tcp://127.0.0.1:41234
/// …
/// service.cancel()                                        // graceful stop
/// try await service.value
/// ```
///
/// The ZeroMQ loop runs on its own thread (never on a Swift concurrency pool thread);
/// `run()` awaits that thread. Stopping is cancelling the task that runs `run()`: the
/// coordinator tells workers and clients it is shutting down and closes its socket with a
/// short linger (``CoordinatorConfiguration/linger``).
///
/// Thread-safety: `Sendable`; every method may be called from any thread or task. `run()`
/// may be called once.
public final class Coordinator: Sendable {
    /// The settings the coordinator runs with.
    public let configuration: CoordinatorConfiguration
    let logger: Logger
    let lifecycle = Mutex(Lifecycle())
    let stats = CoordinatorStatistics()
    /// Where the coordinator records its metrics; nil records none.
    let metricsFactory: (any MetricsFactory)?

    /// Creates a coordinator; nothing happens until ``run()``.
    ///
    /// With `metrics`, the coordinator records its metrics (docs/operations.md, "Metrics":
    /// `cohort_children_finished_total`, latency histograms, gauges of groups, children,
    /// locks, workers…) through swift-metrics into that factory, e.g. `MetricsSystem.factory`
    /// after bootstrapping, or a `PrometheusMetricsFactory`. Without (the default) it records
    /// none and gathers nothing for them.
    public init(
        configuration: CoordinatorConfiguration = CoordinatorConfiguration(), logger: Logger,
        metrics: (any MetricsFactory)? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        self.metricsFactory = metrics
    }

    /// Binds the endpoint and serves clients and workers until the calling task is cancelled.
    ///
    /// Once bound it logs `coordinator listening` with the resolved endpoint, which
    /// ``boundEndpoint()`` returns; the library prints nothing (the `cohort coordinator`
    /// command prints `cohort coordinator listening on ENDPOINT`).
    ///
    /// - Throws: ``CoordinatorConfigurationError`` for invalid settings, `ZeroMQError` when the
    ///   endpoint cannot be bound (e.g. the port is in use), ``CoordinatorError`` when `run()`
    ///   is called a second time, `JournalError` (with ``CoordinatorConfiguration/stateDirectory``)
    ///   when another coordinator holds the state directory, the journal is damaged or of
    ///   another schema version, or a write to it fails while serving. Returns normally after a
    ///   cancellation-initiated stop.
    public func run() async throws {
        try configuration.validate()
        let mailbox: Mailbox<LoopCommand> = try Mailbox()
        let started = lifecycle.withLock { state -> Bool in
            guard !state.started else { return false }
            state.started = true
            state.mailbox = mailbox
            return true
        }
        guard started else { throw CoordinatorError(message: "run() was already called on this coordinator") }
        defer { finishLifecycle() }

        let (configuration, logger, stats, metricsFactory) = (configuration, logger, stats, metricsFactory)
        let onBound: @Sendable (String) -> Void = { [self] endpoint in self.didBind(endpoint) }
        let stopRequested: @Sendable () -> Bool = { [self] in lifecycle.withLock { $0.stopRequested } }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let thread = Thread {
                    // The loop and its socket live and die on this thread.
                    let result = Result {
                        var configuration = configuration
                        let metrics = metricsFactory.map { CoordinatorMetrics(factory: $0) }
                        // A journal several coordinators may share (PostgreSQL's): whoever
                        // serves holds its lease, standby or not, so that no two write.
                        if let open = configuration.journalStore?.openForLeadership {
                            return try Coordinator.serveElected(
                                configuration, settings: configuration.leadership ?? LeadershipSettings(),
                                standsBy: configuration.leadership?.standsBy ?? false, open: open, logger: logger,
                                mailbox: mailbox, stats: stats, metrics: metrics, stopRequested: stopRequested,
                                onBound: onBound)
                        }
                        let journal = try Coordinator.openJournal(&configuration, metrics: metrics) {
                            mailbox.post(.journalCommitted)
                        }
                        defer { journal?.close() }
                        let loop = CoordinatorLoop(
                            configuration: configuration, logger: logger, mailbox: mailbox, stats: stats,
                            journal: journal, metrics: metrics, onBound: onBound)
                        guard let committer = journal?.committer else { return try loop.run() }
                        // The journal's commits run beside the loop and end with it.
                        try withServiceThread(named: "cohort-journal", run: committer.run, finish: committer.finish) {
                            try loop.run()
                        }
                    }
                    continuation.resume(with: result)
                }
                thread.name = "cohort-coordinator"
                thread.start()
            }
        } onCancel: {
            lifecycle.withLock { $0.stopRequested = true }
            mailbox.post(.stop(reason: "coordinator stopping"))
        }
    }

    /// A coordinator on a journal with a lease. With `standsBy` (`--standby`), in leader
    /// election: a standby until it holds the journal's lease, then the leader until it stops
    /// or loses the lease (or its journal fails), then a standby again, on the same endpoint
    /// (a wildcard port stays the one first bound), each time with a fresh loop and a fresh
    /// connection to the store (CoordinatorLoop+Leadership.swift). Without, it takes the lease
    /// at start or refuses to serve beside its holder (`locked`), and ends `deposed` if it
    /// loses it.
    private static func serveElected(
        _ configuration: CoordinatorConfiguration, settings: LeadershipSettings, standsBy: Bool,
        open: @Sendable () throws(JournalError) -> any LeaseJournalStore, logger: Logger,
        mailbox: Mailbox<LoopCommand>, stats: CoordinatorStatistics, metrics: CoordinatorMetrics?,
        stopRequested: @escaping @Sendable () -> Bool, onBound: @escaping @Sendable (String) -> Void
    ) throws {
        var configuration = configuration
        var opened = false
        while true {
            let result = Result { () throws(JournalError) in try open() }
            if case .failure(let error) = result, error.code == .unreachable, opened {
                // The database went away after this coordinator had used it (a database
                // failover): wait for it rather than exit; peers try the other coordinators.
                logger.warning("cannot reach the journal's database; trying again", metadata: ["error": "\(error)"])
                metrics?.role(serving: false, epoch: 0)
                for _ in 0..<10 where !stopRequested() { Thread.sleep(forTimeInterval: 0.1) }
                if stopRequested() { return }
                continue
            }
            let store = try result.get()
            opened = true
            let writer = JournalWriter(
                journal: store, directory: nil,
                metrics: metrics.map {
                    JournalCommitter.Metrics(commit: $0.journalCommit, batchSize: $0.journalBatchSize)
                },
                onCommit: { mailbox.post(.journalCommitted) })
            defer { writer.close() }
            let loop = CoordinatorLoop(
                configuration: configuration, logger: logger, mailbox: mailbox, stats: stats, journal: writer,
                metrics: metrics,
                leadership: Leadership(
                    store: store, settings: settings, standsBy: standsBy, stopRequested: stopRequested),
                onBound: onBound)
            do {
                try withServiceThread(
                    named: "cohort-journal", run: writer.committer.run, finish: writer.committer.finish
                ) {
                    try loop.run()
                }
                return
            } catch let error as JournalError where standsBy {
                // Deposed, the database gone while leading (its lease then lapses too), or a
                // write or load the database refused: stand by again, as a restart would
                // (another coordinator may lead meanwhile).
                metrics?.role(serving: false, epoch: 0)
                if stopRequested() { return }
                if let bound = loop.boundEndpoint { configuration.endpoint = bound }
                logger.notice("serving as a standby again", metadata: ["reason": "\(error.description)"])
            }
        }
    }

    /// Opens the configured journal store, or locks the state directory and opens its SQLite
    /// journal; the journal's epoch becomes the
    /// coordinator's, and every fencing token is above `epoch << 32` (docs/scheduling.md).
    static func openJournal(
        _ configuration: inout CoordinatorConfiguration, metrics: CoordinatorMetrics? = nil,
        onCommit: @escaping @Sendable () -> Void
    ) throws(JournalError) -> JournalWriter? {
        let journal: any JournalStore
        var directory: StateDirectory?
        if let store = configuration.journalStore {
            journal = try store.open()
        } else {
            guard let path = configuration.stateDirectory else { return nil }
            let locked = try StateDirectory(path: path)
            directory = locked
            journal = try Journal(directory: locked, synchronous: configuration.journalSynchronous)
        }
        configuration.epoch = journal.epoch
        configuration.tokenFloor = max(configuration.tokenFloor, journal.epoch << 32)
        return JournalWriter(
            journal: journal, directory: directory,
            metrics: metrics.map { JournalCommitter.Metrics(commit: $0.journalCommit, batchSize: $0.journalBatchSize) },
            onCommit: onCommit)
    }

    /// The endpoint the coordinator listens on, with a wildcard port resolved
    /// (`tcp://127.0.0.1:41234`); waits until ``run()`` has bound it.
    ///
    /// - Throws: ``CoordinatorError`` if `run()` stopped (or failed) before binding;
    ///   `CancellationError` if the calling task is cancelled while waiting.
    public func boundEndpoint() async throws -> String {
        let waiter = EndpointWaiter()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
                let immediate: Result<String, any Error>? = lifecycle.withLock { state in
                    if let endpoint = state.endpoint { return .success(endpoint) }
                    if state.finished {
                        return .failure(CoordinatorError(message: "the coordinator stopped before binding"))
                    }
                    // A cancel that came before this registration found nothing to resume.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.endpointWaiters[waiter.id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let continuation = lifecycle.withLock { $0.endpointWaiters.removeValue(forKey: waiter.id) }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Re-reads the authorised-keys directory (the CLI calls it on SIGHUP): added keys are
    /// admitted, and a removed key's connections are refused from their next message on. Logs
    /// `authorised keys reloaded` when done. Does nothing before ``run()`` or without CURVE.
    ///
    /// Thread-safety: any thread.
    public func reloadAuthorizedKeys() {
        let mailbox = lifecycle.withLock { $0.mailbox }
        mailbox?.post(.reloadKeys)
    }

    /// Counters of what the coordinator has seen (bad frames, messages, dispatches…), for
    /// logs, tests and benchmarks. Thread-safety: any thread.
    public var counters: CoordinatorCounters { stats.snapshot() }

    private func didBind(_ endpoint: String) {
        let waiters = lifecycle.withLock { state in
            state.endpoint = endpoint
            defer { state.endpointWaiters = [:] }
            return Array(state.endpointWaiters.values)
        }
        for waiter in waiters { waiter.resume(returning: endpoint) }
    }

    private func finishLifecycle() {
        let waiters = lifecycle.withLock { state in
            state.finished = true
            defer { state.endpointWaiters = [:] }
            return Array(state.endpointWaiters.values)
        }
        for waiter in waiters {
            waiter.resume(throwing: CoordinatorError(message: "the coordinator stopped before binding"))
        }
    }

    struct Lifecycle {
        var started = false
        var finished = false
        var endpoint: String?
        /// The task running `run()` was cancelled (a loop that ends deposed does not start over).
        var stopRequested = false
        var mailbox: Mailbox<LoopCommand>?
        var endpointWaiters: [UInt64: CheckedContinuation<String, any Error>] = [:]
    }
}

/// Gives each `boundEndpoint()` call an id, so that its cancellation removes only its own waiter.
private struct EndpointWaiter {
    private static let next = Atomic<UInt64>(0)
    let id = EndpointWaiter.next.add(1, ordering: .relaxed).newValue
}

/// A coordinator could not do what was asked.
public struct CoordinatorError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// Commands other threads post to the coordinator's loop.
enum LoopCommand: Sendable {
    /// Stop serving: tell peers, close the socket, return from the loop.
    case stop(reason: String)
    /// A large submission was parsed off the loop thread: accept it (or refuse it).
    case parsed(ParsedSubmission)
    /// Re-read the authorised keys (SIGHUP).
    case reloadKeys
    /// The journal committed a turn: its held messages may go out (wakes the loop).
    case journalCommitted
    /// The journal's part of a `cohort status` list was read beside the loop: answer it.
    case historyRead(HistoryRead)
    /// The journal's record of a group to re-run was read beside the loop: submit it again.
    case rerunRead(RerunRead)
    /// A worker's log lines were stored: acknowledge them to it.
    case logsStored(routing: RoutingID, [LogStored])
    /// A child's log lines were read beside the loop: answer the client.
    case logsRead(LogsAnswer)
}
