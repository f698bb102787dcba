import ArgumentParser
import CohortCoordinator
import CohortCore
import CohortJournal
import CohortJournalPostgres
import CohortSpec
import Foundation

/// `cohort prune`: delete finished groups older than a cutoff from a coordinator's journal.
struct PruneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete finished groups older than a cutoff from the coordinator's journal.",
        discussion: """
            The coordinator prunes groups that finished more than `retention` ago (default 7d) \
            by itself, once an hour. This does it by hand, on the journal file of a state \
            directory, whether the coordinator runs or not (only finished groups are touched; \
            a running coordinator forgets them from memory at its next start). Unfinished \
            groups are never pruned. With --journal postgres://… (or the config's journal) it \
            prunes that PostgreSQL journal instead. See docs/operations.md, "The journal".

            Examples:
              cohort prune                  # the default state dir, finished over 7d ago
              cohort prune --state-dir /var/lib/cohort --older-than 1d
              cohort prune --config config/coordinator.yaml --older-than 0s --json
              cohort prune --journal postgres://cohort@db.internal/cohort --older-than 30d
            """
    )

    @Option(
        name: .customLong("state-dir"),
        help: ArgumentHelp("The coordinator's state directory (default: as `cohort coordinator`).", valueName: "dir"))
    var stateDir: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A PostgreSQL journal to prune instead: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE.",
            valueName: "url"))
    var journal: String?

    @Option(
        name: .customLong("older-than"),
        help: ArgumentHelp(
            "Prune groups that finished longer ago than this (default: the retention, 7d).", valueName: "duration"))
    var olderThan: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The coordinator's settings file, for stateDir and retention.", valueName: "file"))
    var config: String?

    @OptionGroup var output: OutputOptions

    func validate() throws {
        _ = try settings()
    }

    /// The journal and the age to prune from: flags < the coordinator's settings.
    private func settings() throws -> (journal: JournalStoreOpener?, file: String, age: Duration) {
        let configuration: CoordinatorConfiguration
        do {
            configuration = try CoordinatorSettings.load(file: config)
        } catch {
            throw ValidationError(error.description)
        }
        var age = configuration.retention
        if let olderThan {
            do {
                age = try Duration(specString: olderThan)
            } catch {
                throw ValidationError("--older-than: \(error.description)")
            }
        }
        if let journal {
            do throws(JournalError) {
                return (try PostgresJournal.opener(url: journal), "", age)
            } catch {
                throw ValidationError("--journal: \(error.description)")
            }
        }
        if stateDir == nil, let store = configuration.journalStore { return (store, "", age) }
        let directory = stateDir ?? configuration.stateDirectory ?? StateDirectory.defaultPath()
        return (nil, directory + "/journal.sqlite", age)
    }

    func run() throws {
        let (store, file, age) = try settings()
        let path = store?.location ?? file
        let now = Date()
        let cutoff = now.addingTimeInterval(-Double(age.components.seconds))
        do {
            let journal: any JournalStore
            if let store { journal = try store.openExisting() } else { journal = try Journal.openExisting(at: file) }
            defer { journal.close() }
            let pruned = try journal.prune(
                finishedBefore: Timestamp(nanosecondsSinceEpoch: Int64(cutoff.timeIntervalSince1970 * 1e9)))
            // Their logs go with them (docs/operations.md, "Logs"): the journal database's store,
            // or the state directory's.
            if let openLogs = store?.openLogs, !pruned.isEmpty {
                let logStore = try openLogs(1 << 30, 1 << 40)
                defer { logStore.close() }
                try logStore.remove(groups: pruned)
            }
            let logs = (file as NSString).deletingLastPathComponent + "/logs.sqlite"
            if store == nil, !pruned.isEmpty, FileManager.default.fileExists(atPath: logs) {
                let logStore = try LogStore(path: logs, maxAttemptBytes: 1 << 30, maxTotalBytes: 1 << 40)
                defer { logStore.close() }
                try logStore.remove(groups: pruned)
            }
            let before = ISO8601DateFormatter().string(from: cutoff)
            if output.json {
                let report: JSONValue = [
                    "journal": .string(path), "finishedBefore": .string(before),
                    "pruned": .array(pruned.map(JSONValue.string)),
                ]
                Console.out(report.jsonString(pretty: false))
            } else {
                Console.out(
                    "pruned \(pruned.count) finished group\(pruned.count == 1 ? "" : "s") (finished before \(before)) from \(path)"
                )
            }
        } catch {
            Console.error("cannot prune: \(error)")
            throw ExitCode(error.exitCode)
        }
    }
}
