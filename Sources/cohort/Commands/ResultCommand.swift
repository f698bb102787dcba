import ArgumentParser
import CohortClient

import enum CohortSpec.OutputLimit

/// `cohort result GROUP [CHILD]`: a finished child's output.
struct ResultCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "result",
        abstract: "Print a finished child's output as JSON.",
        discussion: """
            CHILD is the child's path in nested groups (tests/unit). Without CHILD, the \
            group's own result. A child that succeeded prints its output (for shell: \
            {"exitCode", "stdout", "stderr"}); one that failed or was cancelled prints its \
            error on stderr and exits 1 or 3 (with --json, {"state", "error"} on stdout).

            Examples:
              cohort result release-3 build
              cohort result release-3 tests/unit --json | jq -r .stdout
            """
    )

    @Argument(help: ArgumentHelp("A group id.", valueName: "group"))
    var group: String

    @Argument(help: ArgumentHelp("The child's path, e.g. tests/unit.", valueName: "child"))
    var child: String?

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func run() async throws {
        let logger = log.bootstrap("cohort.result")
        try await withClient(connection, logger: logger) { client in
            let (outcome, truncated) = try await client.resultDetail(group, child: child)
            if truncated {
                Console.err(
                    "cohort: warning: this output was cut down to the coordinator's maxOutputBytes; "
                        + "\"\(OutputLimit.markerText)…\" marks where")
            }
            switch outcome {
            case .succeeded(let value):
                Console.out(value.jsonString(pretty: !output.json))
                return ExitStatus.success
            case .failed(let error), .cancelled(let error):
                if output.json, let shape = JSONShapes.unsuccessful(outcome) {
                    Console.out(shape.jsonString())
                } else {
                    let what = child.map { "\(group)/\($0)" } ?? group
                    Console.err("\(what) \(outcome.isCancelled ? "was cancelled" : "failed"): \(error)")
                }
                return outcome.isCancelled ? ExitStatus.groupCancelled : ExitStatus.groupFailed
            }
        }
    }
}

extension ChildOutcome {
    var isCancelled: Bool {
        if case .cancelled = self { true } else { false }
    }
}
