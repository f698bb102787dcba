import Foundation
import Testing

/// The journal through real processes: a coordinator killed with SIGKILL and started again on
/// the same endpoint and state directory carries on with what it had accepted.
extension EndToEnd {
    @Suite struct Durability {
        /// Test 2: accepted means durable. The group id a client holds survives a `kill -9` that
        /// follows at once, and the group runs after the restart.
        @Test func aGroupIsOnDiskBeforeItsIDIsReturned() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            // No worker yet: nothing but the journal can keep the group.
            let id = try cluster.submit(
                "name: durable\nchildren:\n  - { name: a, run: echo, with: { v: 1 } }\n  - { name: b, run: echo, after: [a] }\n"
            )
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let status = try cluster.status(id)
            #expect(["pending", "running"].contains(status.state ?? ""), "\(status)")
            #expect(status.children.count == 2)
            try cluster.addWorker(name: "w1")
            let final = try cluster.waitForStatus(id) { $0.state == "succeeded" }
            #expect(final.children.map { $0["state"] as? String } == ["succeeded", "succeeded"])
        }

        /// `--id` idempotency holds across a restart: the same spec is accepted again as already
        /// submitted, another spec under that id is refused.
        @Test func aClientChosenIDStaysIdempotentAcrossARestart() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let spec = try Scratch.write("name: same\nchildren:\n  - { name: a, run: echo }\n", name: "same.yaml")
            let other = try Scratch.write("name: other\nchildren:\n  - { name: b, run: echo }\n", name: "other.yaml")
            let first = try cluster.cli(["submit", spec, "--id", "release-42", "--json"])
            #expect(first.status == 0, "\(first)")
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let again = try cluster.cli(["submit", spec, "--id", "release-42", "--json"])
            #expect(again.status == 0, "\(again)")
            #expect(try JSON.object(again.stdout)["alreadySubmitted"] as? Bool == true)
            let conflicting = try cluster.cli(["submit", other, "--id", "release-42", "--json"])
            #expect(conflicting.status != 0, "\(conflicting)")
            #expect(conflicting.stderr.contains("release-42"), "\(conflicting.stderr)")
        }

        /// Test 3: every fencing token after a restart is larger than every token before it.
        @Test func tokensAfterARestartAreLargerThanEveryTokenBefore() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            func tokens(_ name: String) throws -> [UInt64] {
                let children = (1...5).map { index in
                    "  - { name: c\(index), run: shell, exclusive: [db], with: { command: [sh, -c, 'echo $COHORT_FENCE_DB'] } }"
                }
                let (status, final) = try cluster.submitAndWait(
                    "name: \(name)\nchildren:\n" + children.joined(separator: "\n") + "\n")
                #expect(status == 0, "\(final)")
                return try (1...5).map { index in
                    let result = try cluster.cli(["result", final["id"] as! String, "c\(index)", "--json"])
                    let stdout = try JSON.object(result.stdout)["stdout"] as? String ?? ""
                    return try #require(UInt64(stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(result)")
                }
            }
            let before = try tokens("before")
            #expect(Set(before).count == 5)
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let after = try tokens("after")
            #expect(after.min()! > before.max()!, "before \(before), after \(after)")
        }

        /// Issue 12, item 6: a child that finished while the coordinator was down keeps the time
        /// its worker says it finished, not the restarted coordinator's first hearing of it.
        @Test func aChildThatFinishedWhileTheCoordinatorWasDownKeepsItsFinishTime() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let started = Scratch.file("started")
            let done = Scratch.file("done")
            let group = try cluster.submit(
                """
                name: quick
                children:
                  - { name: a, run: shell, with: { command: [sh, -c, "echo go >> \(started); sleep 0.5; echo ok >> \(done)"] } }

                """)
            try Failures.waitUntil("the child to start") { Failures.lines(started).count == 1 }
            try cluster.killCoordinator()
            try Failures.waitUntil("the child to finish while the coordinator is down") {
                Failures.lines(done).count == 1
            }
            let restartedAt = Date()
            try cluster.restartCoordinator()
            let status = try cluster.waitForStatus(group, timeout: .seconds(40)) { $0.state == "succeeded" }
            let finishedAt = try #require(Failures.date(status.child("a")?["finishedAt"]), "\(status)")
            #expect(finishedAt < restartedAt, "finishedAt \(finishedAt) is not before the restart \(restartedAt)")
        }

        /// A result that reached only a coordinator that then died is not lost with it: the
        /// worker keeps every result until the coordinator acknowledges a heartbeat sent after
        /// it, and sends it again to the next coordinator, whose READY answer adopts the
        /// attempt. The child runs once, as attempt 1 (it used to run again after the restart
        /// grace, as attempt 2).
        @Test func aResultThatDiedWithTheCoordinatorIsSentAgainAndTheChildRunsOnce() throws {
            let cluster = try Cluster(heartbeat: "200ms")
            defer { cluster.stop() }
            let worker = try cluster.addWorker(name: "w1")
            let started = Scratch.file("started")
            let gate = Scratch.file("gate")
            let ran = Scratch.file("ran")
            let group = try cluster.submit(
                """
                name: once
                children:
                  - name: a
                    run: shell
                    with: { command: [sh, -c, "echo go >> \(started); while [ ! -e \(gate) ]; do sleep 0.05; done; echo ran >> \(ran)"] }

                """)
            try Failures.waitUntil("the child to start") { Failures.lines(started).count == 1 }
            // Frozen, the coordinator takes the result into its socket and never reads it.
            kill(cluster.coordinator.pid, SIGSTOP)
            var killed = false
            defer { if !killed { kill(cluster.coordinator.pid, SIGCONT) } }
            #expect(FileManager.default.createFile(atPath: gate, contents: nil))
            try Failures.waitUntil("the child to finish") { Failures.lines(ran).count == 1 }
            // The worker sent the result at once; it gives the silent coordinator up 600 ms later.
            try Failures.waitUntil("the worker to give up the frozen coordinator") {
                worker.stderr.contains("disconnected from the coordinator")
            }
            try cluster.killCoordinator()
            killed = true
            try cluster.restartCoordinator()
            let status = try cluster.waitForStatus(group, timeout: .seconds(40)) { $0.state == "succeeded" }
            #expect(status.child("a")?["attempt"] as? Int == 1, "\(status)")
            #expect(Failures.lines(ran) == ["ran"], "the child ran again")
            #expect(worker.stderr.contains("results.resent=1"), "\(worker.stderr.suffix(2000))")
        }

        /// Test 4: a truncated journal and one filled with garbage stop the coordinator at start
        /// with an error naming the file (exit 74); the file is left as it was.
        @Test(arguments: ["truncated", "garbage"])
        func aDamagedJournalStopsTheCoordinatorNamingTheFile(damage: String) throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            for index in 0..<20 {
                _ = try cluster.submit("name: g\(index)\nchildren:\n  - { name: a, run: echo }\n")
            }
            cluster.coordinator.stop()  // a clean stop: the journal is checkpointed into its file
            let file = cluster.stateDir + "/journal.sqlite"
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
            if damage == "truncated" {
                let handle = try #require(FileHandle(forUpdatingAtPath: file))
                try handle.truncate(atOffset: UInt64(size / 2))
                try handle.close()
            } else {
                try Data((0..<size).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: file))
            }
            let damaged = try FileManager.default.contentsOfItem(atPath: file)
            let result = try cohort(
                ["coordinator", "--endpoint", "tcp://127.0.0.1:*", "--state-dir", cluster.stateDir],
                timeout: .seconds(30))
            #expect(result.status == 74, "\(result)")
            #expect(result.stderr.contains(file), "\(result.stderr)")
            #expect(!result.stdout.contains("listening"), "\(result.stdout)")
            #expect(try FileManager.default.contentsOfItem(atPath: file) == damaged)
        }

        /// `cohort prune` deletes finished groups from the journal (next to a running
        /// coordinator), never unfinished ones; a restart no longer knows the pruned ones.
        @Test func pruneDeletesFinishedGroupsOnly() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let waiting = try cluster.submit("name: waiting\nchildren:\n  - { name: a, run: echo, requires: [gpu] }\n")
            try cluster.addWorker(name: "w1")
            let (status, done) = try cluster.submitAndWait("name: done\nchildren:\n  - { name: a, run: echo }\n")
            #expect(status == 0)
            let doneID = try #require(done["id"] as? String)
            let pruned = try cohort(["prune", "--state-dir", cluster.stateDir, "--older-than", "0s", "--json"])
            #expect(pruned.status == 0, "\(pruned)")
            let report = try JSON.object(pruned.stdout)
            #expect(report["pruned"] as? [String] == [doneID], "\(report)")
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            #expect(try cluster.cli(["status", doneID, "--json"]).status != 0)
            try cluster.addWorker(name: "w2", labels: ["gpu"])
            _ = try cluster.waitForStatus(waiting) { $0.state == "succeeded" }
        }

        /// Finished groups older than `retention` are pruned by the coordinator itself.
        @Test func finishedGroupsOlderThanTheRetentionArePrunedAutomatically() throws {
            let config = try Scratch.write("retention: 7d\n", name: "coordinator.yaml")
            let cluster = try Cluster(coordinatorArguments: ["--config", config])
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let (_, done) = try cluster.submitAndWait("name: done\nchildren:\n  - { name: a, run: echo }\n")
            let doneID = try #require(done["id"] as? String)
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            #expect(try cluster.status(doneID).state == "succeeded")
            try "retention: 0s\n".write(toFile: config, atomically: true, encoding: .utf8)
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            #expect(try cluster.cli(["status", doneID, "--json"]).status != 0)
            let left = try cohort(["prune", "--state-dir", cluster.stateDir, "--older-than", "0s", "--json"])
            #expect(try JSON.object(left.stdout)["pruned"] as? [String] == [], "\(left)")
        }

        /// A watching client (`cohort submit --wait`) rides out a `kill -9` and restart of the
        /// coordinator: it reconnects, watches again and ends with the group's outcome.
        @Test func aWaitingClientContinuesAcrossARestart() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let spec = try Scratch.write(
                "name: long\nmode: sequence\nchildren:\n  - { name: a, run: sleep, with: { seconds: 1 } }\n"
                    + "  - { name: b, run: sleep, with: { seconds: 1 } }\n",
                name: "long.yaml")
            let waiter = try Subprocess(
                Binaries.cohort,
                ["submit", spec, "--id", "long-1", "--wait", "--json", "--coordinator", cluster.endpoint],
                name: "waiter")
            defer { waiter.stop() }
            // The waiter submits on its own: wait until the group is there and running.
            let deadline = ContinuousClock.now + .seconds(30)
            while true {
                let result = try cluster.cli(["status", "long-1", "--json"])
                if result.status == 0, try JSON.object(result.stdout).child("a")?["state"] as? String == "running" {
                    break
                }
                guard ContinuousClock.now < deadline else {
                    throw TestFailure(
                        "long-1's child a was not running within 30 s; last status: \(result)\nwaiter: \(waiter.stderr)"
                    )
                }
                usleep(50_000)
            }
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let status = try waiter.wait(timeout: .seconds(40))
            #expect(status == 0, "stdout: \(waiter.stdout)\nstderr: \(waiter.stderr)")
            #expect(try JSON.object(waiter.stdout).state == "succeeded", "\(waiter.stdout)")
        }

        /// One state directory, one coordinator: a second one stops at once naming the first's pid.
        @Test func aSecondCoordinatorOnTheSameStateDirectoryIsRefused() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let result = try cohort(
                ["coordinator", "--endpoint", "tcp://127.0.0.1:*", "--state-dir", cluster.stateDir],
                timeout: .seconds(30))
            #expect(result.status == 75, "\(result)")
            #expect(result.stderr.contains("pid \(cluster.coordinator.pid)"), "\(result.stderr)")
        }

        /// A lock a procedure took on its worker (the custom worker's `print-report` holds
        /// "printer" from a local `MutuallyExclusive`) is held across a `kill -9` and restart of
        /// the coordinator: another worker's procedure waiting for it does not print until the
        /// holder has finished, and gets a larger token.
        @Test func aWorkerLocalLockIsNotGrantedTwiceAcrossARestart() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addCustomWorker(name: "printer-1", labels: ["one"], slots: 1)
            try cluster.addCustomWorker(name: "printer-2", labels: ["two"], slots: 1)
            func report(_ title: String, on label: String, seconds: Double) -> String {
                "name: \(title)\nchildren:\n  - { name: report, run: print-report, requires: [\(label)], "
                    + "with: { title: \(title), pages: 1, secondsPerPage: \(seconds) } }\n"
            }
            func printer() throws -> [String: Any]? {
                try JSON.array(try cluster.cli(["locks", "--json"]).stdout).first {
                    $0["category"] as? String == "printer"
                }
            }
            func waitForPrinter(_ what: String, _ condition: ([String: Any]) -> Bool) throws {
                let deadline = ContinuousClock.now + .seconds(30)
                while ContinuousClock.now < deadline {
                    if let lock = try printer(), condition(lock) { return }
                    usleep(50_000)
                }
                throw TestFailure("the printer lock never showed \(what); last: \(String(describing: try printer()))")
            }
            let first = try cluster.submit(report("first", on: "one", seconds: 10))
            try waitForPrinter("first as its holder") { ($0["holder"] as? [String: Any])?["group"] as? String == first }
            let second = try cluster.submit(report("second", on: "two", seconds: 0))
            try waitForPrinter("second waiting") { lock in
                (lock["waiters"] as? [[String: Any]])?.contains { $0["group"] as? String == second } == true
            }
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            for group in [first, second] {
                let final = try cluster.waitForStatus(group, timeout: .seconds(90)) {
                    $0.state != "running" && $0.state != "pending"
                }
                #expect(final.state == "succeeded", "\(final)")
            }
            func printed(_ group: String) throws -> [String: Any] {
                try JSON.object(try cluster.cli(["result", group, "report", "--json"]).stdout)
            }
            let (holder, waiter) = (try printed(first), try printed(second))
            let holderUntil = try #require((holder["printedUntil"] as? NSNumber)?.doubleValue)
            let waiterFrom = try #require((waiter["printedFrom"] as? NSNumber)?.doubleValue)
            #expect(
                waiterFrom >= holderUntil,
                "the second printed from \(waiterFrom), before the first finished at \(holderUntil)")
            let tokens = (holder["fencingToken"] as? Int ?? 0, waiter["fencingToken"] as? Int ?? 0)
            #expect(tokens.1 > tokens.0, "tokens \(tokens)")
        }
    }
}

extension FileManager {
    func contentsOfItem(atPath path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }
}
