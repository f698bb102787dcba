import ArgumentParser
import CohortClient

import enum CohortSpec.JSONValue

/// `cohort cancel GROUP [--child NAME]`.
struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a group, or one child of it.",
        discussion: """
            Cancelling a group reaches every running child on every worker (a shell child's \
            process group gets SIGTERM, then SIGKILL after the worker's grace period), \
            withdraws waiting lock requests and never starts pending children; the group \
            finishes `cancelled` once every child has finished. Cancelling one child (--child, \
            its path) also cancels the children that depend on it, and nothing else.

            The command returns once the cancel is final: no pending child it covers can start \
            any more (workers have confirmed the attempts sent to them). Add --wait to wait until \
            the group has finished. A group (or child) that had already finished is left as it \
            is: the command says so and exits 0.

            From a running child of the group (a shell child: the worker sets \
            COHORT_COORDINATOR, COHORT_GROUP and the attempt token COHORT_ATTEMPT_TOKEN), the \
            group ends cancelled with a reason naming that child: `cancelled by child \
            deploy/check (attempt 1): rollback needed`.

            Examples:
              cohort cancel release-3
              cohort cancel release-3 --child tests/integration --reason "flaky, skipping"
              cohort cancel "$COHORT_GROUP" --reason "rollback needed"     # inside a child
              cohort cancel release-3 --wait && cohort locks
            """
    )

    @Argument(help: ArgumentHelp("A group id.", valueName: "group"))
    var group: String

    @Option(name: .long, help: ArgumentHelp("Cancel only this child (its path) and its dependents.", valueName: "name"))
    var child: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Why; shown as the cancelled children's error (default: cancelled by this client's name).",
            valueName: "text"))
    var reason: String = ""

    @Flag(name: .long, help: "Wait until the group has finished; exit as `submit --wait` does.")
    var wait = false

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func run() async throws {
        let logger = log.bootstrap("cohort.cancel")
        try await withClient(connection, logger: logger) { client in
            // One round trip: the answer says whether it had already finished (nothing to
            // cancel, and saying "cancelling" would mislead).
            let finishedState = try await client.cancel(group, child: child, reason: reason).map { "\($0)" }
            if let finishedState, !wait {
                let name = child.map { "\(group)/\($0)" } ?? group
                if output.json {
                    Console.out(
                        ([
                            "group": .string(group), "child": child.map { .string($0) } ?? .null, "accepted": false,
                            "alreadyFinished": .string(finishedState),
                        ] as JSONValue).jsonString())
                } else {
                    Console.out("\(name) had already finished (\(finishedState)); nothing to cancel")
                }
                return ExitStatus.success
            }
            guard wait else {
                if output.json {
                    Console.out(
                        (["group": .string(group), "child": child.map { .string($0) } ?? .null, "accepted": true]
                            as JSONValue).jsonString())
                } else {
                    Console.out("cancelling \(child.map { "\(group)/\($0)" } ?? group)")
                }
                return ExitStatus.success
            }
            let final = try await client.wait(group)
            Console.out(output.json ? JSONShapes.group(final).jsonString() : TextReports.group(final))
            return ExitStatus.of(final.state)
        }
    }
}
