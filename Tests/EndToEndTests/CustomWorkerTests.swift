import Foundation
import Testing

extension EndToEnd {
    @Suite struct CustomWorker {
        /// The `custom-worker` example joins a cluster and serves its own kinds, and its
        /// `print-report` procedures take the cluster-wide `printer` lock.
        @Test func customWorkerServesItsOwnKinds() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addCustomWorker(name: "words-1", labels: ["text"])
            try cluster.addWorker(name: "plain")

            let workers = try JSON.array(try cluster.cli(["workers", "--json"]).stdout)
            #expect(Set(workers.compactMap { $0["name"] as? String }) == ["words-1", "plain"])

            let spec = """
                name: custom
                children:
                  - { name: count, run: wordcount, requires: [text], with: { text: "the quick brown fox\\njumps" } }
                  - { name: report-1, run: print-report, with: { title: "Q3", pages: 3 } }
                  - { name: report-2, run: print-report, with: { title: "Q4", pages: 2 } }
                """
            let (status, final) = try cluster.submitAndWait(spec, name: "custom.yaml")
            #expect(status == 0, "\(final)")
            #expect(final.children.allSatisfy { $0["worker"] as? String == "words-1" })

            let group = try #require(final["id"] as? String)
            let counts = try JSON.object(try cluster.cli(["result", group, "count", "--json"]).stdout)
            #expect(counts["words"] as? Int == 5)
            #expect(counts["lines"] as? Int == 2)
            var tokens: [Int] = []
            for report in ["report-1", "report-2"] {
                let printed = try JSON.object(try cluster.cli(["result", group, report, "--json"]).stdout)
                tokens += [(printed["fencingToken"] as? Int) ?? 0]
            }
            #expect(
                Set(tokens).count == 2 && tokens.allSatisfy { $0 > 0 }, "each print held the printer lock: \(tokens)")
        }

        /// A custom worker joins a CURVE cluster with the same key files as `cohort worker`:
        /// by `--key`/`--server-key`, or by COHORT_KEY_FILE/COHORT_SERVER_KEY; the coordinator
        /// admits both keys (it refuses any peer without an authorised key) and runs work there.
        @Test func customWorkersJoinACurveClusterWithKeyFlagsOrTheEnvironment() throws {
            let keys = try Keys([("words-1", "worker"), ("words-2", "worker"), ("alice", "client")])
            let cluster = try Cluster(coordinatorArguments: keys.coordinator)
            defer { cluster.stop() }
            try cluster.addCustomWorker(name: "words-1", labels: ["one"], extra: keys.peer("words-1"))
            try cluster.addCustomWorker(
                name: "words-2", labels: ["two"],
                environment: [
                    "COHORT_KEY_FILE": "\(keys.directory)/words-2.key",
                    "COHORT_SERVER_KEY": "\(keys.directory)/coordinator.pub",
                ])
            let spec = try Scratch.write(
                """
                name: curve-custom
                children:
                  - { name: one, run: wordcount, requires: [one], with: { text: "a b c" } }
                  - { name: two, run: wordcount, requires: [two], with: { text: "d e" } }
                """, name: "curve-custom.yaml")
            let run = try cluster.cli(["submit", spec, "--wait", "--json"] + keys.peer("alice"))
            #expect(run.status == 0, "\(run)")
            let status = try JSON.object(run.stdout)
            #expect(status.state == "succeeded")
            #expect(status.child("one")?["worker"] as? String == "words-1")
            #expect(status.child("two")?["worker"] as? String == "words-2")
            // A key file that cannot be read is named, and the worker does not start.
            let broken = try Subprocess(
                Binaries.customWorker,
                [
                    "--coordinator", cluster.endpoint, "--key", "/no/such/words.key", "--server-key",
                    "\(keys.directory)/coordinator.pub",
                ],
                name: "custom-worker with a missing key")
            defer { broken.stop() }
            #expect(try broken.wait(timeout: .seconds(20)) == 64)
            #expect(broken.stderr.contains("--key: /no/such/words.key: cannot read the file"), "\(broken.stderr)")
        }
    }
}
