import CohortClient
import CohortSpec
import Foundation
import Testing

/// Issue 14's conditions (`if:`, `require:`) and `repeat:` with real processes: the examples
/// on the built-in kinds, `status` text and `--json`, `--watch`, and a coordinator restart that
/// keeps a skipped outcome.
extension EndToEnd {
    @Suite struct ConditionsEndToEndTests {
        static func example(_ name: String) throws -> String {
            try String(contentsOfFile: "\(Binaries.repositoryRoot)/examples/\(name)", encoding: .utf8)
        }

        /// examples/conditions.yaml: `deploy` fails, the cleanup its `if:` asks for runs, the
        /// dependent without an `if:` is cancelled, a false `if:` skips a child and its dependent.
        @Test func theConditionsExampleRunsTheCleanupAndSkipsWhatItsIfRefuses() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let (status, final) = try cluster.submitAndWait(
                try Self.example("conditions.yaml"), name: "conditions.yaml")
            #expect(status == 1, "\(final)")
            #expect(final.state == "failed")
            let states = Dictionary(
                uniqueKeysWithValues: final.children.compactMap { child in
                    (child["path"] as? String).map { ($0, child["state"] as? String ?? "?") }
                })
            #expect(
                states == [
                    "check": "succeeded", "gate": "succeeded", "deploy": "failed", "smoke": "cancelled",
                    "rollback": "succeeded", "announce": "skipped", "post": "skipped",
                ], "\(final)")
            #expect(final.child("announce")?["attempt"] as? Int == 0)
            #expect(
                (final.child("announce")?["error"] as? String)?.hasPrefix("if \"succeeded(deploy) && ") == true,
                "\(final)")
            #expect(final.child("post")?["error"] as? String == "dependency \"announce\" was skipped")

            let id = try #require(final["id"] as? String)
            let text = try cluster.cli(["status", id])
            #expect(text.stdout.contains("7/7 finished, 1 failed, 1 cancelled, 2 skipped"), "\(text.stdout)")
            let announce = text.stdout.split(separator: "\n").first { $0.hasPrefix("announce") } ?? ""
            #expect(announce.contains("skipped"), "\(text.stdout)")
        }

        /// A false `require:` fails the child with the expression; `--watch` shows `skipped` (a first
        /// child sleeps so that the watch begins before the rest happens).
        @Test func aFalseRequireFailsTheChildAndWatchShowsSkipped() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let file = try Scratch.write(
                """
                name: gated
                children:
                  - { name: first, run: sleep, with: { seconds: 1 } }
                  - { name: check, run: echo, with: { ok: false }, after: [first] }
                  - { name: deploy, run: echo, require: "outputs.check.ok == true" }
                  - { name: notify, run: echo, if: "succeeded(deploy)" }

                """, name: "gated.yaml")
            let result = try cluster.cli(["submit", file, "--watch"])
            #expect(result.status == 1, "\(result)")
            #expect(
                result.stdout.contains("deploy: failed: require \"outputs.check.ok == true\" was false"),
                "\(result.stdout)")
            #expect(result.stdout.contains("notify: skipped: if \"succeeded(deploy)\" was false"), "\(result.stdout)")
            #expect(result.stdout.contains("1 skipped]"), "\(result.stdout)")
        }

        /// examples/repeat.yaml: the poll runs three times (attempts 1, 2, 3), the first two
        /// listed as `repeated`, and its output is the last run's.
        @Test func theRepeatExamplePollsUntilHealthy() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let (status, final) = try cluster.submitAndWait(try Self.example("repeat.yaml"), name: "repeat.yaml")
            #expect(status == 0, "\(final)")
            let poll = try #require(final.child("wait-healthy"))
            #expect(poll["state"] as? String == "succeeded")
            #expect(poll["attempt"] as? Int == 3)
            let earlier = poll["earlierAttempts"] as? [[String: Any]] ?? []
            #expect(earlier.map { $0["outcome"] as? String } == ["repeated", "repeated"], "\(poll)")
            #expect(earlier.map { $0["attempt"] as? Int } == [1, 2], "\(poll)")
            let id = try #require(final["id"] as? String)
            let result = try cluster.cli(["result", id, "announce", "--json"])
            #expect(try JSON.object(result.stdout)["status"] as? String == "healthy\n", "\(result)")
        }

        /// A repeat whose `until` stays false fails after `max` runs, naming `until` and `max`.
        @Test func aRepeatFailsAfterMaxRuns() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let (status, final) = try cluster.submitAndWait(
                """
                name: never
                children:
                  - { name: poll, run: echo, with: { ready: false }, repeat: { until: "output.ready", max: 3, every: 100ms } }

                """)
            #expect(status == 1, "\(final)")
            let poll = try #require(final.child("poll"))
            #expect(poll["attempt"] as? Int == 3)
            #expect(
                poll["error"] as? String == "repeat: until \"output.ready\" was still false after 3 runs (max 3)",
                "\(poll)")
        }

        /// A coordinator killed (SIGKILL) and restarted keeps a skipped outcome from its journal:
        /// the skipped child never runs, and the group finishes succeeded.
        @Test func aRestartedCoordinatorKeepsASkippedOutcome() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let marker = Scratch.file("skipped-ran")
            let group = try cluster.submit(
                """
                name: restart
                children:
                  - { name: build, run: echo }
                  - name: cleanup
                    run: shell
                    if: "failed(build)"
                    with: { command: ["sh", "-c", "touch \(marker)"] }
                  - { name: slow, run: sleep, with: { seconds: 2 } }
                  - { name: after-cleanup, run: echo, after: [cleanup, slow] }

                """)
            try cluster.waitForStatus(group) { $0.child("cleanup")?.state == "skipped" }
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let restored = try cluster.status(group)
            #expect(restored.child("cleanup")?.state == "skipped", "\(restored)")
            #expect(restored.child("cleanup")?["error"] as? String == "if \"failed(build)\" was false")
            let final = try cluster.waitForStatus(group) { ($0.state ?? "") == "succeeded" }
            #expect(final.child("after-cleanup")?.state == "skipped", "\(final)")
            #expect(!FileManager.default.fileExists(atPath: marker))
        }

        /// The Swift API: `condition:`, `requirement:` and `repeating:` on `ChildSpec`, and
        /// `.skipped` in the client's status.
        @Test func theSwiftAPISubmitsConditionsAndRepeats() async throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) { client in
                let spec = GroupSpec(
                    "swift-conditions",
                    children: [
                        ChildSpec("check", run: "echo", with: ["ok": true, "count": 3]),
                        ChildSpec("cleanup", run: "echo", condition: "failed(check)"),
                        ChildSpec("deploy", run: "echo", requirement: "outputs.check.ok == true"),
                        ChildSpec(
                            "poll", run: "echo", with: ["ready": false], after: ["deploy"],
                            repeating: RepeatPolicy(until: "output.ready", max: 2, every: .milliseconds(50))),
                    ])
                try spec.validate()
                let receipt = try await client.submit(spec)
                let final = try await client.wait(receipt.id)
                #expect(final.state == .failed)
                let states = Dictionary(uniqueKeysWithValues: final.children.map { ($0.path, $0.state) })
                #expect(
                    states == ["check": .succeeded, "cleanup": .skipped, "deploy": .succeeded, "poll": .failed],
                    "\(final.children)")
                #expect(final.children.first { $0.path == "poll" }?.attempt == 2)
                #expect(
                    try await client.result(receipt.id, child: "cleanup")
                        == .cancelled("if \"failed(check)\" was false"))
            }
        }
    }
}
