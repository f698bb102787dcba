import ArgumentParser
import CohortClient

/// `cohort locks`.
struct LocksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locks",
        abstract: "Show the cluster-wide lock table.",
        discussion: """
            One line per mutual-exclusion category held or waited for: the last fencing token \
            granted, the attempt holding it (group/child, attempt, worker) and the children \
            waiting, first in line first. An idle cluster prints nothing held. A child's locks \
            are granted before it is placed on a worker, so a holder that waits for a free slot \
            shows "(not placed yet)" as its worker (null in --json).

            --json shape (stable; fields may be added):
              [{"category", "token", "holder": {"group", "child", "attempt", "worker"} | null,
                "waiters": [{"group", "child"}]}]

            Examples:
              cohort locks
              cohort locks --json | jq '.[] | select(.category == "db")'
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func run() async throws {
        let logger = log.bootstrap("cohort.locks")
        try await withClient(connection, logger: logger) { client in
            let locks = try await client.locks()
            Console.out(output.json ? JSONShapes.locks(locks).jsonString() : TextReports.locks(locks))
            return ExitStatus.success
        }
    }
}
