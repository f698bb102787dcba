import ArgumentParser
import CohortClient

/// `cohort workers`.
struct WorkersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workers",
        abstract: "List the workers connected to the coordinator.",
        discussion: """
            One line per worker: id, name, host, labels, procedure kinds offered, slots, attempts \
            running now and state \
            (ready, draining, or lost: a worker that left recently).

            --json shape (stable; fields may be added):
              [{"id", "name", "host", "labels", "kinds", "slots", "running", "state"}]

            Examples:
              cohort workers
              cohort workers --json | jq '[.[] | .slots] | add'
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func run() async throws {
        let logger = log.bootstrap("cohort.workers")
        try await withClient(connection, logger: logger) { client in
            let workers = try await client.workers()
            Console.out(output.json ? JSONShapes.workers(workers).jsonString() : TextReports.workers(workers))
            return ExitStatus.success
        }
    }
}
