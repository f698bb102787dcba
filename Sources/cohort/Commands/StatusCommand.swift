import ArgumentParser
import CohortClient
import CohortSpec
import Foundation

/// `cohort status [GROUP]`: the groups (filtered, from the journal's history too), or one
/// group and its children.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "List groups (filtered, newest first), or show one group with each child's state.",
        discussion: """
            Without GROUP: one line per group, newest submission first (id, name, state, \
            submission and finish times): the groups the coordinator runs and the finished ones \
            its journal keeps, so yesterday's groups are listed too, as far back as the \
            coordinator's `retention` and `cohort prune` keep them (without a journal, only the \
            finished groups it still holds in memory). The coordinator filters; every filter \
            given must match:
              --state STATE   pending, running, succeeded, failed or cancelled; repeat it or \
            give a comma list (--state failed,cancelled) for any of them
              --name GLOB     the group's name matches a shell-style glob: * ? [a-z] [!a-z] \
            (case-sensitive; quote it so the shell leaves it alone; [*] matches a *)
              --since WHEN    submitted at or after WHEN: a duration back from now (90s, 30m, \
            2h, 1d) or an ISO 8601 time (2026-11-25T08:00:00Z, 2026-11-25)
              --limit N       at most N groups, the newest (default 50); 0 or "all" for every \
            one (the coordinator answers at most 10,000)

            With GROUP: the group's state and, per child, its state (pending, waiting, ready, \
            running, succeeded, failed, cancelled, skipped: its `if:` was false or a dependency \
            was skipped), worker, attempt, elapsed time and error or waiting reason (a repeat \
            waiting for its next run says so; a child of a `cohort rerun` that kept its earlier \
            output says "reused"). Children added while the group runs (`cohort add`) and a \
            matrix's combinations (a nested group, `test/test[os=linux]`) are listed like the \
            others. The filters do not apply.

            --json shapes (stable; fields may be added):
              status        [{"id", "name", "state", "submittedAt", "finishedAt"}]
                            (finishedAt null while the group runs; newest first)
              status GROUP  {"id", "name", "state", "priority", "children": [{"name", "path",
                             "state", "worker", "attempt", "error", "startedAt", "finishedAt",
                             "earlierAttempts", "reused", …}]}  (docs/cli.md has them all)

            Examples:
              cohort status
              cohort status --state failed --since 24h
              cohort status --state succeeded,cancelled --name 'release-*' --limit 10
              cohort status --since 2026-11-25T00:00:00Z --limit all --json | jq length
              cohort status release-3 --json | jq '.children[] | select(.state=="failed")'
            """
    )

    @Argument(help: ArgumentHelp("A group id.", valueName: "group"))
    var group: String?

    @Option(
        name: .customLong("state"),
        help: ArgumentHelp(
            "List groups in this state (pending, running, succeeded, failed, cancelled); repeatable or a comma list.",
            valueName: "state"))
    var states: [String] = []

    @Option(help: ArgumentHelp("List groups whose name matches this glob (* ? [a-z] [!a-z]).", valueName: "glob"))
    var name: String?

    @Option(
        help: ArgumentHelp(
            "List groups submitted at or after this: a duration back from now (30m, 2h) or an ISO 8601 time.",
            valueName: "when"))
    var since: String?

    @Option(
        help: ArgumentHelp(
            "List at most this many groups, the newest (default 50; 0 or all: every one).", valueName: "n"))
    var limit: String?

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func validate() throws {
        if group != nil, !states.isEmpty || name != nil || since != nil || limit != nil {
            throw ValidationError("--state, --name, --since and --limit list groups; leave them out with a GROUP")
        }
        _ = try filter(now: Date())
    }

    /// The filter the options give, at `now` (for `--since DURATION`).
    func filter(now: Date) throws -> GroupFilter {
        var filter = GroupFilter()
        for text in states.flatMap({ $0.split(separator: ",", omittingEmptySubsequences: false) }) {
            let word = text.trimmingCharacters(in: .whitespaces).lowercased()
            guard let state = GroupState.allCases.first(where: { $0.word == word }) else {
                let valid = GroupState.allCases.map(\.word).joined(separator: ", ")
                throw ValidationError("--state: unknown state \"\(text)\"; the states are \(valid)")
            }
            filter.states.insert(state)
        }
        if let name {
            guard !name.isEmpty else { throw ValidationError("--name: the glob is empty") }
            filter.nameGlob = name
        }
        if let since { filter.submittedSince = try Self.time(since, now: now) }
        if let limit {
            if limit.lowercased() == "all" {
                filter.limit = 0
            } else if let count = UInt32(limit) {
                filter.limit = count
            } else {
                throw ValidationError(
                    "--limit: \"\(limit)\" is not a count; give a whole number (0 or all: every group)")
            }
        }
        return filter
    }

    /// `--since`: a duration back from `now` (`30m`, `2h`, `1d`) or an ISO 8601 time.
    static func time(_ text: String, now: Date) throws -> WireTimestamp {
        if let date = iso8601(text) { return WireTimestamp(date) }
        do {
            let back = try Duration(specString: text)
            let (seconds, attoseconds) = back.components
            return WireTimestamp(now.addingTimeInterval(-(Double(seconds) + Double(attoseconds) / 1e18)))
        } catch SpecDurationError.negative {
            throw ValidationError(
                "--since: \"\(text)\" is a negative duration; give how far back to look, positive (30m: "
                    + "groups submitted in the last 30 minutes), or an ISO 8601 time (2026-11-25T08:00:00Z)")
        } catch {
            throw ValidationError(
                "--since: \"\(text)\" is neither a duration (90s, 30m, 2h, 1d) nor an ISO 8601 time "
                    + "(2026-11-25T08:00:00Z, 2026-11-25)")
        }
    }

    private static func iso8601(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds], [.withFullDate],
        ] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    func run() async throws {
        let logger = log.bootstrap("cohort.status")
        let filter = try filter(now: Date())
        try await withClient(connection, logger: logger) { client in
            if let group {
                let detail = try await client.status(group)
                Console.out(output.json ? JSONShapes.group(detail).jsonString() : TextReports.group(detail))
            } else {
                let groups = try await client.status(filter: filter)
                Console.out(output.json ? JSONShapes.groups(groups).jsonString() : TextReports.groups(groups))
            }
            return ExitStatus.success
        }
    }
}
