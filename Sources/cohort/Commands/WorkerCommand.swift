import ArgumentParser
import CohortMetrics
import CohortSpec
import CohortWorker
import Foundation
import Logging
import Metrics
import Synchronization

/// `cohort worker`: run a worker that takes children from a coordinator.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Run a worker: execute children the coordinator sends, with the built-in kinds.",
        discussion: """
            The worker connects to the coordinator, offers its slots and labels, and runs \
            children with the built-in kinds shell, sleep, echo and fail. It prints \
            `cohort worker NAME ready (session ID)` once the coordinator has welcomed it, and \
            reconnects on its own if the coordinator goes away (backoff 1 s doubling to 32 s, \
            reporting what it still runs). --coordinator (or COHORT_COORDINATOR, the config's \
            coordinator) may list a coordinator and its standbys, comma-separated \
            (tcp://a:7400,tcp://b:7400): the worker follows the leader a standby names and \
            tries the next endpoint after a lost connection (docs/operations.md, "High \
            availability").

            SIGTERM or SIGINT drains it: it tells the coordinator to send no more work, lets \
            running children finish, then exits 0. Children still running after \
            --drain-timeout are cancelled and handed back to the coordinator, which runs them \
            again elsewhere without using up a retry. A second signal stops at once (running \
            children cancelled and handed back); a third exits immediately.

            With --key and --server-key (or keyFile and serverKey in the config file) the \
            worker talks CURVE; its key needs the worker role in the coordinator's authorised \
            keys (docs/security.md). A refused key stops it with exit status 77.

            Prometheus metrics are served on http://127.0.0.1:9471/metrics by default, and \
            `cohort worker metrics on URL` is printed once bound; when nothing was configured \
            and 9471 is taken (another worker on the host), a free port is used instead. \
            --metrics HOST:PORT chooses (port 0: a free one; a busy port is an error), \
            --metrics off turns them off (docs/operations.md, "Metrics").

            Settings: built-in defaults < --config FILE (see config/worker.yaml, every key \
            documented) < environment (COHORT_COORDINATOR, COHORT_WORKER_<KEY>) < flags.

            Examples:
              cohort worker                     # tcp://127.0.0.1:7400, a slot per core
              cohort worker --coordinator tcp://10.0.0.5:7400 --slots 4 --labels linux,gpu
              cohort worker --config config/worker.yaml --name builder-1
              cohort worker --coordinator tcp://10.0.0.5:7400 \\
                  --key keys/builder-1.key --server-key keys/coordinator.pub   # CURVE
              cohort worker --drain-timeout 10m # SIGTERM waits up to 10 minutes
              cohort worker --metrics 0.0.0.0:9471   # metrics for a Prometheus elsewhere
              cohort worker --metrics off
            """
    )

    @Option(
        name: .long, help: ArgumentHelp("The coordinator's endpoint (env COHORT_COORDINATOR).", valueName: "endpoint"))
    var coordinator: String?

    @Option(name: .long, help: ArgumentHelp("How many children run at once (default: one per core).", valueName: "n"))
    var slots: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Labels offered for placement, comma-separated (a child's `requires` must be among them).",
            valueName: "labels"))
    var labels: [String] = []

    @Option(name: .long, help: ArgumentHelp("The worker's name (default: <hostname>-<pid>).", valueName: "name"))
    var name: String?

    @Option(
        name: .customLong("kill-grace"),
        help: ArgumentHelp(
            "Time between SIGTERM and SIGKILL for a cancelled shell child, e.g. 5s.", valueName: "duration"))
    var killGrace: String?

    @Option(
        name: .customLong("drain-timeout"),
        help: ArgumentHelp(
            "After SIGTERM, how long running children may finish before they are handed back, e.g. 60s.",
            valueName: "duration"))
    var drainTimeout: String?

    @Option(name: .long, help: ArgumentHelp("A settings file, e.g. config/worker.yaml.", valueName: "file"))
    var config: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where to serve Prometheus metrics: HOST:PORT (port 0: a free one) or off (default 127.0.0.1:9471).",
            valueName: "address"))
    var metrics: String?

    @OptionGroup var keys: KeyOptions

    @OptionGroup var log: LogOptions

    func validate() throws {
        let configuration = try makeConfiguration()
        _ = try MetricsEndpoint(setting: configuration.metrics, default: .workerDefault, role: "worker")
    }

    /// Defaults < --config < environment < flags, validated.
    func makeConfiguration() throws -> WorkerConfiguration {
        try SettingsLoader.resolve(
            load: { () throws(ConfigError) in
                try WorkerSettings.load(file: config, keyFlags: (keys.key, keys.serverKey))
            },
            flags: { configuration in
                if let coordinator { configuration.coordinator = coordinator }
                if let slots { configuration.slots = slots }
                if !labels.isEmpty { configuration.labels = labels.flatMap(SettingsSource.commaList) }
                if let name { configuration.name = name }
                if let metrics { configuration.metrics = metrics }
                if let killGrace { configuration.killGrace = try Self.duration(killGrace, flag: "--kill-grace") }
                if let drainTimeout {
                    configuration.drainTimeout = try Self.duration(drainTimeout, flag: "--drain-timeout")
                }
            },
            validate: { configuration throws(WorkerConfigurationError) in try configuration.validate() })
    }

    private static func duration(_ text: String, flag: String) throws -> Duration {
        do {
            return try Duration(specString: text)
        } catch {
            throw ValidationError("\(flag): \(error)")
        }
    }

    func run() async throws {
        let logger = log.bootstrap("cohort.worker", default: .info)
        let configuration = try makeConfiguration()
        let metrics = try MetricsEndpoint(setting: configuration.metrics, default: .workerDefault, role: "worker")
        // The worker exists before its metrics' factory does (SIGTERM must drain it from the
        // start), so the factory goes to it through a box the metrics set once bound.
        let drain = WorkerBox()
        do {
            try await ServiceRunner.run(name: "worker", logger: logger, drain: { drain.drain() }) {
                try await metrics.serve(logger: logger) { factory in
                    let worker = Worker(
                        configuration: configuration, registry: ProcedureRegistry(), logger: logger, metrics: factory
                    ) { ready in
                        Console.out(ready.description)
                    }
                    drain.set(worker)
                    try await worker.run()
                }
            }
        } catch let error as MetricsServerError {
            Console.error("the worker cannot start: \(error)")
            throw ExitCode(ExitStatus.unavailable)
        } catch {
            Console.error("the worker stopped: \(error)")
            let permission = (error as? WorkerRunError)?.code == .permissionDenied
            throw ExitCode(permission ? ExitStatus.permission : ExitStatus.unavailable)
        }
    }
}

/// The worker a SIGTERM drains, set once it exists; a drain asked for before is passed on
/// when it is set.
private final class WorkerBox: Sendable {
    private let state = Mutex<(worker: Worker?, drainRequested: Bool)>((nil, false))

    func set(_ worker: Worker) {
        let drain = state.withLock { state in
            state.worker = worker
            return state.drainRequested
        }
        if drain { worker.drain() }
    }

    func drain() {
        let worker = state.withLock { state in
            state.drainRequested = true
            return state.worker
        }
        worker?.drain()
    }
}
