import ArgumentParser
import CohortClient

import enum CohortSpec.JSONValue

/// `cohort undrain WORKER`: give a worker an operator drained work again.
struct UndrainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "undrain",
        abstract: "Give a worker drained with `cohort drain` work again.",
        discussion: """
            A drain (`cohort drain`) belongs to the worker's name: the worker stays connected \
            and idle, and stays drained if it reconnects or its process is restarted, until \
            `cohort undrain` (or a restart of the coordinator, which does not journal drains). \
            Undrain makes it `ready` again and the coordinator places work on it at once. A \
            drained worker that is not connected now can be undrained by name too.

            It is an error (exit 64) to undrain a worker that is neither connected nor \
            drained, one that is not drained, or one that drains itself because it is \
            stopping (SIGTERM: it leaves once idle; undrain cannot keep it).

            With CURVE, only an admin key (the `drain` permission) may undrain; any other key \
            exits 77.

            Examples:
              cohort drain build-1 && ssh build-1 sudo apt-get upgrade -y && cohort undrain build-1
              cohort undrain w-3 --key ~/.cohort/ops.key --server-key coordinator.pub
              cohort undrain build-1 --json      # {"worker": "build-1", "draining": false}
            """
    )

    @Argument(
        help: ArgumentHelp(
            "The worker's name, or a connected worker's session id (see `cohort workers`).", valueName: "worker"))
    var worker: String

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func run() async throws {
        let logger = log.bootstrap("cohort.undrain")
        try await withClient(connection, logger: logger) { client in
            try await client.undrain(worker: worker)
            let shape: JSONValue = ["worker": .string(worker), "draining": false]
            Console.out(output.json ? shape.jsonString() : "\(worker) is no longer drained: it takes work again")
            return ExitStatus.success
        }
    }
}
