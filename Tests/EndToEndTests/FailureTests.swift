import Foundation
import Testing

/// Issue 5's failure scenarios with real processes: a worker killed, a worker frozen past its
/// liveness, the coordinator stopped and restarted, timeouts and retries, a worker drained.
///
/// The coordinator heartbeats every 200 ms with a liveness of 5 (its WELCOME gives the workers
/// the same), so a silent peer is lost after 1 s: quick, yet no false loss on a loaded machine.
extension EndToEnd {
    @Suite struct Failures {
        static let heartbeat = "200ms"
        static let liveness = 5

        /// The lines of `file` (none while it does not exist).
        static func lines(_ file: String) -> [String] {
            ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// Polls `condition` until it holds, at most `timeout`.
        static func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: () throws -> Bool) throws {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                if try condition() { return }
                usleep(20_000)
            }
            throw TestFailure("\(what) did not happen within \(timeout)")
        }

        /// `cohort workers --json`.
        static func workers(_ cluster: Cluster) throws -> [[String: Any]] {
            let result = try cluster.cli(["workers", "--json"])
            guard result.status == 0 else { throw TestFailure("workers failed: \(result)") }
            return try JSON.array(result.stdout)
        }

        /// The session id of the connected (not lost) worker named `name`.
        static func session(of name: String, in cluster: Cluster) throws -> String? {
            try workers(cluster).first { $0["name"] as? String == name && $0["state"] as? String != "lost" }?["id"]
                as? String
        }

        /// An RFC 3339 time of `status --json`.
        static func date(_ value: Any?) -> Date? {
            guard let text = value as? String else { return nil }
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: text) { return date }
            formatter.formatOptions = [.withInternetDateTime]
            return formatter.date(from: text)
        }

        // MARK: 1. kill -9 of a worker

        /// A worker killed with SIGKILL while it runs five children (one holding the `db` lock,
        /// another waiting for it): they finish on the other worker, the group succeeds, none
        /// runs twice to completion, and the lock goes to the next holder with a larger token.
        @Test func aKilledWorkersChildrenFinishElsewhereAndItsLockGoesOnWithALargerToken() throws {
            let cluster = try Cluster(heartbeat: Self.heartbeat, liveness: Self.liveness)
            defer { cluster.stop() }
            let doomed = try cluster.addWorker(name: "doomed", slots: 8)

            let started = Scratch.file("started")
            let done = Scratch.file("done")
            let tokens = Scratch.file("tokens")
            // Each child says where it started; the end is written only after a line to stdout,
            // which kills a child whose worker died (SIGPIPE), so an orphan never completes.
            func child(_ name: String, exclusive: Bool) -> String {
                let fence = exclusive ? "; echo \\\"\(name) $COHORT_WORKER $COHORT_FENCE_DB\\\" >> \(tokens)" : ""
                return """
                      - name: \(name)
                        run: shell
                        retry: { attempts: 2 }\(exclusive ? "\n    exclusive: [db]" : "")
                        with: { command: ["sh", "-c", "echo \\"\(name) $COHORT_WORKER\\" >> \(started)\(fence); sleep 3; echo finishing; echo \\"\(name) $COHORT_WORKER\\" >> \(done)"] }

                    """
            }
            var spec = "name: doomed\nchildren:\n"
            for index in 1...4 { spec += child("c\(index)", exclusive: false) }
            spec += child("holder", exclusive: true) + child("waiter", exclusive: true)
            let group = try cluster.submit(spec, name: "doomed.yaml")

            try Self.waitUntil("five children to start on the doomed worker") { Self.lines(started).count == 5 }
            #expect(Self.lines(started).allSatisfy { $0.hasSuffix(" doomed") })
            let firstHolder = try #require(Self.lines(tokens).first?.split(separator: " "))
            let firstToken = try #require(UInt64(firstHolder[2]))

            // Killed at once (its children sleep 3 s); their new attempts wait for a worker.
            kill(doomed.pid, SIGKILL)
            try cluster.addWorker(name: "survivor", slots: 8)
            let status = try cluster.waitForStatus(group, timeout: .seconds(40)) {
                $0.state == "succeeded" || $0.state == "failed"
            }
            #expect(status.state == "succeeded", "\(status)")

            // Every child completed exactly once, on the survivor.
            let completions = Self.lines(done)
            #expect(completions.sorted() == ["c1", "c2", "c3", "c4", "holder", "waiter"].map { "\($0) survivor" })
            for name in ["c1", "c2", "c3", "c4", firstHolder[0]] {
                #expect(status.child(String(name))?["attempt"] as? Int == 2, "\(name) ran again: \(status)")
            }
            // The lock: both later holders ran on the survivor with tokens above the lost one's.
            let later = Self.lines(tokens).dropFirst().map { $0.split(separator: " ") }
            #expect(later.count == 2)
            for line in later {
                #expect(line[1] == "survivor")
                #expect((UInt64(line[2]) ?? 0) > firstToken, "token \(line[2]) after the revoked \(firstToken)")
            }
        }

        /// Issue 12, item 4: a lost worker's attempts run again elsewhere by default, without
        /// `retry`, on the worker-loss budget; `onWorkerLoss: fail` fails at the loss instead,
        /// naming the worker; the coordinator's `maxWorkerLosses` bounds the re-runs.
        @Test func aKilledWorkersChildRunsAgainWithoutRetryUnlessItSaysFail() throws {
            let config = Scratch.file("coordinator.yaml")
            try "maxWorkerLosses: 1\n".write(toFile: config, atomically: true, encoding: .utf8)
            let cluster = try Cluster(
                coordinatorArguments: ["--config", config], heartbeat: Self.heartbeat, liveness: Self.liveness)
            defer { cluster.stop() }
            let first = try cluster.addWorker(name: "first", slots: 4)

            let started = Scratch.file("started")
            func child(_ name: String, _ extra: String = "") -> String {
                """
                  - name: \(name)\(extra)
                    run: shell
                    with: { command: ["sh", "-c", "echo \\"\(name) $COHORT_WORKER $COHORT_ATTEMPT\\" >> \(started); sleep 2; echo \(name)"] }

                """
            }
            let spec =
                "name: lossy\nonChildFailure: continue\nchildren:\n" + child("again")
                + child("strict", "\n    onWorkerLoss: fail")
            let group = try cluster.submit(spec, name: "lossy.yaml")
            try Self.waitUntil("both children to start on the first worker") { Self.lines(started).count == 2 }
            kill(first.pid, SIGKILL)
            let second = try cluster.addWorker(name: "second", slots: 4)
            try Self.waitUntil("the child without retry to run again on the second worker") {
                Self.lines(started).contains("again second 2")
            }
            // The second worker is lost too: `again` has now lost two workers, one more than
            // maxWorkerLosses allows.
            kill(second.pid, SIGKILL)
            try cluster.addWorker(name: "third", slots: 4)
            let status = try cluster.waitForStatus(group, timeout: .seconds(40)) {
                $0.state == "succeeded" || $0.state == "failed"
            }
            #expect(status.state == "failed", "\(status)")
            let strict = try #require(status.child("strict"))
            #expect(strict["state"] as? String == "failed")
            #expect(
                (strict["error"] as? String)?.hasSuffix("(onWorkerLoss: fail)") == true
                    && (strict["error"] as? String)?.contains("worker first") == true,
                "\(strict)")
            let again = try #require(status.child("again"))
            #expect(again["state"] as? String == "failed")
            let error = again["error"] as? String ?? ""
            #expect(error.contains("attempt 1: worker first"), "\(error)")
            #expect(error.contains("attempt 2: worker second"), "\(error)")
            #expect(error.hasSuffix("(2 workers lost while it ran; maxWorkerLosses is 1)"), "\(error)")
            #expect(!Self.lines(started).contains { $0.hasPrefix("again third") }, "ran a third time")
        }

        /// Issue 12, item 3: a worker that stops hearing its heartbeats acknowledged (here the
        /// coordinator is frozen) stops its exclusive children when its lease ends, before the
        /// coordinator could declare it lost and grant the category again, and kills them at
        /// once; children holding no category run on. Thawed, the coordinator gets the stopped
        /// attempt's report (`WORKER_LOST`) and runs it again as a worker loss.
        @Test func aWorkerWhoseLeaseEndsStopsItsExclusiveChildrenBeforeTheCoordinatorCouldLoseIt() throws {
            // 300 ms × 5: the coordinator waits 1.5 s of silence; the worker's lease is 1.2 s.
            let cluster = try Cluster(heartbeat: "300ms", liveness: 5)
            defer { cluster.stop() }
            try cluster.addWorker(name: "leased", slots: 4)
            let fenced = Scratch.file("fenced")
            let free = Scratch.file("free")
            let spec = """
                name: leased
                children:
                  - name: fenced
                    run: shell
                    exclusive: [fence]
                    with: { command: ["sh", "-c", "echo $$ >> \(fenced); if [ $COHORT_ATTEMPT = 1 ]; then exec sleep 60; fi"] }
                  - name: free
                    run: shell
                    with: { command: ["sh", "-c", "echo $$ >> \(free); sleep 4"] }

                """
            let group = try cluster.submit(spec, name: "leased.yaml")
            try Self.waitUntil("both children to start") {
                Cancellation.pids(in: fenced).count == 1 && Cancellation.pids(in: free).count == 1
            }
            let fencedPID = Cancellation.pids(in: fenced)[0]
            let freePID = Cancellation.pids(in: free)[0]
            let frozenAt = ContinuousClock.now
            kill(cluster.coordinator.pid, SIGSTOP)
            var thawed = false
            defer { if !thawed { kill(cluster.coordinator.pid, SIGCONT) } }
            try Self.waitUntil("the exclusive child to be killed when the lease ends", timeout: .seconds(10)) {
                Cancellation.isGone(fencedPID)
            }
            let stoppedAfter = ContinuousClock.now - frozenAt
            // The coordinator had heard the worker at the latest when it was frozen: it could
            // not have declared it lost before 1.5 s had passed.
            #expect(stoppedAfter < .milliseconds(1500), "stopped \(stoppedAfter) after the last acknowledgement")
            #expect(!Cancellation.isGone(freePID), "a child holding no category was stopped too")
            kill(cluster.coordinator.pid, SIGCONT)
            thawed = true

            let status = try cluster.waitForStatus(group, timeout: .seconds(40)) {
                $0.state == "succeeded" || $0.state == "failed"
            }
            #expect(status.state == "succeeded", "\(status)")
            #expect(status.child("fenced")?["attempt"] as? Int == 2, "\(status)")
            #expect(status.child("free")?["attempt"] as? Int == 1, "\(status)")
            #expect(cluster.workers[0].stderr.contains("lease ended"), "the worker did not log its lease's end")
        }

        // MARK: 2. kill -STOP past liveness, then -CONT

        /// A worker frozen past its liveness: its child runs again elsewhere; once thawed, its
        /// late result is refused (the child keeps the other worker's output), and it rejoins
        /// with a new session and takes new work.
        @Test func aFrozenWorkersLateResultIsRefusedAndItRejoinsWithANewSession() throws {
            let cluster = try Cluster(heartbeat: Self.heartbeat, liveness: Self.liveness)
            defer { cluster.stop() }
            let frozen = try cluster.addWorker(name: "frozen", labels: ["frozen"], slots: 2)
            let firstSession = try #require(try Self.session(of: "frozen", in: cluster))

            let started = Scratch.file("started")
            let tokens = Scratch.file("tokens")
            let spec = """
                name: thaw
                children:
                  - name: a
                    run: shell
                    retry: { attempts: 2 }
                    exclusive: [db]
                    with: { command: ["sh", "-c", "echo $COHORT_WORKER >> \(started); echo $COHORT_FENCE_DB >> \(tokens); sleep 1.5; echo from $COHORT_WORKER"] }

                """
            let group = try cluster.submit(spec, name: "thaw.yaml")
            try Self.waitUntil("the child to start on the frozen worker") { Self.lines(started) == ["frozen"] }
            kill(frozen.pid, SIGSTOP)
            var thawed = false
            defer { if !thawed { kill(frozen.pid, SIGCONT) } }
            try cluster.addWorker(name: "other", slots: 2)
            try Self.waitUntil("the child to run again on the other worker") {
                Self.lines(started) == ["frozen", "other"]
            }
            // Still frozen: lost for the coordinator. Its own attempt finishes meanwhile (the
            // shell child is not frozen), and its result waits in the frozen worker.
            let lost = try Self.workers(cluster).first { $0["id"] as? String == firstSession }
            #expect(lost == nil || lost?["state"] as? String == "lost")
            kill(frozen.pid, SIGCONT)
            thawed = true

            let status = try cluster.waitForStatus(group, timeout: .seconds(30)) {
                $0.state == "succeeded" || $0.state == "failed"
            }
            #expect(status.state == "succeeded", "\(status)")
            #expect(status.child("a")?["worker"] as? String == "other")
            #expect(status.child("a")?["attempt"] as? Int == 2)
            let result = try cluster.cli(["result", group, "a", "--json"])
            #expect(result.stdout.contains("from other"), "\(result)")
            // The lock the frozen attempt held was revoked: the new attempt's token is larger,
            // and the late result (which would release it) did not free the new holder's lock.
            let fences = Self.lines(tokens).compactMap { UInt64($0) }
            #expect(fences.count == 2 && fences[1] > fences[0], "tokens \(fences)")
            let locks = try cluster.cli(["locks", "--json"])
            #expect(
                locks.status == 0 && !locks.stdout.contains("\"thaw"),
                "nothing of the group holds a lock: \(locks.stdout)")

            // It rejoins with a new session, having had its late report refused.
            var rejoined: String?
            try Self.waitUntil("the thawed worker to rejoin") {
                rejoined = try Self.session(of: "frozen", in: cluster)
                return rejoined != nil && rejoined != firstSession
            }
            try Self.waitUntil("the coordinator to log the refused late report") {
                cluster.coordinator.stderr.contains("refused a")
            }
            #expect(frozen.stdout.components(separatedBy: "cohort worker frozen ready (session").count - 1 >= 2)
            // And it takes new work: a child only it can run.
            let (code, after) = try cluster.submitAndWait(
                """
                name: after-thaw
                children:
                  - name: here
                    run: echo
                    requires: [frozen]
                    with: { ok: true }

                """, name: "after-thaw.yaml", timeout: .seconds(30))
            #expect(code == 0, "\(after)")
            #expect(after.child("here")?["worker"] as? String == "frozen")
        }

        // MARK: 3. the coordinator stopped and restarted

        /// SIGTERM to a coordinator without a journal (`--no-journal`: its groups are gone): a
        /// waiting client is told at once it is shutting down (exit 69), the coordinator exits 0;
        /// a new one on the same endpoint gets the workers back on their own, with new sessions,
        /// and runs new groups. (With a journal the client waits for it instead:
        /// CoordinatorRestartTests.swift.)
        @Test func aCoordinatorStoppedAndRestartedGetsItsWorkersBackAndClientsAClearError() throws {
            let cluster = try Cluster(
                coordinatorArguments: ["--no-journal"], heartbeat: Self.heartbeat, liveness: Self.liveness)
            defer { cluster.stop() }
            let worker = try cluster.addWorker(name: "loyal", slots: 2)
            let file = try Scratch.write(
                """
                name: long
                children:
                  - name: nap
                    run: shell
                    with: { command: ["sleep", "30"] }

                """, name: "long.yaml")
            let client = try Subprocess(
                Binaries.cohort, ["submit", file, "--wait", "--coordinator", cluster.endpoint], name: "waiting client")
            defer { client.stop() }
            let group = try #require(try? cluster.waitForStatusOfOnlyGroup())
            try cluster.waitForStatus(group) { $0.child("nap")?.state == "running" }

            kill(cluster.coordinator.pid, SIGTERM)
            #expect(try cluster.coordinator.wait(timeout: .seconds(10)) == 0, "the coordinator exits cleanly")
            #expect(try client.wait(timeout: .seconds(10)) == 69)
            #expect(client.stderr.contains("shutting down"), "\(client.stderr)")
            #expect(!client.stderr.contains("restarting"), "no journal, no waiting: \(client.stderr)")
            #expect(client.stderr.contains(cluster.endpoint), "\(client.stderr)")
            #expect(worker.isRunning, "a worker outlives its coordinator")

            try cluster.restartCoordinator()
            try Self.waitUntil("the worker to reconnect on its own", timeout: .seconds(30)) {
                worker.stdout.components(separatedBy: "cohort worker loyal ready (session").count - 1 >= 2
            }
            let (code, status) = try cluster.submitAndWait(
                "name: again\nchildren:\n  - name: hello\n    run: echo\n    with: { hi: 1 }\n", name: "again.yaml",
                timeout: .seconds(30))
            #expect(code == 0, "\(status)")
            #expect(status.child("hello")?["worker"] as? String == "loyal")
        }

        /// SIGKILL to the coordinator: the workers reconnect to its replacement on the same
        /// endpoint by themselves, and the waiting client does too (issue 6: the replacement
        /// reloads the group from its journal): it follows the group to its end, here a cancel.
        @Test func aKilledCoordinatorLeavesNoClientHangingAndItsWorkersReconnect() throws {
            let cluster = try Cluster(heartbeat: Self.heartbeat, liveness: Self.liveness)
            defer { cluster.stop() }
            let workers = [try cluster.addWorker(name: "k1", slots: 2), try cluster.addWorker(name: "k2", slots: 2)]
            let file = try Scratch.write(
                "name: long\nchildren:\n  - name: nap\n    run: shell\n    with: { command: [\"sleep\", \"30\"] }\n",
                name: "long.yaml")
            let client = try Subprocess(
                Binaries.cohort, ["submit", file, "--wait", "--coordinator", cluster.endpoint], name: "waiting client")
            defer { client.stop() }
            let group = try cluster.waitForStatusOfOnlyGroup()
            try cluster.waitForStatus(group) { $0.child("nap")?.state == "running" }

            kill(cluster.coordinator.pid, SIGKILL)
            _ = try cluster.coordinator.wait(timeout: .seconds(5))
            try cluster.restartCoordinator()
            for (index, worker) in workers.enumerated() {
                try Self.waitUntil("worker k\(index + 1) to reconnect", timeout: .seconds(30)) {
                    worker.stdout.components(separatedBy: "ready (session").count - 1 >= 2
                }
            }
            let (code, status) = try cluster.submitAndWait(
                "name: again\nchildren:\n  - name: a\n    run: echo\n  - name: b\n    run: echo\n", name: "again.yaml",
                timeout: .seconds(30))
            #expect(code == 0, "\(status)")
            // The group came back with the restart, still running: the client still waits for it.
            #expect(try cluster.status(group).state == "running")
            #expect(client.isRunning)
            #expect(try cluster.cli(["cancel", group]).status == 0)
            #expect(try client.wait(timeout: .seconds(25)) == 3, "\(client.stderr)")
        }

        // MARK: 4. timeouts and retries

        /// `sleep 30` with `timeout: 1s` ends cancelled (`timed out`) within 1 s plus the kill
        /// grace, its process gone; a flaky child succeeds on attempt 3; an always-failing one
        /// fails after its attempts naming each attempt's error.
        @Test func timeoutsAndRetries() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 4)
            let pidFile = Scratch.file("pid")
            let counter = Scratch.file("count")
            let spec = """
                name: timeouts
                onChildFailure: continue
                children:
                  - name: slow
                    run: shell
                    timeout: 1s
                    with: { command: ["sh", "-c", "echo $$ > \(pidFile); exec sleep 30"] }
                  - name: flaky
                    run: shell
                    retry: { attempts: 3, backoff: 100ms }
                    with: { command: ["sh", "-c", "n=$(cat \(counter) 2>/dev/null || echo 0); n=$((n+1)); echo $n > \(counter); if [ $n -lt 3 ]; then echo flaky $n >&2; exit 1; fi; echo fine"] }
                  - name: broken
                    run: shell
                    retry: { attempts: 3 }
                    with: { command: ["sh", "-c", "echo broken on attempt $COHORT_ATTEMPT >&2; exit 7"] }

                """
            let (code, status) = try cluster.submitAndWait(spec, name: "timeouts.yaml", timeout: .seconds(40))
            #expect(code == 1, "a failed child fails the group: \(status)")

            let slow = try #require(status.child("slow"))
            #expect(slow.state == "cancelled")
            #expect(slow["error"] as? String == "timed out")
            let elapsed = try #require(Self.date(slow["finishedAt"])).timeIntervalSince(
                try #require(Self.date(slow["startedAt"])))
            #expect(elapsed >= 0.9 && elapsed < 1 + 2 + 0.5, "timed out after \(elapsed) s (timeout 1 s, grace 2 s)")
            let pid = try #require(pid_t(Self.lines(pidFile).first ?? ""))
            #expect(Cancellation.isGone(pid), "the timed-out process is gone")

            let flaky = try #require(status.child("flaky"))
            #expect(flaky.state == "succeeded")
            #expect(flaky["attempt"] as? Int == 3)

            let broken = try #require(status.child("broken"))
            #expect(broken.state == "failed")
            #expect(broken["attempt"] as? Int == 3)
            let error = try #require(broken["error"] as? String)
            for attempt in 1...3 {
                #expect(
                    error.contains("attempt \(attempt): exited with code 7: broken on attempt \(attempt)"), "\(error)")
            }
        }

        /// A group's `timeout` runs from its submission: a group whose only child can never
        /// start (no worker has its label) is cancelled `timed out` after its timeout.
        @Test func aGroupsTimeoutRunsFromSubmission() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 1)
            let start = ContinuousClock.now
            let (code, status) = try cluster.submitAndWait(
                """
                name: stranded
                timeout: 1s
                children:
                  - name: nowhere
                    run: echo
                    requires: [no-such-label]

                """, name: "stranded.yaml", timeout: .seconds(20))
            #expect(code == 3, "\(status)")
            #expect(status["reason"] as? String == "timed out")
            #expect(ContinuousClock.now - start < .seconds(10))
        }

        // MARK: 5. drain

        /// SIGTERM to a worker running a 2 s child: the child finishes there, nothing new goes
        /// there, and the worker exits 0.
        @Test func aDrainedWorkerFinishesItsChildTakesNothingNewAndExitsZero() throws {
            let cluster = try Cluster(heartbeat: Self.heartbeat, liveness: Self.liveness)
            defer { cluster.stop() }
            let draining = try cluster.addWorker(name: "leaving", slots: 4, extra: ["--drain-timeout", "60s"])
            let started = Scratch.file("started")
            let group = try cluster.submit(
                """
                name: last-job
                children:
                  - name: job
                    run: shell
                    with: { command: ["sh", "-c", "echo started >> \(started); sleep 2; echo done"] }

                """, name: "last-job.yaml")
            try Self.waitUntil("the child to start") { Self.lines(started) == ["started"] }
            kill(draining.pid, SIGTERM)
            try Self.waitUntil("the coordinator to see the worker draining") {
                try Self.workers(cluster).contains {
                    $0["name"] as? String == "leaving" && $0["state"] as? String == "draining"
                }
            }
            try cluster.addWorker(name: "staying", slots: 4)
            let (code, other) = try cluster.submitAndWait(
                "name: more\nchildren:\n" + (1...6).map { "  - name: m\($0)\n    run: echo\n" }.joined(),
                name: "more.yaml",
                timeout: .seconds(30))
            #expect(code == 0, "\(other)")
            #expect(
                other.children.allSatisfy { $0["worker"] as? String == "staying" },
                "nothing new went to the draining worker: \(other)")

            let status = try cluster.waitForStatus(group, timeout: .seconds(20)) {
                $0.state == "succeeded" || $0.state == "failed"
            }
            #expect(status.state == "succeeded")
            #expect(status.child("job")?["worker"] as? String == "leaving")
            #expect(status.child("job")?["attempt"] as? Int == 1)
            #expect(try draining.wait(timeout: .seconds(15)) == 0)
        }

        /// A drain that outlasts `--drain-timeout`: the child still running is cancelled, its
        /// process is gone, and it is handed back: it runs again on another worker although it
        /// has no retry budget, and the drained worker exits 0.
        @Test func aChildStillRunningAtTheDrainTimeoutIsHandedBackWithoutUsingARetry() throws {
            let cluster = try Cluster(heartbeat: Self.heartbeat, liveness: Self.liveness)
            defer { cluster.stop() }
            let leaving = try cluster.addWorker(name: "leaving", slots: 2, extra: ["--drain-timeout", "1s"])
            let pidFile = Scratch.file("pid")
            let group = try cluster.submit(
                """
                name: handed-back
                children:
                  - name: job
                    run: shell
                    with: { command: ["sh", "-c", "if [ $COHORT_WORKER = leaving ]; then echo $$ > \(pidFile); exec sleep 30; fi; echo ran on $COHORT_WORKER"] }

                """, name: "handed-back.yaml")
            try Self.waitUntil("the child to start on the leaving worker") { !Self.lines(pidFile).isEmpty }
            let pid = try #require(pid_t(Self.lines(pidFile)[0]))
            let signalled = ContinuousClock.now
            kill(leaving.pid, SIGTERM)
            #expect(try leaving.wait(timeout: .seconds(15)) == 0)
            #expect(ContinuousClock.now - signalled < .seconds(1 + 2 + 3), "drain timeout, kill grace, margin")
            #expect(Cancellation.isGone(pid), "the handed-back child's process is gone")
            try cluster.addWorker(name: "taking-over", slots: 2)
            let status = try cluster.waitForStatus(group, timeout: .seconds(20)) {
                $0.state == "succeeded" || $0.state == "failed"
            }
            #expect(status.state == "succeeded", "\(status)")
            #expect(status.child("job")?["worker"] as? String == "taking-over")
            #expect(status.child("job")?["attempt"] as? Int == 2)
            #expect(
                leaving.stderr.contains("handed back") || leaving.stderr.contains("handedBack"), "\(leaving.stderr)")
        }

        /// A second SIGTERM during a drain stops the worker at once: its child (which would run
        /// 30 s) is cancelled and handed back, and the worker exits 0 within the kill grace.
        @Test func aSecondSigtermStopsADrainingWorkerAtOnce() throws {
            let cluster = try Cluster(heartbeat: Self.heartbeat, liveness: Self.liveness)
            defer { cluster.stop() }
            let leaving = try cluster.addWorker(name: "leaving", slots: 2, extra: ["--drain-timeout", "10m"])
            let pidFile = Scratch.file("pid")
            let group = try cluster.submit(
                """
                name: impatient
                children:
                  - name: job
                    run: shell
                    with: { command: ["sh", "-c", "if [ $COHORT_WORKER = leaving ]; then echo $$ > \(pidFile); exec sleep 30; fi; echo done"] }

                """, name: "impatient.yaml")
            try Self.waitUntil("the child to start on the leaving worker") { !Self.lines(pidFile).isEmpty }
            kill(leaving.pid, SIGTERM)
            try Self.waitUntil("the coordinator to see the worker draining") {
                try Self.workers(cluster).contains {
                    $0["name"] as? String == "leaving" && $0["state"] as? String == "draining"
                }
            }
            #expect(leaving.isRunning, "a drain waits for the child")
            let signalled = ContinuousClock.now
            kill(leaving.pid, SIGTERM)
            #expect(try leaving.wait(timeout: .seconds(15)) == 0)
            #expect(ContinuousClock.now - signalled < .seconds(2 + 3), "kill grace and margin, not the 10 min drain")
            #expect(Cancellation.isGone(pid_t(Self.lines(pidFile)[0]) ?? 0))
            try cluster.addWorker(name: "taking-over", slots: 2)
            let status = try cluster.waitForStatus(group, timeout: .seconds(20)) {
                $0.state == "succeeded" || $0.state == "failed"
            }
            #expect(status.state == "succeeded", "\(status)")
            #expect(status.child("job")?["attempt"] as? Int == 2)
        }
    }
}

extension Cluster {
    /// Waits until the coordinator knows exactly one group and returns its id.
    func waitForStatusOfOnlyGroup(timeout: Duration = .seconds(20)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let result = try cli(["status", "--json"])
            if result.status == 0, let groups = try? JSON.array(result.stdout), groups.count == 1,
                let id = groups[0]["id"] as? String
            {
                return id
            }
            usleep(20_000)
        }
        throw TestFailure("no group was submitted within \(timeout)")
    }
}
