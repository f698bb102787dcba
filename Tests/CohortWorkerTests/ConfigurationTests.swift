import Foundation
import Testing

@testable import CohortWorker

struct ConfigurationTests {
    @Test func defaultsAreDocumented() throws {
        let configuration = WorkerConfiguration()
        #expect(configuration.coordinator == "tcp://127.0.0.1:7400")
        #expect(configuration.name == "\(WorkerConfiguration.hostName)-\(getpid())")
        #expect(configuration.slots == ProcessInfo.processInfo.activeProcessorCount)
        #expect(configuration.labels.isEmpty)
        #expect(configuration.killGrace == .seconds(5))
        #expect(configuration.heartbeatInterval == .seconds(1))
        #expect(configuration.heartbeatLiveness == 3)
        #expect(configuration.reconnectDelay == .seconds(1))
        #expect(configuration.maxReconnectDelay == .seconds(32))
        #expect(configuration.drainTimeout == .seconds(60))
        try configuration.validate()
    }

    /// The defaults with `setting` made invalid.
    static func breaking(_ setting: String) -> WorkerConfiguration {
        var configuration = WorkerConfiguration()
        switch setting {
        case "coordinator": configuration.coordinator = "localhost:7400"
        case "name": configuration.name = "two words"
        case "slots": configuration.slots = 0
        case "labels": configuration.labels = ["linux,gpu"]
        case "killGrace": configuration.killGrace = .seconds(-1)
        case "heartbeatInterval": configuration.heartbeatInterval = .zero
        case "heartbeatLiveness": configuration.heartbeatLiveness = 0
        case "maxReconnectDelay": configuration.maxReconnectDelay = .milliseconds(10)
        case "maxCapturedOutput": configuration.maxCapturedOutput = 0
        case "drainTimeout": configuration.drainTimeout = .seconds(-1)
        default: Issue.record("no way to break \(setting)")
        }
        return configuration
    }

    @Test(arguments: [
        "coordinator", "name", "slots", "labels", "killGrace", "heartbeatInterval", "heartbeatLiveness",
        "maxReconnectDelay", "maxCapturedOutput", "drainTimeout",
    ])
    func validateNamesTheSettingAtFault(setting: String) {
        let configuration = Self.breaking(setting)
        #expect(throws: WorkerConfigurationError.self) { try configuration.validate() }
        do {
            try configuration.validate()
        } catch {
            #expect(error.setting == setting)
        }
    }

    @Test func fenceVariableNamesAreUpperCasedWithUnderscores() {
        #expect(CohortEnvironment.fenceVariable(for: "db") == "COHORT_FENCE_DB")
        #expect(CohortEnvironment.fenceVariable(for: "db-main.eu/1") == "COHORT_FENCE_DB_MAIN_EU_1")
        #expect(CohortEnvironment.fenceVariable(for: "Caché") == "COHORT_FENCE_CACH_")
    }
}
