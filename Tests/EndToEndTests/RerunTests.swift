import Foundation
import Testing

extension EndToEnd {
    /// `cohort rerun GROUP`: the spec again as a new group, the procedures that succeeded
    /// reused with their recorded output, the others and what comes after them run again.
    @Suite struct Rerun {
        /// `fetch` counts its runs in a file; `flaky` fails until a marker file exists; `report`
        /// injects `fetch`'s output and waits for `flaky`.
        static func spec(counter: String, marker: String) -> String {
            """
            name: rerun-me
            children:
              - name: fetch
                run: shell
                with: { command: [sh, -c, "echo run >> '\(counter)'; printf fetched"] }
              - name: flaky
                run: shell
                after: [fetch]
                with: { command: [sh, -c, "test -e '\(marker)'"] }
              - name: report
                run: echo
                after: [flaky]
                inject: [{ from: fetch, select: stdout, into: fetched }]
              - { name: docs, run: echo, with: { pages: 3 } }
            """
        }

        static func lines(_ path: String) -> Int {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").count
        }

        @Test(arguments: JournalKind.allCases)
        func aRerunReusesWhatSucceededAndRunsTheRestEvenAfterACoordinatorRestart(_ journal: JournalKind) throws {
            let cluster = try Cluster(coordinatorArguments: try journal.coordinatorArguments())
            defer { cluster.stop() }
            try cluster.addWorkers(1, slots: 2)
            let counter = Scratch.file("fetch-runs")
            let marker = Scratch.file("fixed")

            let (status, first) = try cluster.submitAndWait(
                Self.spec(counter: counter, marker: marker), name: "rerun-me.yaml")
            #expect(status == 1, "\(first)")
            #expect(first.child("flaky")?.state == "failed")
            #expect(first.child("report")?.state == "cancelled")
            #expect(Self.lines(counter) == 1)
            let earlier = try #require(first["id"] as? String)

            // The scheduler forgets nothing here, but a restarted coordinator knows the group
            // only from its journal: the rerun reads it there.
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            #expect(FileManager.default.createFile(atPath: marker, contents: Data()))

            let rerun = try cluster.cli(["rerun", earlier, "--json"])
            #expect(rerun.status == 0, "\(rerun)")
            let receipt = try JSON.object(rerun.stdout)
            let again = try #require(receipt["id"] as? String)
            #expect(again != earlier)
            #expect(receipt["rerunOf"] as? String == earlier)
            #expect(receipt["reused"] as? Int == 2, "fetch and docs: \(receipt)")

            let final = try cluster.waitForStatus(again, timeout: .seconds(60)) { $0.state == "succeeded" }
            #expect(Self.lines(counter) == 1, "fetch did not run again")
            for path in ["fetch", "docs"] {
                #expect(final.child(path)?["reused"] as? Bool == true, "\(path): \(final.children)")
                #expect(final.child(path)?["attempt"] as? Int == 0)
            }
            for path in ["flaky", "report"] {
                #expect(final.child(path)?["reused"] as? Bool == false, "\(path)")
                #expect(final.child(path)?["attempt"] as? Int == 1)
            }
            let report = try JSON.object(try cluster.cli(["result", again, "report", "--json"]).stdout)
            #expect(report["fetched"] as? String == "fetched", "the reused output is injected")
            let docs = try JSON.object(try cluster.cli(["result", again, "docs", "--json"]).stdout)
            #expect(docs["pages"] as? Int == 3)

            // The reused outcomes are journaled with the new group: they survive a restart.
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let restored = try cluster.status(again)
            #expect(restored.state == "succeeded")
            #expect(restored.child("fetch")?["reused"] as? Bool == true, "\(restored.children)")

            // The text view says so.
            let text = try cluster.cli(["status", again])
            #expect(text.stdout.contains("reused (the earlier run's output)"), "\(text.stdout)")
        }

        @Test func whatCannotBeRerunIsRefusedNamingWhy() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(1, slots: 2)

            let itself = try cluster.cli(["rerun", "no-such-group", "--id", "no-such-group"])
            #expect(itself.status == 64, "\(itself)")
            #expect(itself.stderr.contains("a rerun is a new group"), "\(itself.stderr)")

            let unknown = try cluster.cli(["rerun", "no-such-group"])
            #expect(unknown.status == 64, "\(unknown)")
            #expect(unknown.stderr.contains("no group \"no-such-group\""), "\(unknown.stderr)")

            let (status, done) = try cluster.submitAndWait(
                "name: fine\nchildren: [{ name: a, run: echo }]\n", name: "fine.yaml")
            #expect(status == 0)
            let fine = try #require(done["id"] as? String)
            let nothing = try cluster.cli(["rerun", fine])
            #expect(nothing.status == 64, "\(nothing)")
            #expect(nothing.stderr.contains("nothing to re-run"), "\(nothing.stderr)")

            let gate = Scratch.file("gate")
            let running = try cluster.submit(
                """
                name: slow
                children:
                  - { name: wait, run: shell, with: { command: [sh, -c, "while [ ! -e '\(gate)' ]; do sleep 0.05; done"] } }
                """, name: "slow.yaml")
            let busy = try cluster.cli(["rerun", running])
            #expect(busy.status == 64, "\(busy)")
            #expect(busy.stderr.contains("still"), "\(busy.stderr)")
            #expect(FileManager.default.createFile(atPath: gate, contents: Data()))
            _ = try cluster.waitForStatus(running) { $0.state == "succeeded" }
        }

        @Test func aCoordinatorWithoutAJournalRefusesARerun() throws {
            let cluster = try Cluster(coordinatorArguments: ["--no-journal"])
            defer { cluster.stop() }
            try cluster.addWorkers(1, slots: 1)
            let (status, done) = try cluster.submitAndWait(
                "name: broken\nchildren: [{ name: a, run: fail, with: { message: broken } }]\n", name: "broken.yaml")
            #expect(status == 1)
            let group = try #require(done["id"] as? String)
            let result = try cluster.cli(["rerun", group])
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("--no-journal"), "\(result.stderr)")
        }
    }
}
