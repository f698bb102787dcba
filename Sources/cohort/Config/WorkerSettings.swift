import CohortWorker
import Foundation

/// `config/worker.yaml` and the `COHORT_WORKER_*` environment, as a ``WorkerConfiguration``.
enum WorkerSettings {
    /// Every key of `config/worker.yaml`, in the order the file documents them.
    static var settings: [Setting<WorkerConfiguration>] {
        [
            .string("coordinator", \.coordinator),
            .custom("keyFile"),
            .custom("serverKey"),
            .string("name", \.name),
            .string("host", \.host),
            .int("slots", \.slots),
            .strings("labels", \.labels),
            .duration("killGrace", \.killGrace),
            .duration("heartbeatInterval", \.heartbeatInterval),
            .int("heartbeatLiveness", \.heartbeatLiveness),
            .duration("reconnectDelay", \.reconnectDelay),
            .duration("maxReconnectDelay", \.maxReconnectDelay),
            .int("maxCapturedOutput", \.maxCapturedOutput),
            .duration("drainTimeout", \.drainTimeout),
            .optionalString("metrics", \.metrics),
        ]
    }

    /// Defaults < `file` < environment (`COHORT_WORKER_<KEY>`; `COHORT_COORDINATOR`,
    /// `COHORT_KEY_FILE` and `COHORT_SERVER_KEY` as well, shared with the client commands).
    /// Flags are applied by the command afterwards (`keyFlags`: `--key`, `--server-key`).
    /// - Throws: ``ConfigError`` naming the file or variable and the key.
    static func load(
        file: String?, keyFlags: (keyFile: String?, serverKey: String?) = (nil, nil),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> WorkerConfiguration {
        try SettingsLoader.load(
            WorkerConfiguration(), settings: settings, file: file, environmentPrefix: "COHORT_WORKER_",
            aliases: [
                "coordinator": "COHORT_COORDINATOR", "keyFile": "COHORT_KEY_FILE", "serverKey": "COHORT_SERVER_KEY",
            ],
            environment: environment
        ) { (source, configuration) throws(ConfigError) in
            let keyFile = try source.string("keyFile")
            let serverKey = try source.string("serverKey")
            configuration.curve = try KeySettings.client(
                keyFile: keyFlags.keyFile ?? keyFile, serverKey: keyFlags.serverKey ?? serverKey, keyName: "keyFile",
                serverKeyName: "serverKey")
        }
    }
}
