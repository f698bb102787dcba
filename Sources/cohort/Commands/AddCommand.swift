import ArgumentParser
import CohortClient
import Foundation

import enum CohortSpec.JSONValue
import struct CohortSpec.SpecErrors
import enum CohortSpec.SpecFormat
import enum CohortSpec.SpecParser

/// `cohort add GROUP FILE [--into PATH]`: children added to a running group.
struct AddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add children to a running group.",
        discussion: """
            FILE holds the children, written like a spec's `children`: a YAML or JSON list, or \
            a mapping with only `children:`; `-` reads them from stdin. They are validated like \
            a spec (names unique among their new siblings, `after` and `inject` may name \
            children already in the group), journaled before the command returns, and run like \
            submitted children; the group finishes only after them. --into PATH adds them at the \
            end of a nested group's children (its path): any nested group that is running.

            A group that has finished, or is being cancelled, is refused (exit 64). Under CURVE \
            the group's owner or an admin key may add; a running child of the group may add \
            with its attempt token (COHORT_ATTEMPT_TOKEN, which the worker sets), so from a \
            shell child:

              cohort add "$COHORT_GROUP" - <<'EOF'
              - name: deploy-canary
                run: shell
                with: { command: ["./deploy.sh", "canary"] }
              - { name: verify, run: shell, after: [deploy-canary], with: { command: ["./verify.sh"] } }
              EOF

            Examples:
              cohort add release-3 more-tests.yaml
              cohort add release-3 hotfix.json --into deploy --json
            """
    )

    @Argument(help: ArgumentHelp("A group id.", valueName: "group"))
    var group: String

    @Argument(help: ArgumentHelp("The children (YAML or JSON); - for stdin.", valueName: "file"))
    var file: String

    @Option(name: .long, help: ArgumentHelp("Add into this nested group (its path).", valueName: "path"))
    var into: String?

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func validate() throws {
        if let into, into.isEmpty {
            throw ValidationError("--into must name a nested group's path; leave it out for the top level")
        }
    }

    func run() async throws {
        let logger = log.bootstrap("cohort.add")
        let text: String
        let source: String
        if file == "-" {
            let data = FileHandle.standardInput.readDataToEndOfFile()
            guard let read = String(data: data, encoding: .utf8) else {
                Console.error("stdin: the children are not UTF-8 text")
                throw ExitCode(ExitStatus.invalidSpec)
            }
            text = read
            source = "stdin"
        } else {
            text = try SubmitCommand.readSpec(file)
            source = file
        }
        let format = file == "-" ? SpecFormat.yaml : SpecFormat(path: file)
        do {
            _ = try SpecParser.parseChildren(text: text, format: format)
        } catch {
            SubmitCommand.report(error, file: source)
            throw ExitCode(ExitStatus.invalidSpec)
        }
        try await withClient(connection, logger: logger) { client in
            let paths = try await client.add(
                document: text, format: format == .json ? .json : .yaml, to: group, into: into)
            if output.json {
                Console.out(
                    ([
                        "group": .string(group), "into": into.map { .string($0) } ?? .null,
                        "added": .array(paths.map { .string($0) }),
                    ] as JSONValue).jsonString())
            } else {
                Console.out("added to \(group): \(paths.joined(separator: ", "))")
            }
            return ExitStatus.success
        }
    }
}
