import ArgumentParser
import CohortCoordinator
import CohortDashboard
import CohortJournal
import CohortJournalPostgres
import CohortMetrics
import Foundation
import Logging
import Metrics
import ZeroMQ

/// `cohort coordinator`: run the coordinator until SIGINT or SIGTERM.
struct CoordinatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coordinator",
        abstract: "Run the coordinator: accept groups from clients and split them across workers.",
        discussion: """
            The coordinator binds one endpoint for clients and workers and prints \
            `cohort coordinator listening on ENDPOINT` once bound (with a wildcard port \
            resolved, so scripts can read it). SIGINT or SIGTERM stops it gracefully.

            With --key and --authorized-keys (or secretKeyFile and authorizedKeysDir in the \
            config file) every connection uses CURVE: encrypted, and only the keys of the \
            directory get in, each with its role (worker, client, admin). SIGHUP re-reads the \
            directory without a restart. Without CURVE, a coordinator that listens on anything \
            but loopback warns at start. See docs/security.md and `cohort keygen --help`.

            Every accepted group is journaled in STATE-DIR/journal.sqlite before the client \
            gets its id; a restarted coordinator reloads what had not finished and workers \
            reconnect on their own (docs/operations.md, "The journal"). One coordinator per state directory. \
            Exit 74: the journal is damaged or cannot be written (it is never replaced); \
            75: another coordinator holds the state directory; 73: the directory cannot be \
            created; 65: the journal is of another schema version.

            --journal postgres://USER@HOST:PORT/DATABASE (config key journal, \
            COHORT_COORDINATOR_JOURNAL) keeps the journal in PostgreSQL instead: the same \
            tables, created or migrated at start, one transaction per loop turn. The password \
            comes from the URL or PGPASSWORD. Without --standby the coordinator serves the \
            database alone: it takes the journal's lease at start and renews it, so its writes \
            are fenced. A lease another holds it watches: renewed meanwhile, it refuses; not \
            renewed (its holder, such as this one's killed previous run, is gone), it waits it \
            out (until the holder's lease expires) and takes it. Exit 64: the \
            URL is not one Cohort can use; 69: PostgreSQL cannot be reached (the host, port and \
            error are named); 77: it refused the credentials; 75: another coordinator holds the \
            lease (it is named; start this one with --standby to stand by beside it), or took it \
            while this one served.

            --standby (config key standby: true) makes several coordinators on the same \
            PostgreSQL journal elect one leader through its lease row: each binds its endpoint; \
            the one holding the lease loads the journal and serves, the others answer every \
            client and worker NOT_LEADER naming the leader's --advertise endpoint (default the \
            bound one) and try for the lease every lease/3 or 0.5 s, whichever is shorter. --lease (default 5s) is how long a \
            lease lasts unrenewed: the leader renews every lease/3 and stops serving at once \
            when a renewal finds the lease taken, when a write finds its epoch over, or when a \
            lease has passed since its last renewal, then stands by again in the same process (as \
            it does when a journal write fails for any other reason). \
            Give clients and workers every coordinator: --coordinator tcp://a:7400,tcp://b:7400 \
            (docs/operations.md, "High availability").

            Prometheus metrics are served on http://127.0.0.1:9470/metrics by default, and \
            `cohort coordinator metrics on URL` is printed once bound; when nothing was \
            configured and 9470 is taken (another coordinator on the host), a free port is \
            used instead. --metrics HOST:PORT chooses (port 0: a free one; a busy port is an \
            error), --metrics off turns them off. Every metric is listed in \
            docs/operations.md, "Metrics".

            The coordinator serves a web dashboard and a JSON HTTP API (docs/http.md) on \
            --http ADDRESS:PORT (default 127.0.0.1:7401; port 0 picks a free one; off turns it \
            off) and prints `cohort coordinator dashboard on URL` once it listens. Without a \
            token it only reads; --http-tokens FILE (lines `ROLE NAME TOKEN`) gives admin \
            tokens the right to cancel and drain. An address other machines can reach needs \
            tokens. If the default port is taken (another coordinator on this host) the \
            coordinator warns and runs without a dashboard.

            --limit CATEGORY=N (repeatable, or `limits` in the config file) makes a category a \
            counting lock: `exclusive: [CATEGORY]` then means one of at most N holders, each \
            with its own fencing token; it applies whatever a spec's `limits` say \
            (docs/spec.md, "Counting locks").

            Settings: built-in defaults < --config FILE (see config/coordinator.yaml, every \
            key documented) < environment (COHORT_COORDINATOR_<KEY>) < flags.

            Examples:
              cohort coordinator                                # tcp://127.0.0.1:7400
              cohort coordinator --endpoint 'tcp://127.0.0.1:*' # any free port
              cohort coordinator --journal postgres://cohort@db.internal:5432/cohort
              cohort coordinator --journal postgres://cohort@db.internal:5432/cohort \\
                  --standby --lease 5s --endpoint tcp://0.0.0.0:7400 \\
                  --advertise tcp://host-a.internal:7400
              cohort coordinator --config config/coordinator.yaml \\
                  --endpoint tcp://0.0.0.0:7400
              cohort keygen --out /etc/cohort --role coordinator
              cohort coordinator --endpoint tcp://0.0.0.0:7400 \\
                  --key /etc/cohort/coordinator.key \\
                  --authorized-keys /etc/cohort/authorized
              kill -HUP <pid>                                   # re-read the keys
              cohort coordinator --state-dir /var/lib/cohort    # the journal's home
              cohort coordinator --metrics 0.0.0.0:9470         # scraped from other hosts
              cohort coordinator --metrics off                  # no metrics endpoint
              curl -s http://127.0.0.1:9470/metrics | grep cohort_children_finished_total
              cohort coordinator --http 127.0.0.1:0   # dashboard on a free port
              cohort coordinator --http 0.0.0.0:7401 \\
                  --http-tokens /etc/cohort/http-tokens
              cohort coordinator --http off           # no dashboard
              cohort coordinator --limit api-quota=4  # at most 4 holders of api-quota
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The endpoint to bind, e.g. tcp://0.0.0.0:7400; port * picks a free one.", valueName: "endpoint"))
    var endpoint: String?

    @Option(name: .long, help: ArgumentHelp("A settings file, e.g. config/coordinator.yaml.", valueName: "file"))
    var config: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The coordinator's secret key file, from `cohort keygen --role coordinator`; turns CURVE on.",
            valueName: "file"))
    var key: String?

    @Option(
        name: .customLong("authorized-keys"),
        help: ArgumentHelp(
            "The directory of authorised public keys (*.pub, `ROLE KEY NAME`); SIGHUP re-reads it.", valueName: "dir"))
    var authorizedKeys: String?

    @Option(
        name: .customLong("state-dir"),
        help: ArgumentHelp(
            "The journal's directory (default $XDG_STATE_HOME/cohort or ~/.local/state/cohort).", valueName: "dir"))
    var stateDir: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where the dashboard listens (default 127.0.0.1:7401; port 0: any free port), or off.",
            valueName: "address:port"))
    var http: String?

    @Option(
        name: .customLong("http-tokens"),
        help: ArgumentHelp(
            "The dashboard's tokens, a line `ROLE NAME TOKEN` each (roles viewer, client, admin).",
            valueName: "file"))
    var httpTokens: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep the journal in PostgreSQL instead of SQLite under the state directory: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE.",
            valueName: "url"))
    var journal: String?

    @Flag(
        name: .long,
        help:
            "Take part in leader election with the other coordinators on the same --journal postgres://…: serve while holding its lease, else refuse peers naming the leader."
    )
    var standby = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long the lease on a --journal postgres://… lasts unrenewed (default 5s): with --standby, a standby takes over within it; without, the lease this coordinator holds while it serves alone.",
            valueName: "duration"))
    var lease: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --standby: the endpoint peers reach this coordinator at, named to them by standbys (default the bound endpoint).",
            valueName: "endpoint"))
    var advertise: String?

    @Flag(
        name: .customLong("no-journal"),
        help: "Keep nothing on disk: accepted groups are lost if the coordinator stops (benchmarks, throwaway runs).")
    var noJournal = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where to serve Prometheus metrics: HOST:PORT (port 0: a free one) or off (default 127.0.0.1:9470).",
            valueName: "address"))
    var metrics: String?

    @Option(
        name: .customLong("limit"),
        help: ArgumentHelp(
            "A counting lock: at most N holders of CATEGORY at once (repeatable; over the config file's `limits`).",
            valueName: "category=n"))
    var limits: [String] = []

    @OptionGroup var log: LogOptions

    func validate() throws {
        let configuration = try makeConfiguration()
        _ = try MetricsEndpoint(setting: configuration.metrics, default: .coordinatorDefault, role: "coordinator")
        _ = try makeDashboard()
    }

    /// The dashboard's settings: defaults < --config < environment < flags, and its tokens.
    func makeDashboard() throws -> (options: DashboardOptions, tokens: AccessTokens) {
        var options: DashboardOptions
        do {
            options = try CoordinatorSettings.loadDashboard(file: config)
        } catch {
            throw ValidationError(error.description)
        }
        do throws(DashboardSettingsError) {
            if let http {
                options.address = try DashboardAddress.parse(http)
                options.isDefault = false
            }
            if let httpTokens { options.tokensFile = httpTokens }
            return (options, options.address == nil ? AccessTokens() : try options.tokens())
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// Defaults < --config < environment < flags, validated.
    func makeConfiguration() throws -> CoordinatorConfiguration {
        try SettingsLoader.resolve(
            load: { () throws(ConfigError) in
                try CoordinatorSettings.load(file: config, keyFlags: (key, authorizedKeys))
            },
            flags: { configuration in
                if let endpoint { configuration.endpoint = endpoint }
                if let stateDir { configuration.stateDirectory = stateDir }
                if let journal {
                    do throws(JournalError) {
                        configuration.journalStore = try PostgresJournal.opener(url: journal)
                    } catch {
                        throw ValidationError("--journal: \(error.description)")
                    }
                }
                if noJournal {
                    configuration.stateDirectory = nil
                    configuration.journalStore = nil
                }
                if standby {
                    configuration.leadership = configuration.leadership ?? LeadershipSettings()
                    configuration.leadership?.standsBy = true
                }
                if advertise != nil, configuration.leadership?.standsBy != true {
                    throw ValidationError("--advertise applies only with --standby")
                }
                if let lease {
                    // Without --standby, the lease a coordinator serving alone holds.
                    var leadership = configuration.leadership ?? LeadershipSettings(standsBy: false)
                    do {
                        leadership.lease = try Duration(specString: lease)
                    } catch {
                        throw ValidationError("--lease: \(error)")
                    }
                    configuration.leadership = leadership
                }
                if let advertise { configuration.leadership?.advertise = advertise }
                if let metrics { configuration.metrics = metrics }
                for limit in limits {
                    let parts = limit.split(separator: "=", maxSplits: 1).map(String.init)
                    guard parts.count == 2, let count = Int(parts[1]) else {
                        throw ValidationError("--limit expects CATEGORY=N (e.g. api-quota=4), not \"\(limit)\"")
                    }
                    configuration.lockLimits[parts[0]] = count
                }
            },
            validate: { configuration throws(CoordinatorConfigurationError) in
                try configuration.validate()
                do throws(KeyFileError) {
                    _ = try configuration.curve?.checkAuthorizedKeys()
                } catch {
                    throw CoordinatorConfigurationError(setting: "authorizedKeysDir", message: error.description)
                }
            })
    }

    func run() async throws {
        let logger = log.bootstrap("cohort.coordinator", default: .info)
        var configuration = try makeConfiguration()
        let metrics = try MetricsEndpoint(
            setting: configuration.metrics, default: .coordinatorDefault, role: "coordinator")
        let dashboard = try makeDashboard()
        // The dashboard's client speaks to this coordinator like any other; under CURVE with
        // an admin key made now, authorised in memory only (docs/http.md).
        let dashboardKeys = try DashboardHost.authorize(&configuration, enabled: dashboard.options.address != nil)
        do {
            try await ServiceRunner.run(name: "coordinator", logger: logger) { [configuration] in
                try await metrics.serve(logger: logger) { factory in
                    try await Self.serve(
                        configuration, logger: logger, metrics: factory, dashboard: dashboard,
                        dashboardKeys: dashboardKeys)
                }
            }
        } catch let error as MetricsServerError {
            Console.error("the coordinator cannot start: \(error)")
            throw ExitCode(ExitStatus.unavailable)
        } catch let error as DashboardSettingsError {
            Console.error("the coordinator stopped: \(error)")
            throw ExitCode(ExitStatus.unavailable)
        } catch let error as JournalError {
            Console.error("the coordinator cannot use its journal: \(error)")
            throw ExitCode(error.exitCode)
        } catch {
            Console.error("the coordinator stopped: \(error)")
            throw ExitCode(ExitStatus.unavailable)
        }
    }

    /// Runs the coordinator, and its dashboard beside it, until the task is cancelled,
    /// announcing its endpoint.
    private static func serve(
        _ configuration: CoordinatorConfiguration, logger: Logger, metrics: (any MetricsFactory)?,
        dashboard: (options: DashboardOptions, tokens: AccessTokens), dashboardKeys: CurveClientKeys?
    ) async throws {
        let coordinator = Coordinator(configuration: configuration, logger: logger, metrics: metrics)
        let hangups = SignalTrap([SIGHUP], repeatable: true) { _, _ in coordinator.reloadAuthorizedKeys() }
        defer { hangups.cancel() }
        // The library prints nothing: the line scripts wait for, and the plaintext warning,
        // are printed here once the endpoint is bound.
        let announcer = Task {
            guard let endpoint = try? await coordinator.boundEndpoint() else { return }
            Console.out("cohort coordinator listening on \(endpoint)")
            if let warning = configuration.exposureWarning { Console.err("cohort: WARNING: \(warning)") }
        }
        defer { announcer.cancel() }
        guard let address = dashboard.options.address else { return try await coordinator.run() }
        let host = DashboardHost(
            coordinator: coordinator, address: address, isDefault: dashboard.options.isDefault,
            tokens: dashboard.tokens, keys: dashboardKeys, logger: logger)
        try await host.runBeside()
    }
}
