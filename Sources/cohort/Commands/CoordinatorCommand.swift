import ArgumentParser
import CohortCoordinator
import Foundation

/// `cohort coordinator`: run the coordinator until SIGINT or SIGTERM.
struct CoordinatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coordinator",
        abstract: "Run the coordinator: accept groups from clients and split them across workers.",
        discussion: """
            The coordinator binds one endpoint for clients and workers and prints \
            `cohort coordinator listening on ENDPOINT` once bound (with a wildcard port \
            resolved, so scripts can read it). SIGINT or SIGTERM stops it gracefully.

            Settings: built-in defaults < --config FILE (see config/coordinator.yaml, every \
            key documented) < environment (COHORT_COORDINATOR_<KEY>) < flags.

            Examples:
              cohort coordinator                                  # tcp://127.0.0.1:7400
              cohort coordinator --endpoint 'tcp://127.0.0.1:*'   # any free port
              cohort coordinator --config config/coordinator.yaml --endpoint tcp://0.0.0.0:7400
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp("The endpoint to bind, e.g. tcp://0.0.0.0:7400; port * picks a free one.", valueName: "endpoint"))
    var endpoint: String?

    @Option(name: .long, help: ArgumentHelp("A settings file, e.g. config/coordinator.yaml.", valueName: "file"))
    var config: String?

    @OptionGroup var log: LogOptions

    func validate() throws {
        _ = try makeConfiguration()
    }

    /// Defaults < --config < environment < flags, validated.
    func makeConfiguration() throws -> CoordinatorConfiguration {
        var configuration: CoordinatorConfiguration
        do {
            configuration = try CoordinatorSettings.load(file: config)
        } catch {
            throw ValidationError(error.description)
        }
        if let endpoint { configuration.endpoint = endpoint }
        do {
            try configuration.validate()
        } catch {
            throw ValidationError(error.description)
        }
        return configuration
    }

    func run() async throws {
        let logger = log.bootstrap("cohort.coordinator", default: .info)
        let coordinator = Coordinator(configuration: try makeConfiguration(), logger: logger)
        do {
            try await ServiceRunner.run(name: "coordinator", logger: logger) {
                try await coordinator.run()
            }
        } catch {
            Console.error("the coordinator stopped: \(error)")
            throw ExitCode(ExitStatus.unavailable)
        }
    }
}
