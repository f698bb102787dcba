import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import ZeroMQ

/// A Cohort worker: connects to the coordinator, runs the attempts it dispatches on a local
/// `ProcedureQueue` with ``WorkerConfiguration/slots`` slots, and reports their results.
///
/// ```swift
/// var registry = ProcedureRegistry()            // shell, sleep, echo, fail
/// registry.register("wordcount") { (input: Text, ctx: ProcedureContext) async throws -> Counts in … }
/// var configuration = WorkerConfiguration(coordinator: "tcp://10.0.0.5:7400")
/// configuration.labels = ["linux"]
/// let worker = Worker(configuration: configuration, registry: registry)
/// try await ServiceGroup(cohortServices: [worker], logger: logger).run()   // SIGTERM drains, a second stops
/// ```
///
/// A swift-service-lifecycle `Service`: ``run()`` returns when the worker has stopped.
/// A graceful shutdown (a `ServiceGroup`'s shutdown signal) drains it, as ``drain()`` does:
/// no new work, running attempts finish (for at most ``WorkerConfiguration/drainTimeout``,
/// then they are cancelled and handed back), then ``run()`` returns. Cancelling the task that
/// runs it stops it at once (no new work, running attempts cancelled and waited for, a
/// `disconnect` to the coordinator that hands them back, sockets closed with a short linger).
///
/// The ZeroMQ connection belongs to a thread of the worker's own; ``run()`` only waits for
/// it and never blocks a Swift concurrency thread. When the coordinator welcomes the
/// worker, it calls `onReady` (the library prints nothing; `cohort worker` prints
/// `cohort worker <name> ready (session <id>)` from it). A coordinator
/// that goes silent for its liveness is treated as lost: no new work starts, running
/// attempts go on, and the worker reconnects with a new session after 1 s, 2 s, … up to
/// 32 s, reporting what it still runs.
///
/// Thread-safety: `Sendable`; call ``run()`` once.
public final class Worker: StoppableService, Sendable {
    /// The Cohort release this worker reports in its HELLO.
    public static let softwareVersion = "0.1.0"

    /// The worker's settings.
    public let configuration: WorkerConfiguration
    /// The kinds the worker runs.
    public let registry: ProcedureRegistry
    private let logger: Logger
    private let onReady: @Sendable (WorkerSessionStarted) -> Void
    private let metricsFactory: (any MetricsFactory)?
    /// The running loop's mailbox, and whether ``drain()`` was called before it existed.
    fileprivate let control = Mutex<(mailbox: Mailbox<LoopInput>?, drainRequested: Bool)>((nil, false))

    /// A worker with `configuration`, running the kinds of `registry`.
    ///
    /// `onReady` is called on the worker's loop thread each time the coordinator welcomes a
    /// session (once per connection, again after a reconnect); it must return quickly. The
    /// library prints nothing: the `cohort worker` command prints
    /// `cohort worker NAME ready (session ID)` from it.
    ///
    /// With `metrics`, the worker records its metrics (`cohort_worker_attempts_running`,
    /// `cohort_worker_processes_started_total`…, docs/operations.md, "Metrics") through
    /// swift-metrics into that factory; without (the default), none.
    public init(
        configuration: WorkerConfiguration, registry: ProcedureRegistry = ProcedureRegistry(),
        logger: Logger = Logger(label: "cohort.worker"), metrics: (any MetricsFactory)? = nil,
        onReady: @escaping @Sendable (WorkerSessionStarted) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        self.metricsFactory = metrics
        self.onReady = onReady
    }

    /// Runs the worker until it has drained (a graceful shutdown or ``drain()``), the calling
    /// task is cancelled, or the coordinator refuses it.
    ///
    /// - Throws: ``WorkerRunError``: ``WorkerRunError/Code/invalidConfiguration`` for a bad
    ///   setting, ``WorkerRunError/Code/refused`` if the coordinator refused this worker for
    ///   good (another protocol version), ``WorkerRunError/Code/transport`` if ZeroMQ failed.
    ///   Cancellation is not an error: `run()` returns normally once stopped.
    public func run() async throws {
        do {
            try configuration.validate()
        } catch {
            throw WorkerRunError(.invalidConfiguration, "invalid worker setting \(error)")
        }
        let mailbox: Mailbox<LoopInput>
        do {
            mailbox = try Mailbox()
        } catch {
            throw WorkerRunError(.transport, "cannot make the worker's wake-up descriptor: \(error)")
        }
        let drainRequested = control.withLock { control in
            control.mailbox = mailbox
            return control.drainRequested
        }
        defer { control.withLock { $0.mailbox = nil } }
        if drainRequested { mailbox.post(.drain) }
        try await withGracefulShutdownHandler {
            try await runLoop(mailbox)
        } onGracefulShutdown: {
            self.drain()
        }
    }

    /// Runs the loop on a thread of its own until it ends; cancellation stops it.
    private func runLoop(_ mailbox: Mailbox<LoopInput>) async throws {
        let (configuration, registry, logger, onReady) = (self.configuration, self.registry, self.logger, self.onReady)
        let metrics = metricsFactory.map { WorkerMetrics(factory: $0) }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let thread = Thread {
                    do {
                        let loop = try WorkerLoop(
                            configuration: configuration, registry: registry, logger: logger, mailbox: mailbox,
                            metrics: metrics, onReady: onReady)
                        try loop.run()
                        continuation.resume()
                    } catch let error as WorkerRunError {
                        continuation.resume(throwing: error)
                    } catch {
                        continuation.resume(throwing: WorkerRunError(.transport, "cannot start the worker: \(error)"))
                    }
                }
                thread.name = "cohort-worker"
                thread.start()
            }
        } onCancel: {
            mailbox.post(.stop)
        }
    }

    /// Drains the worker: it tells the coordinator it takes no new work, lets what it runs
    /// (and what it was already sent) finish, and ``run()`` returns once nothing is left. What
    /// still runs after ``WorkerConfiguration/drainTimeout`` is cancelled and handed back to
    /// the coordinator, which runs it again elsewhere without using up a retry. Cancelling
    /// ``run()``'s task meanwhile stops at once. Safe from any thread, at any time.
    public func drain() {
        let mailbox = control.withLock { control in
            control.drainRequested = true
            return control.mailbox
        }
        mailbox?.post(.drain)
    }
}

extension Worker {
    /// Stops the worker at once, as cancelling ``run()``'s task does: no new work, running
    /// attempts cancelled and handed back to the coordinator, then ``run()`` returns. What a
    /// second SIGTERM does in ``ServiceGroup/init(cohortServices:logger:)``. Safe from any
    /// thread, at any time; before ``run()`` it does nothing.
    public func stop() {
        control.withLock { $0.mailbox }?.post(.stop)
    }
}

/// A session the coordinator welcomed (see ``Worker/init(configuration:registry:logger:onReady:)``).
public struct WorkerSessionStarted: Hashable, Sendable, CustomStringConvertible {
    /// The worker's name (``WorkerConfiguration/name``).
    public var name: String
    /// The session's id, new for every connection.
    public var sessionID: String
    /// Attempts from an earlier session reported in this one's READY: still held, or whose
    /// results go out again (not confirmed by the coordinator they were sent to).
    public var running: Int

    public init(name: String, sessionID: String, running: Int) {
        self.name = name
        self.sessionID = sessionID
        self.running = running
    }

    /// `cohort worker NAME ready (session ID)`: the line the CLI prints and scripts wait for.
    public var description: String { "cohort worker \(name) ready (session \(sessionID))" }
}
