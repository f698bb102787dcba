import Foundation
import Testing

/// Issue 15: `cohort status GROUP --json` lists a child's earlier attempts with their worker,
/// times and how they ended.
extension EndToEnd {
    @Suite struct EarlierAttempts {
        /// A shell child that fails on its first attempt and succeeds on its retry shows the
        /// failed attempt, with its worker and error; a child that ran once shows none.
        @Test func aRetriedChildShowsItsFailedAttemptInStatus() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "solo", slots: 2)
            let spec = """
                name: flaky
                children:
                  - name: flaky
                    run: shell
                    retry: 2
                    with: { command: ["sh", "-c", "if [ \\"$COHORT_ATTEMPT\\" = 1 ]; then echo first try fails >&2; exit 3; fi; echo ok"] }
                  - name: steady
                    run: shell
                    with: { command: ["echo", "steady"] }

                """
            let (code, status) = try cluster.submitAndWait(spec, name: "flaky.yaml")
            #expect(code == 0, "\(status)")
            #expect(status.state == "succeeded", "\(status)")
            let flaky = try #require(status.child("flaky"))
            #expect(flaky["attempt"] as? Int == 2, "\(flaky)")
            let earlier = try #require(flaky["earlierAttempts"] as? [[String: Any]], "\(flaky)")
            #expect(earlier.count == 1, "\(earlier)")
            let first = try #require(earlier.first)
            #expect(first["attempt"] as? Int == 1)
            #expect(first["worker"] as? String == "solo")
            #expect(first["outcome"] as? String == "failed")
            #expect(first["error"] as? String == "exited with code 3: first try fails", "\(first)")
            #expect(first["startedAt"] is String && first["finishedAt"] is String, "\(first)")
            // Still shown after the group finished, through `status GROUP --json`.
            let again = try cluster.status(try #require(status["id"] as? String))
            let shown = try #require(again.child("flaky")?["earlierAttempts"] as? [[String: Any]])
            #expect(shown.map { $0["outcome"] as? String } == ["failed"])
            // The text view names the earlier attempt in the succeeded child's detail.
            let text = try cluster.cli(["status", try #require(status["id"] as? String)])
            #expect(text.stdout.contains("1 earlier: failed on solo: exited with code 3"), "\(text)")
            #expect((status.child("steady")?["earlierAttempts"] as? [Any])?.isEmpty == true, "\(status)")
        }
    }
}
