import CohortPeerSupport
import CohortSpec
import CohortTestSupport
import CohortWire
import Foundation
import Testing

@testable import CohortWorker

@Suite(.timeLimit(.minutes(1)))
struct ShellTests {
    /// A `shell` input running `script` with `sh -c`.
    static func shell(_ script: String, extra: [String: JSONValue] = [:]) -> String {
        var input: [String: JSONValue] = ["command": ["sh", "-c", .string(script)]]
        input.merge(extra) { _, new in new }
        return JSONValue.object(input).jsonString()
    }

    @Test func outputHasExitCodeStdoutAndStderr() async throws {
        try await WorkerHarness.run { harness async throws in
            harness.dispatch("shell", Self.shell("echo out; echo err >&2"), id: 1)
            #expect(try await harness.output(1) == ["exitCode": 0, "stdout": "out\n", "stderr": "err\n"])
        }
    }

    @Test func environmentHasEveryCohortVariable() async throws {
        try await WorkerHarness.run { harness async throws in
            let input = Self.shell("env | grep -E '^(COHORT_|GREETING=)' | sort", extra: ["env": ["GREETING": "hello"]])
            harness.dispatch(
                "shell", input, id: 4, path: "tests/unit", attempt: 3, fencingTokens: ["db-main.eu": 17, "repo": 4],
                attemptToken: "00112233445566778899aabbccddeeff")
            let output = try await harness.output(4)
            let lines = Set((output["stdout"]?.stringValue ?? "").split(separator: "\n").map(String.init))
            #expect(
                lines == [
                    "COHORT_ATTEMPT=3", "COHORT_CHILD=tests/unit", "COHORT_FENCE_DB_MAIN_EU=17", "COHORT_FENCE_REPO=4",
                    "COHORT_GROUP=g-1", "COHORT_WORKER=test-worker", "GREETING=hello",
                    "COHORT_COORDINATOR=\(harness.coordinator.endpoint)",
                    "COHORT_ATTEMPT_TOKEN=00112233445566778899aabbccddeeff",
                ])
        }
    }

    @Test func workerEnvironmentAndPathAreInherited() async throws {
        try await WorkerHarness.run { harness async throws in
            harness.dispatch("shell", #"{"command":["printenv","PATH"]}"#, id: 1)
            let path = try await harness.output(1)["stdout"]?.stringValue
            #expect(path == (ProcessInfo.processInfo.environment["PATH"] ?? "") + "\n")
        }
    }

    @Test func nonZeroExitFailsNamingTheCodeAndStderrTail() async throws {
        try await WorkerHarness.run { harness async throws in
            harness.dispatch("shell", Self.shell("echo first >&2; echo 'disk full' >&2; exit 3"), id: 1)
            let result = try await harness.coordinator.result(1)
            #expect(result.outcome == .failed(error: "exited with code 3: first\ndisk full"))
        }
    }

    @Test func stdinAndWorkingDirectoryAreUsed() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-cwd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await WorkerHarness.run { harness async throws in
            let input = Self.shell("pwd; tr a-z A-Z", extra: ["stdin": "from stdin", "cwd": .string(directory.path)])
            harness.dispatch("shell", input, id: 1)
            let resolved = directory.resolvingSymlinksInPath().path
            #expect(try await harness.output(1)["stdout"] == .string("\(resolved)\nFROM STDIN"))
        }
    }

    @Test func aChildThatIgnoresStdinDoesNotHurtTheWorker() async throws {
        try await WorkerHarness.run { harness async throws in
            let big = String(repeating: "x", count: 1 << 20)
            harness.dispatch("shell", Self.shell("exit 0", extra: ["stdin": .string(big)]), id: 1)
            #expect(try await harness.output(1)["exitCode"] == 0)
        }
    }

    /// Never silently: the kept last bytes follow a marker line, and the output is flagged.
    @Test func capturedOutputKeepsTheLastBytesAfterAMarker() async throws {
        try await WorkerHarness.run(configure: { $0.maxCapturedOutput = 1000 }) { harness async throws in
            harness.dispatch("shell", Self.shell("seq 1 10000"), id: 1)
            let output = try await harness.output(1)
            let stdout = output["stdout"]?.stringValue ?? ""
            let total = (1...10000).map { "\($0)\n" }.joined().utf8.count
            let marker = "[cohort: \(total - 1000) earlier bytes dropped: the output was over maxCapturedOutput]\n"
            #expect(stdout.hasPrefix(marker))
            #expect(stdout.utf8.count == marker.utf8.count + 1000)
            #expect(stdout.hasSuffix("9999\n10000\n"))
            #expect(output["stdoutTruncated"] == true)
            #expect(output["stderrTruncated"] == nil)
        }
    }

    @Test func badInputFailsNamingTheField() async throws {
        try await WorkerHarness.run { harness async throws in
            harness.dispatch("shell", #"{"command":"echo hi"}"#, id: 1)
            harness.dispatch("shell", #"{"command":["sh", 3]}"#, id: 2)
            harness.dispatch("shell", #"{"command":["true"],"env":{"COHORT_GROUP":"x"}}"#, id: 3)
            harness.dispatch("shell", #"{"env":{}}"#, id: 4)
            harness.dispatch("shell", #"{"command":["no-such-program-here"]}"#, id: 5)
            #expect(
                try await harness.coordinator.result(1).outcome
                    == .failed(error: "with.command: expected a list of strings, got string"))
            #expect(
                try await harness.coordinator.result(2).outcome
                    == .failed(error: "with.command[1]: expected a string, got number"))
            #expect(
                try await harness.coordinator.result(3).outcome
                    == .failed(error: "with.env.COHORT_GROUP: COHORT_ variables are set by the worker"))
            guard case .failed(let missing) = try await harness.coordinator.result(4).outcome else {
                Issue.record("a shell without command ran")
                return
            }
            #expect(missing.hasPrefix("with.command: missing"))
            #expect(
                try await harness.coordinator.result(5).outcome
                    == .failed(error: "cannot run no-such-program-here: not found on PATH"))
        }
    }

    /// Runs a script that records its own pid and its background child's pid, cancels it,
    /// and checks that both are gone within `limit` and the attempt finished cancelled.
    @discardableResult
    private func cancelKillsProcessGroup(script: String, killGrace: Duration, limit: Duration) async throws -> Duration
    {
        let took = Locked(Duration.zero)
        let pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-pids-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: pidFile) }
        var pids: [Int32] = []
        defer { for pid in pids where processExists(pid) { kill(pid, SIGKILL) } }
        try await WorkerHarness.run(killGrace: killGrace) { harness async throws in
            let task = harness.dispatch("shell", Self.shell(script, extra: ["env": ["PIDS": .string(pidFile)]]), id: 1)
            #expect(
                await eventually(.seconds(10)) {
                    ((try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? "").split(separator: "\n").count == 2
                })
            pids = try String(contentsOfFile: pidFile, encoding: .utf8).split(separator: "\n").compactMap { Int32($0) }
            #expect(pids.count == 2)
            #expect(pids.allSatisfy(processExists))
            let cancelled = ContinuousClock.now
            harness.coordinator.send(.cancel([AttemptCancellation(ref: task, reason: "cancelled by client")]))
            let result = try await harness.coordinator.result(1, timeout: limit + .seconds(5))
            took.value = ContinuousClock.now - cancelled
            #expect(result.outcome == .cancelled(reason: "cancelled by client"))
            // The result is sent only once the whole group is gone.
            #expect(pids.allSatisfy { !processExists($0) }, "still running: \(pids.filter(processExists))")
            #expect(took.value < limit, "took \(took.value)")
        }
        return took.value
    }

    @Test func cancelTerminatesTheWholeProcessGroup() async throws {
        try await cancelKillsProcessGroup(
            script: #"echo $$ > "$PIDS"; sleep 60 & echo $! >> "$PIDS"; wait"#, killGrace: .seconds(5),
            limit: .seconds(2))
    }

    @Test func cancelKillsAGroupThatIgnoresSIGTERMAfterTheGrace() async throws {
        let took = try await cancelKillsProcessGroup(
            script: #"trap '' TERM; echo $$ > "$PIDS"; sh -c 'trap "" TERM; sleep 60' & echo $! >> "$PIDS"; wait"#,
            killGrace: .milliseconds(500), limit: .seconds(5))
        // SIGTERM did nothing; SIGKILL came after the grace, and the attempt waited for it.
        #expect(took >= .milliseconds(500))
    }
}
