import ArgumentParser
import CohortClient

/// `cohort status [GROUP]`: every group, or one group and its children.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show every group, or one group with each child's state.",
        discussion: """
            Without GROUP: one line per group the coordinator knows (id, name, state, \
            submission time). With GROUP: the group's state and, per child, its state \
            (pending, waiting, ready, running, succeeded, failed, cancelled), worker, attempt, \
            elapsed time and error or waiting reason.

            --json shapes (stable; fields may be added):
              status        [{"id", "name", "state", "submittedAt"}]
              status GROUP  {"id", "name", "state", "children": [{"name", "path", "state",
                             "worker", "attempt", "error", "startedAt", "finishedAt"}]}

            Examples:
              cohort status
              cohort status release-3 --json | jq '.children[] | select(.state=="failed")'
            """
    )

    @Argument(help: ArgumentHelp("A group id.", valueName: "group"))
    var group: String?

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func run() async throws {
        let logger = log.bootstrap("cohort.status")
        try await withClient(connection, logger: logger) { client in
            if let group {
                let detail = try await client.status(group)
                Console.out(output.json ? JSONShapes.group(detail).jsonString() : TextReports.group(detail))
            } else {
                let groups = try await client.status()
                Console.out(output.json ? JSONShapes.groups(groups).jsonString() : TextReports.groups(groups))
            }
            return ExitStatus.success
        }
    }
}
