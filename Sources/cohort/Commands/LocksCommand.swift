import ArgumentParser
import CohortClient

/// `cohort locks`.
struct LocksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locks",
        abstract: "Show the cluster-wide lock table.",
        discussion: """
            One block per category held or waited for: how many hold it out of its limit \
            (HELD/LIMIT: 1/1 for an exclusive lock, 3/4 for a counting lock from `limits`), a \
            row per holder with its own fencing token, how long it has held it and its worker \
            (group/child and attempt, or a group's own hold), and the children waiting, first \
            in line first. An idle cluster prints nothing held. A child's locks are granted \
            before it is placed on a worker, so a holder that waits for a free slot shows \
            "(not placed yet)" as its worker (null in --json).

            --json shape (stable; fields may be added):
              [{"category", "token", "limit",
                "holders": [{"group", "child", "attempt", "worker", "groupHold", "heldSeconds", "token"}],
                "holder": <the first of holders> | null,
                "waiters": [{"group", "child", "waitingSeconds"}]}]

            Examples:
              cohort locks
              cohort locks --json | jq '.[] | select(.category == "db")'
              cohort locks --json | jq '.[] | "\\(.category) \\(.holders | length)/\\(.limit)"'
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
