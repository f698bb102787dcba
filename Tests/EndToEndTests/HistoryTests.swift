import Foundation
import Testing

extension EndToEnd {
    /// `cohort status` lists with filters from the journal, `cohort undrain`, and the ages
    /// `cohort workers` and `cohort locks` show, with real processes.
    @Suite struct History {
        static func group(_ name: String, fails: Bool = false) -> String {
            "name: \(name)\nchildren:\n  - { name: a, run: \(fails ? "fail" : "echo") }\n"
        }

        /// `cohort status --json` with `arguments`: the listed ids, newest first.
        static func listed(_ cluster: Cluster, _ arguments: [String]) throws -> [String] {
            let result = try cluster.cli(["status"] + arguments + ["--json"])
            guard result.status == 0 else { throw TestFailure("status \(arguments) failed: \(result)") }
            return try JSON.array(result.stdout).compactMap { $0["id"] as? String }
        }

        /// Finished groups the coordinator keeps only in its journal (it holds one finished
        /// group in memory) are listed with their filters, also after a restart.
        @Test func statusFiltersListTheJournalsHistoryAlsoAfterARestart() throws {
            let config = try Scratch.write("finishedGroupRetention: 1\n", name: "coordinator.yaml")
            let cluster = try Cluster(coordinatorArguments: ["--config", config])
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 2)
            var ids: [String] = []
            for (name, fails) in [("release-1", false), ("nightly-1", true), ("release-2", false)] {
                let (_, final) = try cluster.submitAndWait(Self.group(name, fails: fails), name: "\(name).yaml")
                ids.append(try #require(final["id"] as? String))
            }
            let (r1, n1, r2) = (ids[0], ids[1], ids[2])

            #expect(try Self.listed(cluster, []) == [r2, n1, r1])
            #expect(try Self.listed(cluster, ["--state", "succeeded"]) == [r2, r1])
            #expect(try Self.listed(cluster, ["--state", "failed,cancelled"]) == [n1])
            #expect(try Self.listed(cluster, ["--name", "nightly-*"]) == [n1])
            #expect(try Self.listed(cluster, ["--limit", "1"]) == [r2])
            #expect(try Self.listed(cluster, ["--since", "1h", "--name", "release-?"]) == [r2, r1])
            // --since excludes what was submitted before it: n1's own submission time (from
            // `status --json`) keeps n1 and r2, and drops r1, submitted before n1.
            let all = try JSON.array(try cluster.cli(["status", "--json"]).stdout)
            let n1Submitted = try #require(all.first { $0["id"] as? String == n1 }?["submittedAt"] as? String)
            #expect(try Self.listed(cluster, ["--since", n1Submitted]) == [r2, n1], "since \(n1Submitted)")
            let json = try cluster.cli(["status", "--json", "--limit", "1"])
            let first = try #require(try JSON.array(json.stdout).first)
            #expect(first["finishedAt"] is String && first["submittedAt"] is String, "\(json.stdout)")
            let text = try cluster.cli(["status", "--state", "failed"])
            #expect(text.status == 0 && text.stdout.contains("FINISHED") && text.stdout.contains(n1), "\(text)")

            kill(cluster.coordinator.pid, SIGTERM)
            #expect(try cluster.coordinator.wait(timeout: .seconds(10)) == 0)
            try cluster.restartCoordinator()
            #expect(try Self.listed(cluster, ["--state", "succeeded"]) == [r2, r1])
            #expect(try Self.listed(cluster, ["--limit", "all"]) == [r2, n1, r1])

            let bad = try cluster.cli(["status", "--state", "done"])
            #expect(bad.status == 64, "\(bad)")
            #expect(
                bad.stderr.contains("unknown state \"done\"")
                    && bad.stderr.contains("pending, running, succeeded, failed, cancelled"), "\(bad)")
            let badLimit = try cluster.cli(["status", "--limit", "many"])
            #expect(badLimit.status == 64 && badLimit.stderr.contains("--limit"), "\(badLimit)")
            let badSince = try cluster.cli(["status", "--since", "yesterday"])
            #expect(badSince.status == 64 && badSince.stderr.contains("--since"), "\(badSince)")
            let negative = try cluster.cli(["status", "--since=-5m"])
            #expect(
                negative.status == 64 && negative.stderr.contains("\"-5m\" is a negative duration"), "\(negative)")
        }

        /// A drained worker takes no work until `cohort undrain`; then a new group runs on it.
        @Test func drainThenUndrainAWorkerAndANewGroupRunsOnIt() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 2)
            #expect(try cluster.cli(["drain", "w1"]).status == 0)
            let workers = try EndToEnd.Failures.workers(cluster)
            let w1 = try #require(workers.first { $0["name"] as? String == "w1" })
            #expect(w1["state"] as? String == "draining" && w1["drained"] as? Bool == true, "\(workers)")
            let text = try cluster.cli(["workers"])
            #expect(text.stdout.contains("draining (drained)"), "\(text)")

            let group = try cluster.submit(Self.group("after-undrain"), name: "after.yaml")
            try cluster.waitForStatus(group) { $0.child("a")?.state == "waiting" }
            let undrain = try cluster.cli(["undrain", "w1"])
            #expect(undrain.status == 0 && undrain.stdout.contains("takes work again"), "\(undrain)")
            let done = try cluster.waitForStatus(group) { $0.state == "succeeded" }
            #expect(done.child("a")?["worker"] as? String == "w1", "\(done)")

            let again = try cluster.cli(["undrain", "w1"])
            #expect(again.status == 64 && again.stderr.contains("is not drained"), "\(again)")
            let unknown = try cluster.cli(["undrain", "nobody"])
            #expect(unknown.status == 64 && unknown.stderr.contains("nobody"), "\(unknown)")
            let help = try cohort(["undrain", "--help"])
            #expect(help.stdout.contains("Examples:") && help.stdout.contains("cohort undrain build-1"), "\(help)")
        }

        /// A lock held by a sleeping child shows a held age that grows, its waiter a waiting
        /// age; a worker how long ago it was heard; as text and as numbers in `--json`.
        @Test func workersAndLocksShowAges() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 2)
            let group = try cluster.submit(
                """
                name: aging
                children:
                  - { name: holder, run: sleep, exclusive: [db], with: { seconds: 60 } }
                  - { name: waiter, run: echo, exclusive: [db] }
                """, name: "aging.yaml")
            try cluster.waitForStatus(group) { $0.child("holder")?.state == "running" }

            func db() throws -> [String: Any] {
                let result = try cluster.cli(["locks", "--json"])
                return try #require(try JSON.array(result.stdout).first { $0["category"] as? String == "db" })
            }
            func held(_ lock: [String: Any]) -> Double? {
                (lock["holder"] as? [String: Any])?["heldSeconds"] as? Double
            }
            let first = try db()
            let start = try #require(held(first), "heldSeconds is a number: \(first)")
            let waiter = try #require((first["waiters"] as? [[String: Any]])?.first)
            #expect(waiter["waitingSeconds"] is Double, "\(first)")
            try EndToEnd.Failures.waitUntil("the held age to grow", timeout: .seconds(20)) {
                (held(try db()) ?? 0) >= start + 1
            }

            let text = try cluster.cli(["locks"])
            let row = text.stdout.split(separator: "\n").first { $0.hasPrefix("db ") }.map(String.init) ?? ""
            #expect(row.contains("held ") && row.contains(" s"), "\(text)")
            #expect(row.contains("\(group)/waiter (waiting "), "\(text)")

            let workers = try EndToEnd.Failures.workers(cluster)
            let w1 = try #require(workers.first { $0["name"] as? String == "w1" })
            let heard = try #require(w1["lastHeardSeconds"] as? Double, "\(workers)")
            #expect(heard >= 0 && heard < 30)
            let table = try cluster.cli(["workers"])
            #expect(table.stdout.contains("last heard ") && table.stdout.contains(" ago"), "\(table)")
        }
    }
}
