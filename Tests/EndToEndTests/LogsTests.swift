import Foundation
import Testing

extension EndToEnd {
    /// `cohort logs`: what children write, shipped live from their workers and kept by the
    /// coordinator (docs/operations.md, "Logs"), with real processes.
    @Suite struct Logs {
        static func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: () throws -> Bool) throws {
            try EndToEnd.Failures.waitUntil(what, timeout: timeout, condition)
        }

        /// A shell child whose script is `script`, with `extra` spec lines.
        static func spec(_ name: String, _ script: String, extra: String = "") -> String {
            let command = script.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                of: "\"", with: "\\\"")
            return """
                name: \(name)
                children:
                  - name: c
                    run: shell
                    with: { command: ["sh", "-c", "\(command)"] }
                \(extra.isEmpty ? "" : "    " + extra + "\n")
                """
        }

        /// `-f` prints a line while the child still runs (it cannot finish before the test has
        /// seen its first line), then the rest in order, stdout and stderr interleaved, and
        /// exits 1 for a failed child; `--stderr` and `--json` say which stream each line is.
        @Test func aFollowerSeesLinesWhileTheChildRunsAndExitsWithItsOutcome() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 2)
            let flag = Scratch.file("go")
            let group = try cluster.submit(
                Self.spec(
                    "live",
                    "echo started; while [ ! -e \(flag) ]; do sleep 0.05; done; echo after-flag; echo oops >&2; exit 3")
            )
            let follower = try Subprocess(
                Binaries.cohort, ["logs", group, "c", "-f", "--coordinator", cluster.endpoint], name: "follower")
            defer { follower.stop() }
            _ = try follower.waitForLine(timeout: .seconds(20)) { $0 == "started" ? true : nil }
            #expect(!FileManager.default.fileExists(atPath: flag), "the child still runs")
            _ = FileManager.default.createFile(atPath: flag, contents: Data())
            #expect(try follower.wait(timeout: .seconds(20)) == 1, "\(follower.stdout)\n\(follower.stderr)")
            #expect(follower.stdout == "started\nafter-flag\noops\n", "\(follower.stdout)")
            #expect(follower.stderr.contains("failed: exited with code 3"), "\(follower.stderr)")

            let errors = try cluster.cli(["logs", group, "c", "--stderr"])
            #expect(errors.status == 0 && errors.stdout == "oops\n", "\(errors)")
            let json = try cluster.cli(["logs", group, "c", "--json"])
            let lines = try json.stdout.split(separator: "\n").map { try JSON.object(String($0)) }
            #expect(lines.map { $0["stream"] as? String } == ["stdout", "stdout", "stderr"])
            #expect(lines.map { $0["sequence"] as? Int } == [1, 2, 3])
            #expect(lines.allSatisfy { $0["worker"] as? String == "w1" && $0["attempt"] as? Int == 1 })
            let tail = try cluster.cli(["logs", group, "c", "--tail", "1", "--timestamps"])
            #expect(tail.stdout.hasSuffix(" oops\n") && tail.stdout.hasPrefix("20"), "\(tail)")
        }

        /// `submit --watch --logs N` into a pipe: each line a running child writes, as
        /// `PATH | text`, while it runs, and its last line after it finished; with `--json`, an
        /// object with `"event": "log"`. `--logs` without `--watch` is a usage error.
        @Test func submitWatchShowsTheRunningChildrensLines() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 2)
            let flag = Scratch.file("go")
            let spec = try Scratch.write(
                Self.spec("watched", "echo hello-1; while [ ! -e \(flag) ]; do sleep 0.05; done; echo hello-2"),
                name: "watched.yaml")
            let watcher = try Subprocess(
                Binaries.cohort, ["submit", spec, "--watch", "--logs", "2", "--coordinator", cluster.endpoint],
                name: "watcher")
            defer { watcher.stop() }
            _ = try watcher.waitForLine(timeout: .seconds(20)) { $0 == "c | hello-1" ? true : nil }
            #expect(!FileManager.default.fileExists(atPath: flag), "shown while the child runs")
            _ = FileManager.default.createFile(atPath: flag, contents: Data())
            #expect(try watcher.wait(timeout: .seconds(30)) == 0, "\(watcher.stdout)\n\(watcher.stderr)")
            let lines = watcher.stdout.split(separator: "\n").map(String.init)
            #expect(lines.filter { $0.hasPrefix("c | ") } == ["c | hello-1", "c | hello-2"], "\(watcher.stdout)")

            // The flag is there: this one runs through; its last line is read after it finished.
            let json = try cluster.cli(["submit", spec, "--id", "watched-json", "--watch", "--logs", "1", "--json"])
            #expect(json.status == 0, "\(json)")
            let logged = try json.stdout.split(separator: "\n").map { try JSON.object(String($0)) }.filter {
                $0["event"] as? String == "log"
            }
            #expect(logged.last?["path"] as? String == "c" && logged.last?["text"] as? String == "hello-2", "\(json)")
            #expect(logged.allSatisfy { $0["stream"] as? String == "stdout" && $0["attempt"] as? Int == 1 })

            let usage = try cluster.cli(["submit", spec, "--logs", "2"])
            #expect(usage.status == 64 && usage.stderr.contains("give --watch too"), "\(usage)")
        }

        /// `submit --watch --logs N` on a terminal (a pseudo-terminal made by `script`): a
        /// running child's last lines are drawn under its row.
        @Test func submitWatchOnATerminalDrawsTheLastLinesUnderTheChild() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 2)
            let flag = Scratch.file("go")
            let spec = try Scratch.write(
                Self.spec("drawn", "echo drawn-1; echo drawn-2; while [ ! -e \(flag) ]; do sleep 0.05; done"),
                name: "drawn.yaml")
            let command = [
                Binaries.cohort, "submit", spec, "--watch", "--logs", "1", "--coordinator", cluster.endpoint,
            ]
            .map { "'\($0)'" }.joined(separator: " ")
            let terminal = try Subprocess("/usr/bin/script", ["-qfec", command, "/dev/null"], name: "terminal")
            defer { terminal.stop() }
            try Self.waitUntil("the last line drawn under the child") { terminal.stdout.contains("│ drawn-2") }
            _ = FileManager.default.createFile(atPath: flag, contents: Data())
            #expect(try terminal.wait(timeout: .seconds(30)) == 0, "\(terminal.stdout)")
        }

        /// A follower waits for a child that has not started, follows a retry's next attempt,
        /// and exits 0 when the child succeeds; each attempt keeps its own log.
        @Test func aFollowerWaitsForTheChildAndFollowsItsRetry() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let group = try cluster.submit(
                Self.spec("retried", "echo attempt $COHORT_ATTEMPT; [ $COHORT_ATTEMPT -ge 2 ]", extra: "retry: 2"))
            let follower = try Subprocess(
                Binaries.cohort, ["logs", group, "c", "-f", "--coordinator", cluster.endpoint], name: "follower")
            defer { follower.stop() }
            try Self.waitUntil("the follower to say it waits") { follower.stderr.contains("waiting for \(group)/c") }
            try cluster.addWorker(name: "w1", slots: 1)
            #expect(try follower.wait(timeout: .seconds(30)) == 0, "\(follower.stdout)\n\(follower.stderr)")
            #expect(follower.stdout == "attempt 1\nattempt 2\n", "\(follower.stdout)")
            #expect(follower.stderr.contains("following attempt 2"), "\(follower.stderr)")
            #expect(try cluster.cli(["logs", group, "c", "--attempt", "1"]).stdout == "attempt 1\n")
            #expect(try cluster.cli(["logs", group, "c"]).stdout == "attempt 2\n")
            let missing = try cluster.cli(["logs", group, "c", "--attempt", "3"])
            #expect(missing.status == 64 && missing.stderr.contains("has had 2 attempts"), "\(missing)")
            let unknown = try cluster.cli(["logs", group, "nope"])
            #expect(unknown.status == 64 && unknown.stderr.contains("no child \"nope\""), "\(unknown)")
        }

        /// The coordinator is killed (SIGKILL) and restarted while a follower reads a child
        /// that writes 80 numbered lines: the follower carries on, and prints every line once,
        /// in order; so does a read afterwards.
        @Test func aFollowerRidesOutACoordinatorRestartWithoutLosingOrDoublingALine() throws {
            let cluster = try Cluster(heartbeat: "200ms", liveness: 5)
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 1)
            let group = try cluster.submit(
                Self.spec("numbers", "i=1; while [ $i -le 80 ]; do echo line $i; i=$((i+1)); sleep 0.05; done"))
            let follower = try Subprocess(
                Binaries.cohort, ["logs", group, "c", "-f", "--coordinator", cluster.endpoint], name: "follower")
            defer { follower.stop() }
            _ = try follower.waitForLine(timeout: .seconds(20)) { $0 == "line 10" ? true : nil }
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            #expect(try follower.wait(timeout: .seconds(60)) == 0, "\(follower.stdout)\n\(follower.stderr)")
            let expected = (1...80).map { "line \($0)\n" }.joined()
            #expect(follower.stdout == expected, "\(follower.stdout)")
            #expect(try cluster.cli(["logs", group, "c"]).stdout == expected)
        }

        /// A worker killed (SIGKILL) mid-log: what it had shipped stays, as attempt 1's log;
        /// the attempt that runs the child again on another worker has its own.
        @Test func aKilledWorkersShippedLinesStayAndTheRerunHasItsOwnLog() throws {
            let cluster = try Cluster(heartbeat: "200ms", liveness: 3)
            defer { cluster.stop() }
            let doomed = try cluster.addWorker(name: "doomed", slots: 1)
            let flag = Scratch.file("release")
            let group = try cluster.submit(
                Self.spec(
                    "rerun-after-loss",
                    "echo run $COHORT_ATTEMPT on $COHORT_WORKER; if [ $COHORT_ATTEMPT = 1 ]; then "
                        + "while [ ! -e \(flag) ]; do sleep 0.05; done; fi; echo done $COHORT_ATTEMPT"))
            try Self.waitUntil("attempt 1's first line to be stored") {
                try cluster.cli(["logs", group, "c"]).stdout.contains("run 1 on doomed")
            }
            kill(doomed.pid, SIGKILL)
            _ = try doomed.wait(timeout: .seconds(10))
            // Lets the orphaned first run end.
            _ = FileManager.default.createFile(atPath: flag, contents: Data())
            try cluster.addWorker(name: "survivor", slots: 1)
            let status = try cluster.waitForStatus(group, timeout: .seconds(40)) { $0.state == "succeeded" }
            #expect(status.child("c")?["attempt"] as? Int == 2, "\(status)")
            #expect(try cluster.cli(["logs", group, "c", "--attempt", "1"]).stdout == "run 1 on doomed\n")
            #expect(try cluster.cli(["logs", group, "c"]).stdout == "run 2 on survivor\ndone 2\n")
        }

        /// Over `maxLogBytes` a log keeps its head and its newest lines with a marker between;
        /// pruning the group removes its log.
        @Test func aLogOverItsBoundKeepsHeadAndTailAndGoesWithItsGroup() throws {
            let config = try Scratch.write("maxLogBytes: 4096\n", name: "coordinator.yaml")
            let cluster = try Cluster(coordinatorArguments: ["--config", config])
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 1)
            let (status, final) = try cluster.submitAndWait(
                Self.spec("long", "i=1; while [ $i -le 3000 ]; do echo line $i; i=$((i+1)); done"), name: "long.yaml")
            #expect(status == 0)
            let group = try #require(final["id"] as? String)
            let read = try cluster.cli(["logs", group, "c"])
            let lines = read.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "line 1" && lines.last == "line 3000", "\(lines.prefix(3)) … \(lines.suffix(3))")
            let marker = try #require(lines.firstIndex { $0.hasPrefix("[cohort: ") }, "\(read.stdout.prefix(500))")
            #expect(lines[marker].contains("bytes cut from the middle of this log"))
            let kept = lines.filter { !$0.hasPrefix("[cohort: ") }
            #expect(kept.reduce(0) { $0 + $1.utf8.count } <= 4096)
            #expect(kept.prefix(marker) == ArraySlice((1...marker).map { "line \($0)" }), "the head is intact")

            let prune = try cohort(["prune", "--state-dir", cluster.stateDir, "--older-than", "0s"])
            #expect(prune.status == 0, "\(prune)")
            #expect(try cluster.cli(["logs", group, "c"]).stdout.isEmpty, "the pruned group's log is gone")
        }

        /// Any bytes are kept as written: a line of bytes that are not UTF-8 comes with
        /// `bytes` (base64) in `--json`; a 200 KB line without a newline comes in pieces of at
        /// most 64 KiB that join up to it.
        @Test func anyBytesAndLongLinesAreKeptAndShownSafely() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 1)
            let (status, final) = try cluster.submitAndWait(
                Self.spec("bytes", "printf 'a\\377b\\033[31mred\\n'; head -c 200000 /dev/zero | tr '\\0' x"),
                name: "bytes.yaml")
            #expect(status == 0)
            let group = try #require(final["id"] as? String)
            let json = try cluster.cli(["logs", group, "c", "--json"])
            let lines = try json.stdout.split(separator: "\n").map { try JSON.object(String($0)) }
            let first = try #require(lines.first)
            let bytes = try #require((first["bytes"] as? String).flatMap { Data(base64Encoded: $0) })
            #expect(Array(bytes) == Array("a".utf8) + [0xFF] + Array("b\u{1B}[31mred".utf8))
            let pieces = lines.dropFirst()
            #expect(pieces.allSatisfy { ($0["text"] as? String)?.utf8.count ?? .max <= 65536 })
            #expect(pieces.map { ($0["text"] as? String) ?? "" }.joined() == String(repeating: "x", count: 200_000))
            #expect(pieces.count >= 4 && pieces.allSatisfy { $0["partial"] as? Bool == true }, "no newline ended it")
        }

        /// A child writing 100 MB as fast as it can, on one worker, neither delays a no-op group
        /// on another nor costs its own worker its lease (it stays ready); its log ends with its
        /// last line and says what was cut.
        @Test func aHundredMegabyteWriterDelaysNobody() throws {
            let cluster = try Cluster(heartbeat: "200ms", liveness: 3)
            defer { cluster.stop() }
            try cluster.addWorker(name: "writer", labels: ["big"], slots: 1)
            try cluster.addWorker(name: "quick", labels: ["small"], slots: 4)
            let writer = try cluster.submit(
                Self.spec(
                    "writer",
                    "yes 0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789 | head -n 1000000; echo last-line",
                    extra: "requires: [big]"))
            try Self.waitUntil("the writer's log to grow") {
                try cluster.cli(["logs", writer, "c", "--tail", "1"]).stdout.hasPrefix("0123")
            }
            var elapsed: [Double] = []
            for round in 0..<3 {
                let spec =
                    "name: quick-\(round)\nchildren:\n"
                    + (0..<50).map { "  - { name: e\($0), run: echo, requires: [small] }\n" }.joined()
                let start = ContinuousClock.now
                let (status, _) = try cluster.submitAndWait(spec, name: "quick-\(round).yaml")
                let took = (ContinuousClock.now - start).components
                elapsed.append(Double(took.seconds) + Double(took.attoseconds) / 1e18)
                #expect(status == 0)
            }
            #expect(elapsed.max()! < 5, "no-op groups beside the writer took \(elapsed) s")
            let status = try cluster.waitForStatus(writer, timeout: .seconds(120)) { $0.state == "succeeded" }
            #expect(status.child("c")?["attempt"] as? Int == 1, "the writer's worker kept its lease: \(status)")
            let workers = try JSON.array(try cluster.cli(["workers", "--json"]).stdout)
            #expect(workers.first { $0["name"] as? String == "writer" }?["state"] as? String == "ready", "\(workers)")
            let tail = try cluster.cli(["logs", writer, "c", "--tail", "1"])
            #expect(tail.stdout == "last-line\n", "\(tail)")
            let json = try cluster.cli(["logs", writer, "c", "--tail", "1", "--json"])
            // Every line was numbered (a line the child left unended for 100 ms is sent in pieces).
            #expect(try JSON.object(json.stdout)["sequence"] as? Int ?? 0 >= 1_000_001, "\(json)")
        }
    }
}
