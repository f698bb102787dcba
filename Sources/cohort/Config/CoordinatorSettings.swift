import CohortCoordinator
import CohortDashboard
import CohortJournal
import CohortJournalPostgres
import Foundation

/// `config/coordinator.yaml` and the `COHORT_COORDINATOR_*` environment, as a
/// ``CoordinatorConfiguration``.
enum CoordinatorSettings {
    /// Every key of `config/coordinator.yaml`, in the order the file documents them.
    static var settings: [Setting<CoordinatorConfiguration>] {
        [
            .string("endpoint", \.endpoint),
            .duration("heartbeatInterval", \.heartbeatInterval),
            .int("heartbeatLiveness", \.heartbeatLiveness),
            .int("prefetch", \.prefetch),
            .duration("shortAttempt", \.shortAttempt),
            .duration("linger", \.linger),
            .int("maxFrameSize", \.maxFrameSize),
            .optionalInt("maxMessageSize", \.maxMessageSize),
            .int("maxOutputBytes", \.maxOutputBytes),
            .int("maxLogBytes", \.maxLogBytes),
            .int("maxLogStoreBytes", \.maxLogStoreBytes),
            .int("maxBatch", \.maxBatch),
            .int("finishedGroupRetention", \.finishedGroupRetention),
            .int("maxWorkerLosses", \.maxWorkerLosses),
            .custom("limits"),
            .duration("priorityAging", \.priorityAging),
            .string("coordinatorID", \.coordinatorID),
            .custom("secretKeyFile"),
            .custom("authorizedKeysDir"),
            .optionalString("stateDir", \.stateDirectory),
            .custom("journal"),
            .custom("journalSynchronous"),
            .custom("standby"),
            .custom("lease"),
            .custom("advertise"),
            .duration("restartGrace", \.restartGrace),
            .duration("retention", \.retention),
            .optionalString("metrics", \.metrics),
            .int("specLimits.maxSpecBytes", \.specLimits.maxSpecBytes),
            .int("specLimits.maxChildrenPerGroup", \.specLimits.maxChildrenPerGroup),
            .int("specLimits.maxTotalChildren", \.specLimits.maxTotalChildren),
            .int("specLimits.maxNestingDepth", \.specLimits.maxNestingDepth),
            .int("specLimits.maxDocumentDepth", \.specLimits.maxDocumentDepth),
            .int("specLimits.maxNodes", \.specLimits.maxNodes),
            .int("specLimits.maxRetryAttempts", \.specLimits.maxRetryAttempts),
            .int("specLimits.maxNameLength", \.specLimits.maxNameLength),
            .custom("http"),
            .custom("httpTokens"),
        ]
    }

    /// The dashboard's keys of the same file and environment (`http`, `httpTokens`), which are
    /// the `cohort coordinator` command's, not the coordinator library's.
    /// - Throws: ``ConfigError`` naming the file or variable and the key.
    static func loadDashboard(
        file: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> DashboardOptions {
        try SettingsLoader.load(
            DashboardOptions(), settings: settings.map { .custom($0.key) }, file: file,
            environmentPrefix: "COHORT_COORDINATOR_", environment: environment
        ) { (source, options) throws(ConfigError) in
            if let text = try source.string("http") {
                do throws(DashboardSettingsError) {
                    options.address = try DashboardAddress.parse(text)
                    options.isDefault = false
                } catch {
                    throw ConfigError(
                        origin: source.origin("http"), key: "http",
                        message: "expected ADDRESS:PORT (e.g. 127.0.0.1:7401) or off, not \"\(text)\"")
                }
            }
            if let path = try source.string("httpTokens") { options.tokensFile = path }
        }
    }

    /// Defaults < `file` < environment (`COHORT_COORDINATOR_<KEY>`, e.g.
    /// `COHORT_COORDINATOR_ENDPOINT`, `COHORT_COORDINATOR_SPEC_LIMITS_MAX_NODES`). Flags are
    /// applied by the command afterwards (`keyFlags`: `--key`, `--authorized-keys`).
    /// - Throws: ``ConfigError`` naming the file or variable and the key.
    static func load(
        file: String?, keyFlags: (secretKeyFile: String?, authorizedKeysDir: String?) = (nil, nil),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> CoordinatorConfiguration {
        try SettingsLoader.load(
            CoordinatorConfiguration(), settings: settings, file: file, environmentPrefix: "COHORT_COORDINATOR_",
            environment: environment
        ) { (source, configuration) throws(ConfigError) in
            if configuration.stateDirectory == nil {
                configuration.stateDirectory = StateDirectory.defaultPath(environment: environment)
            }
            if let text = try source.string("journal") {
                do throws(JournalError) {
                    configuration.journalStore = try PostgresJournal.opener(url: text)
                } catch {
                    throw ConfigError(origin: source.origin("journal"), key: "journal", message: error.description)
                }
            }
            let lease = try source.duration("lease")
            let advertise = try source.string("advertise")
            if try source.bool("standby") == true {
                configuration.leadership = LeadershipSettings(lease: lease ?? .seconds(5), advertise: advertise)
            } else if advertise != nil {
                throw ConfigError(
                    origin: source.origin("advertise"), key: "advertise", message: "applies only with standby: true")
            } else if let lease {
                // Serving alone on PostgreSQL, the coordinator holds a lease of this length.
                configuration.leadership = LeadershipSettings(lease: lease, standsBy: false)
            }
            if let limits = try source.countMapping("limits") { configuration.lockLimits = limits }
            if let value = try source.string("journalSynchronous") {
                guard let mode = JournalSynchronous(rawValue: value.lowercased()) else {
                    throw ConfigError(
                        origin: source.origin("journalSynchronous"), key: "journalSynchronous",
                        message: "must be full or normal, not \"\(value)\"")
                }
                configuration.journalSynchronous = mode
            }
            let secretKeyFile = try source.string("secretKeyFile")
            let authorizedKeysDir = try source.string("authorizedKeysDir")
            configuration.curve = try KeySettings.server(
                secretKeyFile: keyFlags.secretKeyFile ?? secretKeyFile,
                authorizedKeysDir: keyFlags.authorizedKeysDir ?? authorizedKeysDir)
        }
    }
}
