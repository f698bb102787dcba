import Foundation
import Testing

extension EndToEnd {
    @Suite struct PrefetchWindow {
        /// A worker whose children lately ran short (`echo`, microseconds) is handed twice its
        /// slots beyond them; with `shortAttempt: 0s` only its `prefetch` (0 here). Read from
        /// `cohort workers --json` (`running` counts what it was sent), right after the submit
        /// that placed them: placement is done in the turn that answers it.
        @Test(arguments: [("2ms", 3), ("0s", 1)])
        func shortWorkWidensAWorkersWindow(shortAttempt: String, expectedInFlight: Int) throws {
            let config = try Scratch.write("prefetch: 0\nshortAttempt: \(shortAttempt)\n", name: "coordinator.yaml")
            let cluster = try Cluster(coordinatorArguments: ["--config", config])
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 1)
            let quick = "name: quick\nchildren:\n" + (0..<8).map { "  - { name: e\($0), run: echo }\n" }.joined()
            let (status, _) = try cluster.submitAndWait(quick, name: "quick.yaml")
            #expect(status == 0)
            let slow =
                "name: slow\nchildren:\n"
                + (0..<6).map { "  - { name: s\($0), run: sleep, with: { seconds: 60 } }\n" }.joined()
            let group = try cluster.submit(slow, name: "slow.yaml")
            let workers = try JSON.array(try cluster.cli(["workers", "--json"]).stdout)
            #expect(workers.first?["running"] as? Int == expectedInFlight, "\(workers)")
            #expect(try cluster.cli(["cancel", group]).status == 0)
        }
    }
}
