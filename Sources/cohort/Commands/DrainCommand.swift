import ArgumentParser
import CohortClient

import enum CohortSpec.JSONValue

/// `cohort drain WORKER`: stop giving a worker new work.
struct DrainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drain",
        abstract: "Stop giving a worker new work; what it runs finishes there.",
        discussion: """
            The coordinator marks the worker draining (`cohort workers` shows "draining \
            (drained)") and sends it nothing new; its running children finish normally. The \
            worker stays connected and idle; the drain belongs to its name, so it lasts if the \
            worker reconnects or its process is restarted, until `cohort undrain WORKER` gives \
            it work again (a restarted coordinator forgets drains). Service its host, or stop \
            the worker once it runs nothing (SIGTERM, or systemctl stop). A worker can also \
            drain itself on SIGTERM (see `cohort worker --help`). A worker that is not \
            connected cannot be drained (exit 64).

            With CURVE, only an admin key may drain workers; any other key exits 77.

            Examples:
              cohort drain build-1
              cohort drain w-3 --key ~/.cohort/ops.key --server-key coordinator.pub
              cohort drain build-1 --json        # {"worker": "build-1", "draining": true}
              cohort undrain build-1             # it takes work again
            """
    )

    @Argument(help: ArgumentHelp("The worker's name or session id (see `cohort workers`).", valueName: "worker"))
    var worker: String

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func run() async throws {
        let logger = log.bootstrap("cohort.drain")
        try await withClient(connection, logger: logger) { client in
            try await client.drain(worker: worker)
            let shape: JSONValue = ["worker": .string(worker), "draining": true]
            Console.out(output.json ? shape.jsonString() : "\(worker) is draining: it gets no new work")
            return ExitStatus.success
        }
    }
}
