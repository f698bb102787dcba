import Foundation
import Testing

/// The CLI's words: usage errors before anything else, reasons for unreadable files, one
/// `--watch` line per visible change, help that fits 80 columns.
extension EndToEnd {
    @Suite struct CLIMessages {
        /// A mistyped flag is the error shown (64), even when the file does not exist either.
        @Test func anUnknownFlagIsReportedBeforeAMissingFile() throws {
            let result = try cohort(["submit", "--wiat", "missing.yaml"])
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("--wiat"), "\(result)")
            #expect(!result.stderr.contains("cannot read"), "\(result)")
        }

        /// A spec file that cannot be read is a usage error (64) that says why.
        @Test func anUnreadableSpecFileSaysWhy() throws {
            let missing = try cohort(["submit", Scratch.file("absent.yaml")])
            #expect(missing.status == 64, "\(missing)")
            #expect(
                missing.stderr.contains("cannot read the spec file") && missing.stderr.contains(": no such file"),
                "\(missing)")

            let directory = Scratch.file("a-directory.yaml")
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let folder = try cohort(["submit", directory])
            #expect(folder.status == 64, "\(folder)")
            #expect(folder.stderr.contains(": it is a directory"), "\(folder)")

            if getuid() != 0 {  // root reads anything
                let locked = try Scratch.write("name: x\nchildren: []\n", name: "locked.yaml")
                chmod(locked, 0)
                let denied = try cohort(["submit", locked])
                #expect(denied.status == 64, "\(denied)")
                #expect(denied.stderr.contains(": permission denied"), "\(denied)")
            }
        }

        /// `--watch` into a pipe prints one line per visible change: a child that becomes
        /// ready and is then dispatched (still `ready`, now with a worker) shows `ready` once.
        @Test func watchLinesShowEachChangeOnce() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 2)
            let file = try Scratch.write(
                """
                name: seq
                mode: sequence
                children:
                  - name: a
                    run: echo
                    with: { x: 1 }
                  - name: b
                    run: shell
                    with: { command: ["sleep", "0.2"] }
                  - name: c
                    run: echo
                    with: { x: 2 }

                """, name: "seq.yaml")
            let result = try cluster.cli(["submit", file, "--watch"])
            #expect(result.status == 0, "\(result)")
            // `[  0.20s] c: ready` → `c: ready`
            let events = result.stdout.split(separator: "\n").compactMap { line in
                line.hasPrefix("[")
                    ? line.split(separator: "]", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) }
                    : nil
            }
            for (line, next) in zip(events, events.dropFirst()) {
                #expect(line != next, "the same line twice in a row:\n\(result.stdout)")
            }
            #expect(events.contains("c: ready"), "\(result.stdout)")
        }

        /// Every command's help fits 80 columns (the generated USAGE line aside), and no
        /// example is wrapped into a line that starts at the margin.
        @Test func helpFitsEightyColumns() throws {
            let commands = [
                "", "submit", "status", "result", "cancel", "workers", "locks", "drain", "prune", "keygen",
                "coordinator", "worker", "demo",
            ]
            for command in commands {
                let result = try cohort((command.isEmpty ? [] : [command]) + ["--help"])
                #expect(result.status == 0, "\(command): \(result)")
                var inExamples = false
                for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix("USAGE:") {
                        inExamples = false
                        continue
                    }
                    #expect(line.count <= 80, "cohort \(command) --help: \(line.count) columns: \(line)")
                    if line.hasPrefix("Example") {
                        inExamples = true
                        continue
                    }
                    if inExamples, !line.isEmpty, !line.hasPrefix(" ") {
                        Issue.record("cohort \(command) --help: an example wrapped: \(line)")
                    }
                }
            }
        }
    }
}
