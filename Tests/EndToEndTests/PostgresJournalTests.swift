import CohortTestSupport
import Foundation
import Testing

/// The coordinator's journal in PostgreSQL (`--journal postgres://…`), with real processes and
/// a real server of the tests' own (``PostgresServer``): a group survives `kill -9` of the
/// coordinator, the history and `cohort rerun` read the database, `cohort prune` prunes it,
/// and a URL or server that cannot be used stops the coordinator naming why.
extension EndToEnd {
    /// The journal a test's coordinator keeps, for the tests that run over both: SQLite in its
    /// state directory, or PostgreSQL in a database of its own on the tests' server.
    enum JournalKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sqlite
        case postgres

        var testDescription: String { rawValue }

        /// The coordinator's arguments that choose this journal (a new database each call).
        func coordinatorArguments() throws -> [String] {
            switch self {
            case .sqlite: []
            case .postgres: ["--journal", try PostgresServer.shared.makeDatabase()]
            }
        }
    }

    @Suite struct PostgresJournal {
        /// The database's name in a URL of ``PostgresServer``.
        static func database(_ url: String) -> String { String(url.split(separator: "/").last ?? "") }

        /// As DurabilityCrash, on PostgreSQL: 30 children on 2 workers, the coordinator killed
        /// with SIGKILL once 10 completed, started again on the same database: the group
        /// finishes `succeeded`, every child ran (a child whose result died with the
        /// coordinator may run again as a new attempt), and the journal has it all.
        @Test func aGroupSurvivesTheCoordinatorKilledMidGroup() throws {
            let server = try PostgresServer.shared
            let url = try server.makeDatabase()
            let config = try Scratch.write("restartGrace: 3s\n", name: "coordinator.yaml")
            let cluster = try Cluster(coordinatorArguments: ["--config", config, "--journal", url])
            defer { cluster.stop() }
            try cluster.addWorkers(2, slots: 4)
            let log = Scratch.file("done.log")
            let children = (1...30).map { index in
                "  - { name: c\(index), run: shell, with: { command: [sh, -c, "
                    + "'sleep 0.1; echo \"$COHORT_CHILD $COHORT_ATTEMPT\" >> \(log)'] } }"
            }
            let id = try cluster.submit("name: pg-crash\nchildren:\n" + children.joined(separator: "\n") + "\n")
            // Accepted means committed: the group is in the database before its id came back.
            #expect(try server.psql("SELECT state FROM groups WHERE id = '\(id)'", database: Self.database(url)) != "")
            let deadline = ContinuousClock.now + .seconds(60)
            while EndToEnd.DurabilityCrash.lineCount(log) < 10 {
                guard ContinuousClock.now < deadline else { throw TestFailure("10 children did not complete in 60 s") }
                usleep(1_000)
            }
            try cluster.killCoordinator()
            let atKill = EndToEnd.DurabilityCrash.lineCount(log)
            try cluster.restartCoordinator()
            let final = try cluster.waitForStatus(id, timeout: .seconds(60)) { status in
                ["succeeded", "failed", "cancelled"].contains(status.state ?? "")
            }
            #expect(atKill < 30, "the group had not finished when the coordinator was killed")
            #expect(final.state == "succeeded", "\(final)")
            let ran = Set(
                ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                    $0.split(separator: " ").first.map(String.init)
                })
            #expect(ran == Set((1...30).map { "c\($0)" }), "every child ran")
            let journaled = try server.psql(
                "SELECT state || ' ' || (SELECT count(DISTINCT path) FROM attempts WHERE group_id = '\(id)' "
                    + "AND state = 'succeeded') FROM groups WHERE id = '\(id)'", database: Self.database(url))
            #expect(journaled.trimmingCharacters(in: .whitespacesAndNewlines) == "succeeded 30", "\(journaled)")
            let epoch = try server.psql("SELECT value FROM meta WHERE key = 'epoch'", database: Self.database(url))
            #expect(epoch.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "one epoch per start")
        }

        /// `cohort status` lists finished groups the coordinator keeps only in the database,
        /// `cohort rerun` reads an earlier group there after a restart, `cohort prune --journal`
        /// deletes finished groups from it.
        @Test func historyRerunAndPruneReadTheDatabase() throws {
            let server = try PostgresServer.shared
            let url = try server.makeDatabase()
            let config = try Scratch.write("finishedGroupRetention: 1\n", name: "coordinator.yaml")
            let cluster = try Cluster(coordinatorArguments: ["--config", config, "--journal", url])
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 2)
            var ids: [String] = []
            for (name, fails) in [("release-1", false), ("nightly-1", true), ("release-2", false)] {
                let (_, final) = try cluster.submitAndWait(
                    EndToEnd.History.group(name, fails: fails), name: "\(name).yaml")
                ids.append(try #require(final["id"] as? String))
            }
            let (r1, n1, r2) = (ids[0], ids[1], ids[2])
            #expect(try EndToEnd.History.listed(cluster, []) == [r2, n1, r1])
            #expect(try EndToEnd.History.listed(cluster, ["--state", "succeeded"]) == [r2, r1])
            #expect(try EndToEnd.History.listed(cluster, ["--name", "nightly-*"]) == [n1])
            #expect(try EndToEnd.History.listed(cluster, ["--name", "release-[!1]"]) == [r2])

            // Restarted, the coordinator knows r1 only from the database: the rerun reads it there.
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            #expect(try EndToEnd.History.listed(cluster, ["--limit", "all"]) == [r2, n1, r1])
            let rerun = try cluster.cli(["rerun", n1, "--json"])
            #expect(rerun.status == 0, "\(rerun)")
            let receipt = try JSON.object(rerun.stdout)
            #expect(receipt["rerunOf"] as? String == n1, "\(receipt)")
            let again = try #require(receipt["id"] as? String)
            let final = try cluster.waitForStatus(again) { ["succeeded", "failed"].contains($0.state ?? "") }
            #expect(final.state == "failed", "the rerun ran `fail` again: \(final)")

            let pruned = try cohort(["prune", "--journal", url, "--older-than", "0s", "--json"])
            #expect(pruned.status == 0, "\(pruned)")
            let report = try JSON.object(pruned.stdout)
            #expect(Set(report["pruned"] as? [String] ?? []) == Set([r1, n1, r2, again]), "\(report)")
            #expect(
                report["journal"] as? String == url.replacingOccurrences(of: ":\(PostgresServer.password)@", with: "@"))
            let left = try server.psql("SELECT count(*) FROM groups", database: Self.database(url))
            #expect(left.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        }

        /// A coordinator whose journal cannot be used stops at start, naming why: a bad URL
        /// exits 64, a server that is not there 69 with its host and port, refused credentials
        /// 77; none prints its password.
        @Test func aJournalThatCannotBeUsedStopsTheCoordinatorNamingWhy() throws {
            let server = try PostgresServer.shared
            let base = ["coordinator", "--endpoint", "tcp://127.0.0.1:*", "--metrics", "off", "--http", "off"]
            let bad = try cohort(base + ["--journal", "postgres://cohort@127.0.0.1:5432"])
            #expect(bad.status == 64, "\(bad)")
            #expect(bad.stderr.contains("--journal") && bad.stderr.contains("no database"), "\(bad)")

            let port = try freeTCPPort()
            let down = try cohort(base + ["--journal", "postgres://cohort:hidden@127.0.0.1:\(port)/cohort"])
            #expect(down.status == 69, "\(down)")
            #expect(down.stderr.contains("127.0.0.1:\(port)"), "\(down)")
            #expect(!down.stderr.contains("hidden"), "\(down)")

            let database = Self.database(try server.makeDatabase())
            let denied = try cohort(base + ["--journal", server.url(database: database, password: "wrong-one")])
            #expect(denied.status == 77, "\(denied)")
            #expect(denied.stderr.contains("refused the credentials of user \"cohort\""), "\(denied)")
            #expect(!denied.stderr.contains("wrong-one"), "\(denied)")

            // The environment and the config key name the journal too.
            let fromEnvironment = try cohort(
                base, environment: ["COHORT_COORDINATOR_JOURNAL": "mysql://cohort@127.0.0.1/cohort"])
            #expect(fromEnvironment.status == 64, "\(fromEnvironment)")
            #expect(fromEnvironment.stderr.contains("COHORT_COORDINATOR_JOURNAL"), "\(fromEnvironment)")
        }
    }
}
