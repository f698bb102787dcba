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
            #expect(Set(tokens).count == 2 && tokens.allSatisfy { $0 > 0 }, "each print held the printer lock: \(tokens)")
        }
    }
}
