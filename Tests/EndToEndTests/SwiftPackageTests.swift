import Foundation
import Testing

extension EndToEnd {
    /// docs/swift.md and examples/WordsPackage: a separate package that depends on Cohort by
    /// path, with typed kinds, a worker in a ServiceGroup and a typed client, built and run
    /// against a real coordinator.
    @Suite struct SwiftPackage {
        /// Every `swift` block of the guide is part of the file its `<!-- snippet: FILE -->`
        /// names, a file that a build compiles (the package test below, or the root package).
        @Test(arguments: [("docs/swift.md", 7), ("docs/worker.md", 4), ("docs/cli.md", 1)])
        func everyGuideSnippetIsInACompiledFile(page: String, atLeast: Int) throws {
            let guide = try String(contentsOfFile: Binaries.repositoryRoot + "/" + page, encoding: .utf8)
            let blocks = Self.snippets(in: guide)
            #expect(blocks.count >= atLeast, "\(page)'s snippets: \(blocks.map(\.file))")
            // Every ```swift block counts, even one the parser could not pair with a comment.
            #expect(guide.components(separatedBy: "```swift").count - 1 == blocks.count, "\(page)")
            for block in blocks {
                let file = try #require(block.file, "a swift block without a snippet comment:\n\(block.code)")
                #expect(
                    (file.hasPrefix("examples/WordsPackage/") && file.hasSuffix(".swift"))
                        || file == "examples/CustomWorker/main.swift",
                    "\(file) is not compiled by a test")
                let text = try String(contentsOfFile: Binaries.repositoryRoot + "/" + file, encoding: .utf8)
                #expect(text.contains(block.code), "a snippet is not in \(file):\n\(block.code)")
            }
        }

        /// The template builds against this repository as the guide says, its kind test passes,
        /// and its worker and client run a group with typed kinds on a real cluster; the
        /// worker drains on SIGTERM and stops at once on a second; the strict client refuses
        /// a group no connected worker can run.
        @Test func wordsPackageRunsOnACluster() throws {
            let package = try Self.buildWordsPackage()
            let test = try Self.run(
                ["swift", "test", "--skip-build", "--scratch-path", Self.scratchPath], in: package,
                timeout: .seconds(300))
            #expect(test.status == 0, "\(test)")

            let cluster = try Cluster()
            defer { cluster.stop() }
            let binaries = Self.scratchPath + "/debug"
            let worker = try Self.startWordsWorker(binaries, cluster)
            defer { worker.stop() }

            let client = try Self.run([binaries + "/words-client", cluster.endpoint], timeout: .seconds(90))
            #expect(client.status == 0, "\(client)")
            #expect(client.stdout.contains("first line: 4 words; total: 9 words"), "\(client.stdout)")
            // Events print in words, not as wire models.
            // Children that finished before the watch began are in the snapshot's count, not in
            // events of their own: some child's event shows unless every one had finished.
            #expect(
                client.stdout.contains(": succeeded on words (attempt 1)")
                    || client.stdout.contains("4 of 4 children finished"), "\(client.stdout)")
            #expect(client.stdout.contains("finished: succeeded"), "\(client.stdout)")
            #expect(client.stdout.hasPrefix("snapshot: words ("), "\(client.stdout)")
            for dump in ["CohortWire", "WireTimestamp(", "nanosecondsSinceEpoch", "ChildStatus("] {
                #expect(!client.stdout.contains(dump), "\(client.stdout)")
            }

            // The first SIGTERM drains: the running child finishes on this worker, then it exits 0.
            let short = try cluster.submit(
                "name: short\nchildren:\n  - { name: nap, run: sleep, with: { seconds: 2 } }\n", name: "short.yaml")
            try cluster.waitForStatus(short) { $0.child("nap")?.state == "running" }
            kill(worker.pid, SIGTERM)
            try Self.waitForWorker(cluster, state: "draining")
            #expect(try worker.wait(timeout: .seconds(30)) == 0, "\(worker.stderr)")
            let drained = try cluster.status(short)
            #expect(drained.child("nap")?.state == "succeeded", "\(drained)")
            #expect(drained.child("nap")?["worker"] as? String == "words")

            // A second SIGTERM stops at once: the long child is handed back, not waited for.
            let second = try Self.startWordsWorker(binaries, cluster)
            defer { second.stop() }
            let long = try cluster.submit(
                "name: long\nchildren:\n  - { name: nap, run: sleep, with: { seconds: 120 } }\n", name: "long.yaml")
            try cluster.waitForStatus(long) { $0.child("nap")?.state == "running" }
            kill(second.pid, SIGTERM)
            try Self.waitForWorker(cluster, state: "draining")
            let signalled = ContinuousClock.now
            kill(second.pid, SIGTERM)
            #expect(try second.wait(timeout: .seconds(30)) == 0, "\(second.stderr)")
            #expect(ContinuousClock.now - signalled < .seconds(20))
            let handedBack = try cluster.waitForStatus(long) { $0.child("nap")?.state != "running" }
            #expect(["ready", "pending", "waiting"].contains(handedBack.child("nap")?.state ?? ""), "\(handedBack)")
            _ = try cluster.cli(["cancel", long])

            // No worker offers wordcount now: the strict client refuses, and submits nothing.
            let refused = try Self.run([binaries + "/words-client", cluster.endpoint], timeout: .seconds(60))
            #expect(refused.status == 69, "\(refused)")
            #expect(refused.stderr.contains("no connected worker offers kind \"wordcount\""), "\(refused)")
            let groups = try JSON.array(try cluster.cli(["status", "--json"]).stdout)
            #expect(groups.filter { $0["name"] as? String == "words" }.count == 1, "\(groups)")
        }

        /// `cohort submit --strict` refuses a spec whose kind no connected worker offers (exit
        /// 69, nothing submitted) and submits one whose kinds are offered; without --strict the
        /// first is accepted with a warning.
        @Test func strictSubmitRefusesAKindNoWorkerOffers() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "plain", labels: ["linux"])
            // `cohort workers` says which kinds a worker offers.
            let workers = try JSON.array(try cluster.cli(["workers", "--json"]).stdout)
            let kinds = workers.first { $0["name"] as? String == "plain" }?["kinds"] as? [String] ?? []
            #expect(kinds.contains("echo") && kinds.contains("shell") && !kinds.contains("wordcont"), "\(workers)")
            let typo = try Scratch.write(
                "name: typo\nchildren:\n  - { name: count, run: wordcont, with: { text: a } }\n", name: "typo.yaml")
            let refused = try cluster.cli(["submit", typo, "--strict"])
            #expect(refused.status == 69, "\(refused)")
            #expect(refused.stderr.contains("no connected worker offers kind \"wordcont\""), "\(refused)")
            let labelled = try Scratch.write(
                "name: gpu\nchildren:\n  - { name: say, run: echo, requires: [gpu], with: { value: 1 } }\n",
                name: "gpu.yaml")
            let noLabel = try cluster.cli(["submit", labelled, "--strict"])
            #expect(noLabel.status == 69, "\(noLabel)")
            #expect(noLabel.stderr.contains("with labels gpu"), "\(noLabel)")

            let fine = try Scratch.write(
                "name: fine\nchildren:\n  - { name: say, run: echo, requires: [linux], with: { value: 1 } }\n",
                name: "fine.yaml")
            let accepted = try cluster.cli(["submit", fine, "--strict", "--wait"])
            #expect(accepted.status == 0, "\(accepted)")

            var names = try JSON.array(try cluster.cli(["status", "--json"]).stdout).compactMap {
                $0["name"] as? String
            }
            #expect(!names.contains("typo") && !names.contains("gpu") && names.contains("fine"), "\(names)")
            let lenient = try cluster.cli(["submit", typo])
            #expect(lenient.status == 0, "\(lenient)")
            #expect(lenient.stderr.contains("warning: no connected worker offers kind \"wordcont\""), "\(lenient)")
            names = try JSON.array(try cluster.cli(["status", "--json"]).stdout).compactMap { $0["name"] as? String }
            #expect(names.contains("typo"))
        }

        // MARK: - Support

        /// The package's build folder: kept between runs (under the repository's `.build`), so
        /// only the first run builds Cohort's dependencies.
        static var scratchPath: String { Binaries.repositoryRoot + "/.build/words-package" }

        /// Copies examples/WordsPackage beside a `cohort` link to this repository, as the guide
        /// lays it out, builds it with its tests, and returns its folder.
        static func buildWordsPackage() throws -> String {
            let base = Scratch.directory + "/package-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: base + "/cohort", withDestinationPath: Binaries.repositoryRoot)
            let package = base + "/words"
            try FileManager.default.copyItem(
                atPath: Binaries.repositoryRoot + "/examples/WordsPackage", toPath: package)
            let build = try run(
                ["swift", "build", "--build-tests", "--scratch-path", scratchPath], in: package,
                timeout: .seconds(1500))
            guard build.status == 0 else { throw TestFailure("the package does not build: \(build)") }
            return package
        }

        static func startWordsWorker(_ binaries: String, _ cluster: Cluster) throws -> Subprocess {
            let worker = try Subprocess(binaries + "/words-worker", [cluster.endpoint], name: "words-worker")
            do {
                _ = try worker.waitForLine(timeout: .seconds(20)) {
                    $0.hasPrefix("cohort worker words ready") ? true : nil
                }
            } catch {
                worker.stop()
                throw error
            }
            return worker
        }

        /// Waits until `cohort workers` shows the worker `words` in `state`.
        static func waitForWorker(_ cluster: Cluster, state: String) throws {
            let deadline = ContinuousClock.now + .seconds(15)
            var last: [[String: Any]] = []
            while ContinuousClock.now < deadline {
                last = try JSON.array(try cluster.cli(["workers", "--json"]).stdout)
                if last.contains(where: { $0["name"] as? String == "words" && $0["state"] as? String == state }) {
                    return
                }
                usleep(50_000)
            }
            throw TestFailure("the worker words did not become \(state); last: \(last)")
        }

        /// Runs a command (through `env`, found on the PATH) in `directory` to its end.
        static func run(_ arguments: [String], in directory: String? = nil, timeout: Duration) throws
            -> CommandResult
        {
            let start = ContinuousClock.now
            var command = arguments
            if let directory { command = ["sh", "-c", "cd \"$0\" && exec \"$@\"", directory] + arguments }
            // The project's warnings-as-errors switch is for its own CI build, not a dependent's.
            let process = try Subprocess(
                "/usr/bin/env", command, name: (arguments.first.map { ($0 as NSString).lastPathComponent } ?? "run"),
                environment: ["WARNINGS_AS_ERRORS": "0"])
            defer { process.stop() }
            let status = try process.wait(timeout: timeout)
            return CommandResult(
                status: status, stdout: process.stdout, stderr: process.stderr, elapsed: ContinuousClock.now - start)
        }

        /// The `swift` blocks of a Markdown text, each with the file its snippet comment names.
        static func snippets(in markdown: String) -> [(file: String?, code: String)] {
            var result: [(file: String?, code: String)] = []
            var file: String?
            var code: [Substring]?
            for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
                if var lines = code {
                    if line == "```" {
                        result.append((file, lines.joined(separator: "\n")))
                        code = nil
                        file = nil
                    } else {
                        lines.append(line)
                        code = lines
                    }
                } else if line.hasPrefix("<!-- snippet: "), line.hasSuffix(" -->") {
                    file = String(line.dropFirst("<!-- snippet: ".count).dropLast(" -->".count))
                } else if line == "```swift" {
                    code = []
                } else if !line.isEmpty {
                    file = nil
                }
            }
            return result
        }
    }
}
