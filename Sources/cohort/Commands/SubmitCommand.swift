import ArgumentParser
import CohortClient
import Foundation

import struct CohortSpec.SpecErrors
import enum CohortSpec.SpecFormat
import enum CohortSpec.SpecParser

/// `cohort submit FILE`: validate a spec here, send it, and optionally wait or watch.
struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Submit a group spec (YAML or JSON) to the coordinator.",
        discussion: """
            The spec is validated here before anything is sent: an invalid spec is rejected whole \
            with every error on its own line, named by its path, and exit status 65.

            Without --wait or --watch the command prints the group's id and returns at once; \
            the group runs on the cluster. --wait waits for the group to finish and prints its \
            outcome; --watch shows every child live (redrawn in place on a terminal, one line per \
            event otherwise) until the group finishes. Warnings (e.g. a kind no connected worker \
            offers) go to stderr; with --strict such a spec is refused instead (exit status 69, \
            nothing submitted).

            Exit status: 0 submitted (or, with --wait/--watch, succeeded); 1 the group failed; \
            3 it was cancelled; 64 usage error (a bad flag, a spec file that cannot be read); \
            65 invalid spec; 69 coordinator unreachable, or (--strict) no connected worker offers \
            a kind the spec runs with the labels it requires.

            Examples:
              cohort submit examples/release.yaml --wait
              cohort submit examples/fan-out.yaml --watch
              cohort submit release.yaml --watch --logs 3  # with their last lines
              cohort submit build.json --id nightly-1121 --json   # {"id": …, "name": …}
              cohort submit release.yaml --strict --wait  # refused if nobody runs it
              cohort submit hotfix.yaml --priority 10     # ahead of priority-0 groups
              COHORT_COORDINATOR=tcp://ci:7400 cohort submit release.yaml --wait
            """
    )

    @Argument(help: ArgumentHelp("The spec file: .json is JSON, anything else YAML.", valueName: "file"))
    var file: String

    @Flag(name: .long, help: "Wait for the group to finish; exit 0 succeeded, 1 failed, 3 cancelled.")
    var wait = false

    @Flag(name: .long, help: "Show every child live until the group finishes (implies --wait).")
    var watch = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --watch, the running children's logs too: on a terminal the last N lines under each; "
                + "into a pipe each line as written, as `PATH | text` (1-20).",
            valueName: "n"))
    var logs: Int?

    @Flag(
        name: .long,
        help: """
            Refuse the spec (exit 69, nothing submitted) if no connected worker offers one of its \
            kinds with the labels it requires, instead of accepting it with a warning.
            """)
    var strict = false

    @Option(
        name: .long,
        help: ArgumentHelp("A group id of your choosing; submitting it again is idempotent.", valueName: "id"))
    var id: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The group's priority (-1000…1000), over the spec's `priority`: higher goes first when slots or locks are scarce.",
            valueName: "n"))
    var priority: Int?

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    // The file is read in run(), not here: ArgumentParser calls validate() before it reports
    // unknown flags, and a typo in a flag is the error to see first.
    func validate() throws {
        if let id, id.isEmpty || id.contains(where: { $0.isWhitespace || $0 == "/" }) {
            throw ValidationError("--id must be non-empty, without spaces or '/'")
        }
        if let priority, !GroupSpec.priorityRange.contains(priority) {
            throw ValidationError("--priority must be between -1000 and 1000, not \(priority)")
        }
        if let logs {
            guard watch else { throw ValidationError("--logs shows logs in --watch's view: give --watch too") }
            guard (1...20).contains(logs) else {
                throw ValidationError("--logs must be from 1 to 20 lines, not \(logs)")
            }
        }
    }

    func run() async throws {
        let logger = log.bootstrap("cohort.submit")
        let text = try Self.readSpec(file)
        let format = SpecFormat(path: file)
        // Parsed (and validated) once: the client sends what this parse made.
        let spec: GroupSpec
        do {
            spec = try SpecParser.parse(text: text, format: format, sourceName: file)
        } catch {
            Self.report(error, file: file)
            throw ExitCode(ExitStatus.invalidSpec)
        }
        try await withClient(connection, logger: logger, strict: strict) { client in
            let receipt = try await client.submit(parsed: spec, sourceName: file, id: id, priority: priority)
            for warning in receipt.warnings { Console.err("cohort: warning: \(warning)") }
            guard wait || watch else {
                if output.json {
                    Console.out(JSONShapes.receipt(receipt).jsonString())
                } else {
                    Console.out(
                        "submitted \(receipt.name) as \(receipt.id)"
                            + (receipt.alreadySubmitted ? " (already submitted)" : ""))
                }
                return ExitStatus.success
            }
            return try await Self.follow(client, receipt.id, watch: watch, json: output.json, logs: logs ?? 0)
        }
    }

    /// `--wait` or `--watch` (of `submit` and `rerun`): follows the group to its end, prints
    /// its outcome (JSON, or the text report unless the live view already showed it) and
    /// returns the exit status it gives.
    static func follow(_ client: CohortClient, _ group: String, watch: Bool, json: Bool, logs: Int = 0) async throws
        -> Int32
    {
        let final: GroupDetail
        if watch {
            final = try await GroupFollower.follow(
                client, group: group, style: GroupFollower.style(json: json), logs: logs)
        } else {
            final = try await client.wait(group)
        }
        if json {
            Console.out(JSONShapes.group(final).jsonString())
        } else if !watch || !Console.stdoutIsTerminal {
            Console.out(TextReports.group(final))
        }
        return ExitStatus.of(final.state)
    }

    /// The file's text. A file that cannot be read is a usage error (64) naming why; a
    /// non-UTF-8 file is an invalid spec (65).
    static func readSpec(_ file: String) throws -> String {
        var isDirectory: ObjCBool = false
        let why: String? =
            if !FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) {
                "no such file"
            } else if isDirectory.boolValue {
                "it is a directory"
            } else if !FileManager.default.isReadableFile(atPath: file) { "permission denied" } else { nil }
        guard why == nil, let data = FileManager.default.contents(atPath: file) else {
            Console.error("cannot read the spec file \(file): \(why ?? String(cString: strerror(errno)))")
            throw ExitCode(ExitStatus.usage)
        }
        guard let text = String(data: data, encoding: .utf8) else {
            Console.error("\(file): the file is not UTF-8 text")
            throw ExitCode(ExitStatus.invalidSpec)
        }
        return text
    }

    /// Every error on its own line: `FILE:LINE:COLUMN: path: message`.
    static func report(_ errors: SpecErrors, file: String) {
        Console.err(
            "cohort: error: invalid spec \(file): \(errors.errors.count) error\(errors.errors.count == 1 ? "" : "s")")
        for error in errors.errors {
            let position = error.line.map { line in ":\(line)" + (error.column.map { ":\($0)" } ?? "") } ?? ""
            Console.err("\(file)\(position): \(error.path.isEmpty ? "" : "\(error.path): ")\(error.message)")
        }
    }
}
