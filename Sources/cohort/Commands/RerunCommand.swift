import ArgumentParser
import CohortClient
import Foundation

/// `cohort rerun GROUP`: submit a finished group's spec again, reusing what succeeded.
struct RerunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rerun",
        abstract: "Run a finished group again, reusing the outputs of its children that succeeded.",
        discussion: """
            Submits the group's spec again as a new group and prints the new id, like submit. \
            Each procedure that succeeded in the earlier run starts succeeded with its recorded \
            output, unless something it waits for runs again; the procedures that failed, were \
            cancelled or skipped run again, and so does everything after them (its dependents, \
            and whatever injects their outputs). A child whose output the coordinator cut to its \
            size limit runs again too. `cohort status NEW` shows the reused children as \
            "reused".

            The coordinator reads the earlier group from its journal, so a group it still keeps \
            there can be re-run (see `retention` and `cohort prune`); a coordinator started with \
            --no-journal cannot re-run. A group still running, or whose every procedure \
            succeeded, is refused (exit 64).

            Exit status: 0 submitted (or, with --wait/--watch, succeeded); 1 the group failed; \
            3 it was cancelled; 64 no such group, or it cannot be re-run (running, nothing \
            failed, no journal), or a bad flag; 69 coordinator unreachable.

            Examples:
              cohort rerun release-7f3a              # prints the new group's id
              cohort rerun release-7f3a --watch      # follow what runs again
              cohort rerun nightly-1121 --id nightly-1121-b --wait --json
            """
    )

    @Argument(help: ArgumentHelp("The finished group to run again (its id).", valueName: "group"))
    var group: String

    @Flag(name: .long, help: "Wait for the new group to finish; exit 0 succeeded, 1 failed, 3 cancelled.")
    var wait = false

    @Flag(name: .long, help: "Show every child of the new group live until it finishes (implies --wait).")
    var watch = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The new group's id, of your choosing; asking again with it is idempotent.", valueName: "id"))
    var id: String?

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func validate() throws {
        if group.isEmpty { throw ValidationError("the group id is empty") }
        if let id, id.isEmpty || id.contains(where: { $0.isWhitespace || $0 == "/" }) {
            throw ValidationError("--id must be non-empty, without spaces or '/'")
        }
    }

    func run() async throws {
        let logger = log.bootstrap("cohort.rerun")
        try await withClient(connection, logger: logger) { client in
            let receipt = try await client.rerun(group, id: id)
            for warning in receipt.warnings { Console.err("cohort: warning: \(warning)") }
            guard wait || watch else {
                if output.json {
                    Console.out(JSONShapes.receipt(receipt).jsonString())
                } else if receipt.alreadySubmitted {
                    Console.out("re-ran \(group) as \(receipt.id) (already submitted)")
                } else {
                    Console.out(
                        "re-running \(group) as \(receipt.id): \(receipt.reused) procedure\(receipt.reused == 1 ? "" : "s") reused"
                    )
                }
                return ExitStatus.success
            }
            if !output.json {
                Console.err("cohort: re-running \(group) as \(receipt.id): \(receipt.reused) reused")
            }
            return try await SubmitCommand.follow(client, receipt.id, watch: watch, json: output.json)
        }
    }
}
