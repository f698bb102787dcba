import CohortWorker
import Foundation

/// `config/worker.yaml` and the `COHORT_WORKER_*` environment, as a ``WorkerConfiguration``.
enum WorkerSettings {
    /// Every key of `config/worker.yaml`, as documented there.
    static let keys = [
        "coordinator", "name", "host", "slots", "labels", "killGrace", "heartbeatInterval", "heartbeatLiveness",
        "reconnectDelay", "maxReconnectDelay", "maxCapturedOutput",
    ]

    /// Defaults < `file` < environment (`COHORT_WORKER_<KEY>`, and `COHORT_COORDINATOR` for
    /// `coordinator`). Flags are applied by the command afterwards.
    /// - Throws: ``ConfigError`` naming the file or variable and the key.
    static func load(
        file: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> WorkerConfiguration {
        let source = try SettingsSource(
            file: file, keys: keys, environmentPrefix: "COHORT_WORKER_",
            aliases: ["coordinator": "COHORT_COORDINATOR"], environment: environment)
        var configuration = WorkerConfiguration()
        if let value = try source.string("coordinator") { configuration.coordinator = value }
        if let value = try source.string("name") { configuration.name = value }
        if let value = try source.string("host") { configuration.host = value }
        if let value = try source.int("slots") { configuration.slots = value }
        if let value = try source.strings("labels") { configuration.labels = value }
        if let value = try source.duration("killGrace") { configuration.killGrace = value }
        if let value = try source.duration("heartbeatInterval") { configuration.heartbeatInterval = value }
        if let value = try source.int("heartbeatLiveness") { configuration.heartbeatLiveness = value }
        if let value = try source.duration("reconnectDelay") { configuration.reconnectDelay = value }
        if let value = try source.duration("maxReconnectDelay") { configuration.maxReconnectDelay = value }
        if let value = try source.int("maxCapturedOutput") { configuration.maxCapturedOutput = value }
        return configuration
    }
}
