import CohortCoordinator
import Foundation
import struct CohortCore.SpecLimits

/// `config/coordinator.yaml` and the `COHORT_COORDINATOR_*` environment, as a
/// ``CoordinatorConfiguration``.
enum CoordinatorSettings {
    /// Every key of `config/coordinator.yaml`, as documented there.
    static let keys = [
        "endpoint", "heartbeatInterval", "heartbeatLiveness", "prefetch", "linger", "maxFrameSize", "maxBatch",
        "finishedGroupRetention", "coordinatorID", "specLimits",
    ]

    /// The keys of the `specLimits` section.
    static let specLimitKeys = [
        "maxSpecBytes", "maxChildrenPerGroup", "maxTotalChildren", "maxNestingDepth", "maxDocumentDepth", "maxNodes",
        "maxRetryAttempts", "maxNameLength",
    ]

    /// Defaults < `file` < environment (`COHORT_COORDINATOR_<KEY>`, e.g.
    /// `COHORT_COORDINATOR_ENDPOINT`, `COHORT_COORDINATOR_SPEC_LIMITS_MAX_NODES`). Flags are
    /// applied by the command afterwards.
    /// - Throws: ``ConfigError`` naming the file or variable and the key.
    static func load(
        file: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> CoordinatorConfiguration {
        let source = try SettingsSource(
            file: file, keys: keys, environmentPrefix: "COHORT_COORDINATOR_", sections: ["specLimits": specLimitKeys],
            environment: environment)
        var configuration = CoordinatorConfiguration()
        if let value = try source.string("endpoint") { configuration.endpoint = value }
        if let value = try source.duration("heartbeatInterval") { configuration.heartbeatInterval = value }
        if let value = try source.int("heartbeatLiveness") { configuration.heartbeatLiveness = value }
        if let value = try source.int("prefetch") { configuration.prefetch = value }
        if let value = try source.duration("linger") { configuration.linger = value }
        if let value = try source.int("maxFrameSize") { configuration.maxFrameSize = value }
        if let value = try source.int("maxBatch") { configuration.maxBatch = value }
        if let value = try source.int("finishedGroupRetention") { configuration.finishedGroupRetention = value }
        if let value = try source.string("coordinatorID") { configuration.coordinatorID = value }
        var limits = configuration.specLimits
        if let value = try source.int("specLimits.maxSpecBytes") { limits.maxSpecBytes = value }
        if let value = try source.int("specLimits.maxChildrenPerGroup") { limits.maxChildrenPerGroup = value }
        if let value = try source.int("specLimits.maxTotalChildren") { limits.maxTotalChildren = value }
        if let value = try source.int("specLimits.maxNestingDepth") { limits.maxNestingDepth = value }
        if let value = try source.int("specLimits.maxDocumentDepth") { limits.maxDocumentDepth = value }
        if let value = try source.int("specLimits.maxNodes") { limits.maxNodes = value }
        if let value = try source.int("specLimits.maxRetryAttempts") { limits.maxRetryAttempts = value }
        if let value = try source.int("specLimits.maxNameLength") { limits.maxNameLength = value }
        configuration.specLimits = limits
        return configuration
    }
}
