import Foundation
import Testing

extension EndToEnd {
    /// Attempt tokens, a child that cancels its group, and groups that grow while they run
    /// (docs/spec.md, "Growing groups" and "A child cancels its group"), with real processes.
    @Suite struct GrowingGroupsEndToEndTests {
        /// A shell child whose command is `script` (run by `sh -c`), with `cohort` on hand as
        /// `$COHORT`.
        static func shell(_ name: String, _ script: String, extra: String = "") -> String {
            let command = "COHORT='\(Binaries.cohort)'; " + script
            let quoted = command.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                of: "\"", with: "\\\"")
            return """
                  - name: \(name)
                    run: shell\(extra)
                    with: { command: ["sh", "-c", "\(quoted)"] }

                """
        }

        /// `cohort cancel "$COHORT_GROUP"` from a shell child nested in `deploy`: the group
        /// ends `cancelled` with a reason naming the child and its attempt, in status, in a
        /// watch's last event and after a coordinator restart (the journal); its sibling and
        /// the cancelling child itself are cancelled like the rest.
        @Test func aShellChildCancelsItsGroup() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let started = Scratch.file("sibling-started")
            let spec =
                "name: cancel-by-child\nchildren:\n"
                + Self.shell("slow", "touch \(started); exec sleep 60")
                + "  - name: deploy\n    group:\n      children:\n"
                + Self.shell(
                    "check",
                    "while [ ! -e \(started) ]; do sleep 0.05; done; "
                        + "$COHORT cancel \"$COHORT_GROUP\" --reason 'rollback needed'; exec sleep 60"
                ).split(separator: "\n").map { "    " + $0 }.joined(separator: "\n") + "\n"
            let group = "cancel-by-child-1"
            let file = try Scratch.write(spec, name: "cancel-by-child.yaml")
            let watch = try cluster.cli(["submit", file, "--id", group, "--watch", "--json"], timeout: .seconds(60))
            let expected = "cancelled by child deploy/check (attempt 1): rollback needed"
            #expect(watch.stdout.contains(expected), "\(watch)")
            let final = try cluster.waitForStatus(group) { $0.state == "cancelled" }
            #expect(final["reason"] as? String == expected, "\(final)")
            #expect(final.child("slow")?["state"] as? String == "cancelled", "\(final)")
            #expect(final.child("slow")?["error"] as? String == expected, "\(final)")
            #expect(final.child("deploy/check")?["state"] as? String == "cancelled", "\(final)")

            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let restored = try cluster.status(group)
            #expect(restored.state == "cancelled")
            #expect(restored["reason"] as? String == expected, "after a restart: \(restored)")
        }

        /// Tokens let through only what they are for: a forged token, a token whose attempt has
        /// ended and a token of another group are refused (exit 77) with words that say why;
        /// a valid one reads its own group and nothing else (no `workers`).
        @Test func aTokenIsRefusedWhenForgedEndedOrForAnotherGroup() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let running = Scratch.file("running-token")
            let ended = Scratch.file("ended-token")
            let spec =
                "name: tokens\nchildren:\n"
                + Self.shell("quick", "echo $COHORT_ATTEMPT_TOKEN > \(ended).tmp; mv \(ended).tmp \(ended)")
                + Self.shell(
                    "holder", "echo $COHORT_ATTEMPT_TOKEN > \(running).tmp; mv \(running).tmp \(running); exec sleep 60"
                )
            let group = try cluster.submit(spec, name: "tokens.yaml")
            let other = try cluster.submit(Self.sleeperSpec, name: "other.yaml")
            try Failures.waitUntil("both tokens written") {
                FileManager.default.fileExists(atPath: running) && FileManager.default.fileExists(atPath: ended)
            }
            func token(_ file: String) throws -> String {
                try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let live = try token(running)
            #expect(live.count >= 32, "at least 128 bits as hex: \(live)")
            _ = try cluster.waitForStatus(group) { $0.child("quick")?["state"] as? String == "succeeded" }

            let forged = try cluster.cli(["status", group, "--attempt-token", String(repeating: "ab", count: 16)])
            #expect(forged.status == 77, "\(forged)")
            #expect(forged.stderr.contains("permission denied") && forged.stderr.contains("unknown"), "\(forged)")

            let stale = try cluster.cli(["cancel", group, "--attempt-token", try token(ended)])
            #expect(stale.status == 77, "\(stale)")
            #expect(stale.stderr.contains("\(group)/quick (attempt 1) is no longer valid"), "\(stale)")

            let elsewhere = try cluster.cli(["cancel", other, "--attempt-token", live])
            #expect(elsewhere.status == 77, "\(elsewhere)")
            #expect(elsewhere.stderr.contains("valid only for group \(group)"), "\(elsewhere)")
            #expect(try cluster.status(other).state == "running", "the other group was not cancelled")

            let own = try cluster.cli(["status", group, "--json", "--attempt-token", live])
            #expect(own.status == 0, "\(own)")
            let workers = try cluster.cli(["workers", "--attempt-token", live])
            #expect(workers.status == 0, "without CURVE the token is not needed for what anyone may do: \(workers)")

            _ = try cluster.cli(["cancel", group])
            _ = try cluster.cli(["cancel", other])
        }

        static let sleeperSpec =
            "name: other\nchildren:\n  - { name: nap, run: shell, with: { command: [sleep, \"60\"] } }\n"

        /// Under CURVE: a child's `cohort` commands connect with an ephemeral key (the worker
        /// gives them the coordinator's key and the token), read the group and cancel it; the
        /// same key without the token may do nothing.
        @Test func underCurveAChildReadsAndCancelsItsGroupWithItsToken() throws {
            let keys = try Keys([("w1", "worker"), ("alice", "client")])
            let cluster = try Cluster(coordinatorArguments: keys.coordinator)
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 4, extra: keys.peer("w1"))
            let seen = Scratch.file("curve-status")
            let addedOut = Scratch.file("curve-added")
            let added = try Scratch.write(
                "- { name: grown, run: shell, with: { command: [sleep, \"60\"] } }\n", name: "grown.yaml")
            let refused = Scratch.file("curve-refused")
            let spec =
                "name: curve-child\nchildren:\n"
                + Self.shell("sibling", "exec sleep 60")
                + Self.shell(
                    "check",
                    "$COHORT status \"$COHORT_GROUP\" --json > \(seen); "
                        + "$COHORT workers 2> \(refused); echo \"exit $?\" >> \(refused); "
                        + "$COHORT add \"$COHORT_GROUP\" \(added) > \(addedOut) 2>&1; "
                        + "$COHORT cancel \"$COHORT_GROUP\" --reason 'seen enough'; exec sleep 60")
            let file = try Scratch.write(spec, name: "curve-child.yaml")
            let submitted = try cluster.cli(["submit", file, "--json"] + keys.peer("alice"))
            #expect(submitted.status == 0, "\(submitted)")
            let group = try #require(try JSON.object(submitted.stdout)["id"] as? String)
            let deadline = ContinuousClock.now + .seconds(60)
            var final: [String: Any] = [:]
            while ContinuousClock.now < deadline {
                let status = try cluster.cli(["status", group, "--json"] + keys.peer("alice"))
                final = try JSON.object(status.stdout)
                if final.state == "cancelled" { break }
                usleep(50_000)
            }
            #expect(final["reason"] as? String == "cancelled by child check (attempt 1): seen enough", "\(final)")
            let status = try JSON.object(try String(contentsOfFile: seen, encoding: .utf8))
            #expect(status["id"] as? String == group, "the child read its group with its token")
            let words = try String(contentsOfFile: refused, encoding: .utf8)
            #expect(words.contains("not among the coordinator's authorised keys"), "\(words)")
            #expect(words.contains("exit 77"), "workers needs an authorised key: \(words)")
            let addWords = try String(contentsOfFile: addedOut, encoding: .utf8)
            #expect(addWords.contains("added to \(group): grown"), "\(addWords)")
            #expect(final.child("grown") != nil, "the added child is part of the group: \(final)")
        }

        /// The Groups guide's branching example: a shell child decides at run time which
        /// children to add (`cohort add "$COHORT_GROUP" -` from stdin), and they may wait for
        /// siblings that exist already; the group finishes only after them.
        @Test func aShellChildAddsChildrenAndTheGroupFinishesAfterThem() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let children = try Scratch.write(
                """
                - name: late
                  run: shell
                  after: [decide, steady]
                  with: { command: ["sh", "-c", "sleep 1; echo late"] }
                - { name: last, run: echo, after: [late], with: { done: true } }

                """, name: "late.yaml")
            let spec =
                "name: branching\nchildren:\n"
                + "  - { name: steady, run: echo, with: { ok: 1 } }\n"
                + Self.shell("decide", "cat \(children) | $COHORT add \"$COHORT_GROUP\" -")
            let (status, final) = try cluster.submitAndWait(spec, name: "branching.yaml")
            #expect(status == 0 && final.state == "succeeded", "\(final)")
            #expect(final.children.map { $0["path"] as? String } == ["steady", "decide", "late", "last"], "\(final)")
            #expect(final.child("late")?["state"] as? String == "succeeded")
            #expect(final.child("last")?["state"] as? String == "succeeded")
            let decideOutput = try cluster.cli(["result", try #require(final["id"] as? String), "decide", "--json"])
            #expect(decideOutput.stdout.contains("added to"), "\(decideOutput)")
            let late = try #require(final.child("late")?["finishedAt"] as? String)
            let group = try #require(final["finishedAt"] as? String)
            #expect(late <= group, "the group finished after its added child")
        }

        /// `cohort add` from outside, into the top level and `--into` a nested group (last in
        /// document order, then no longer: children are inserted in the middle); refused (64)
        /// once the group has finished, and into a nested group that has finished; the added
        /// children and the order survive a restart (the journal replays the additions in
        /// order), in either journal.
        @Test(arguments: JournalKind.allCases)
        func addingFromOutsideSurvivesARestartAndAFinishedGroupRefuses(_ journal: JournalKind) throws {
            let cluster = try Cluster(coordinatorArguments: try journal.coordinatorArguments())
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let gate = Scratch.file("gate")
            let spec =
                "name: grown\nchildren:\n"
                + Self.shell("hold", "while [ ! -e \(gate) ]; do sleep 0.05; done")
                + "  - name: early\n    group:\n      children:\n        - { name: quick, run: echo, with: { a: 1 } }\n"
                + "  - name: stage\n    group:\n      children:\n"
                + "        - name: wait\n          run: shell\n          with: { command: [sh, -c, \"while [ ! -e \(gate) ]; do sleep 0.05; done\"] }\n"
            let group = try cluster.submit(spec, name: "grown.yaml")
            _ = try cluster.waitForStatus(group) { $0.child("early")?["state"] as? String == "succeeded" }

            let nested = try Scratch.write(
                "children:\n  - { name: more, run: echo, after: [wait], with: { y: 2 } }\n", name: "more.yaml")
            let into = try cluster.cli(["add", group, nested, "--into", "stage"])
            #expect(into.status == 0, "\(into)")
            #expect(into.stdout.contains("stage/more"), "\(into)")
            let top = try Scratch.write(
                "[{\"name\": \"extra\", \"run\": \"echo\", \"after\": [\"hold\"], \"with\": {\"x\": 1}}]",
                name: "extra.json")
            let added = try cluster.cli(["add", group, top, "--json"])
            #expect(added.status == 0, "\(added)")
            #expect(try JSON.object(added.stdout)["added"] as? [String] == ["extra"], "\(added)")
            let refusedInto = try cluster.cli(["add", group, nested, "--into", "early"])
            #expect(refusedInto.status == 64, "\(refusedInto)")
            #expect(refusedInto.stderr.contains("\"early\""), "\(refusedInto)")
            // stage is no longer last in document order (extra follows it): children still go
            // into it, and every later child keeps running.
            let another = try Scratch.write("- { name: another, run: echo, after: [wait] }\n", name: "another.yaml")
            let middle = try cluster.cli(["add", group, another, "--into", "stage"])
            #expect(middle.status == 0, "\(middle)")
            #expect(middle.stdout.contains("stage/another"), "\(middle)")
            // The same child again (an adder that runs again) is a no-op; another child of
            // that name is refused.
            let again = try cluster.cli(["add", group, top, "--json"])
            #expect(again.status == 0, "\(again)")
            #expect(try JSON.object(again.stdout)["added"] as? [String] == ["extra"], "\(again)")
            let other = try Scratch.write("- { name: extra, run: echo, with: { x: 2 } }\n", name: "other.yaml")
            let duplicate = try cluster.cli(["add", group, other])
            #expect(duplicate.status == 65, "a second, different extra is not unique: \(duplicate)")

            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let restored = try cluster.status(group)
            #expect(restored.state == "running", "\(restored)")
            #expect(
                restored.child("extra") != nil && restored.child("stage/more") != nil
                    && restored.child("stage/another") != nil, "\(restored)")
            let paths = restored.children.compactMap { $0["path"] as? String }
            #expect(
                (paths.firstIndex(of: "stage/another") ?? .max) < (paths.firstIndex(of: "extra") ?? -1),
                "document order: \(paths)")
            #expect(restored.children.count { $0["path"] as? String == "extra" } == 1, "added once: \(restored)")

            #expect(FileManager.default.createFile(atPath: gate, contents: Data()))
            let final = try cluster.waitForStatus(group) {
                ["succeeded", "failed", "cancelled"].contains($0.state ?? "")
            }
            #expect(final.state == "succeeded", "\(final)")
            #expect(final.child("extra")?["state"] as? String == "succeeded", "\(final)")
            #expect(final.child("stage/more")?["state"] as? String == "succeeded", "\(final)")
            #expect(final.child("stage/another")?["state"] as? String == "succeeded", "\(final)")

            let late = try cluster.cli(["add", group, nested])
            #expect(late.status == 64, "\(late)")
            #expect(late.stderr.contains("has finished"), "\(late)")
        }

        /// `cohort rerun` of a group that grew runs the spec as it ran, read from either
        /// journal: the added child that succeeded is reused, the added child that failed runs
        /// again (without its addition the earlier run would have nothing to re-run).
        @Test(arguments: JournalKind.allCases)
        func aRerunOfAGrownGroupRunsItWithItsAdditions(_ journal: JournalKind) throws {
            let cluster = try Cluster(coordinatorArguments: try journal.coordinatorArguments())
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let gate = Scratch.file("gate")
            let marker = Scratch.file("fixed")
            let group = try cluster.submit(
                "name: grown-rerun\nchildren:\n" + Self.shell("hold", "while [ ! -e \(gate) ]; do sleep 0.05; done"),
                name: "grown-rerun.yaml")
            let addition = try Scratch.write(
                "- { name: made, run: echo, after: [hold], with: { n: 1 } }\n"
                    + "- { name: flaky, run: shell, after: [made], with: { command: [test, -e, \"\(marker)\"] } }\n",
                name: "addition.yaml")
            let added = try cluster.cli(["add", group, addition])
            #expect(added.status == 0, "\(added)")
            #expect(FileManager.default.createFile(atPath: gate, contents: Data()))
            let first = try cluster.waitForStatus(group) {
                ["succeeded", "failed", "cancelled"].contains($0.state ?? "")
            }
            #expect(first.state == "failed", "flaky fails the first time: \(first)")

            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            #expect(FileManager.default.createFile(atPath: marker, contents: Data()))
            let rerun = try cluster.cli(["rerun", group, "--json"])
            #expect(rerun.status == 0, "\(rerun)")
            let again = try #require(try JSON.object(rerun.stdout)["id"] as? String)
            let second = try cluster.waitForStatus(again) {
                ["succeeded", "failed", "cancelled"].contains($0.state ?? "")
            }
            #expect(second.state == "succeeded", "\(second)")
            for (path, reused) in [("hold", true), ("made", true), ("flaky", false)] {
                #expect(second.child(path)?["reused"] as? Bool == reused, "\(path): \(second.children)")
            }
        }

        /// examples/branching.yaml as it is, on a worker with `cohort` on its PATH: `foo` picks
        /// a branch and adds it with `cohort add "$COHORT_GROUP" -`; the added children run (the
        /// report injects the branch's output) and the group succeeds after them.
        @Test func theBranchingExampleRuns() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let path = Binaries.directory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            try cluster.addWorker(name: "w1", environment: ["PATH": path, "DO_BAZ": "1"])
            let example = try String(
                contentsOfFile: Binaries.repositoryRoot + "/examples/branching.yaml", encoding: .utf8)
            let (status, final) = try cluster.submitAndWait(example, name: "branching.yaml")
            #expect(status == 0 && final.state == "succeeded", "\(final)")
            #expect(
                final.children.compactMap { $0["path"] as? String } == ["foo", "lint", "baz", "report"], "\(final)")
            let group = try #require(final["id"] as? String)
            let report = try cluster.cli(["result", group, "report", "--json"])
            #expect(report.stdout.contains("baz ran after foo"), "\(report)")
        }

        /// A Swift custom kind (examples/CustomWorker's `gate`): healthy, it adds a child to its
        /// group with `context.addChildren` over the worker's connection and the group succeeds
        /// after it; unhealthy, `context.cancelGroup(reason:)` ends the group cancelled with a
        /// reason naming it.
        @Test func aCustomKindAddsToAndCancelsItsGroup() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addCustomWorker(name: "words-1")
            let healthy = "name: gated\nchildren:\n  - { name: gate, run: gate, with: { healthy: true } }\n"
            let (status, final) = try cluster.submitAndWait(healthy, name: "gated.yaml")
            #expect(status == 0 && final.state == "succeeded", "\(final)")
            #expect(final.child("promote")?["state"] as? String == "succeeded", "\(final)")

            let unhealthy =
                "name: stopped\nchildren:\n"
                + "  - name: checks\n    group:\n      children:\n"
                + "        - { name: gate, run: gate, with: { healthy: false, reason: \"error rate 12%\" } }\n"
                + "  - { name: slow, run: sleep, with: { seconds: 60 } }\n"
            let (_, cancelled) = try cluster.submitAndWait(unhealthy, name: "stopped.yaml")
            #expect(cancelled.state == "cancelled", "\(cancelled)")
            #expect(
                cancelled["reason"] as? String == "cancelled by child checks/gate (attempt 1): error rate 12%",
                "\(cancelled)")
            #expect(cancelled.child("slow")?["state"] as? String == "cancelled")
        }
    }
}
