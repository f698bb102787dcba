import CohortClient
import Foundation
import Testing

@testable import CohortDashboard

/// A child's earlier attempts in the HTTP API (docs/http.md, `GET /api/groups/ID`).
@Suite struct EarlierAttemptsJSONTests {
    @Test func aChildListsItsEarlierAttemptsWithRFC3339Times() throws {
        let started = WireTimestamp(nanosecondsSinceEpoch: 1_764_108_603_200_000_000)
        let finished = WireTimestamp(nanosecondsSinceEpoch: 1_764_108_603_650_000_000)
        let child = ChildStatus(
            name: "checkout", path: "checkout", state: .succeeded, worker: "builder-1", attempt: 3, kind: "shell",
            earlierAttempts: [
                AttemptSummary(
                    attempt: 1, worker: "builder-2", startedAt: started, finishedAt: finished, outcome: "failed",
                    error: "exited with code 128"),
                AttemptSummary(attempt: 2, worker: "w-4", finishedAt: finished, outcome: "lost", error: "gone"),
            ])
        let json = try #require(
            try JSONSerialization.jsonObject(with: DashboardJSON.child(child).jsonData()) as? [String: Any])
        let earlier = try #require(json["earlierAttempts"] as? [[String: Any]])
        #expect(earlier.count == 2)
        #expect(earlier[0]["attempt"] as? Int == 1)
        #expect(earlier[0]["worker"] as? String == "builder-2")
        #expect(earlier[0]["startedAt"] as? String == "2025-11-25T22:10:03.200Z")
        #expect(earlier[0]["finishedAt"] as? String == "2025-11-25T22:10:03.650Z")
        #expect(earlier[0]["outcome"] as? String == "failed")
        #expect(earlier[0]["error"] as? String == "exited with code 128")
        #expect(earlier[1]["startedAt"] is NSNull, "an attempt that never started has a null start")
        #expect(earlier[1]["outcome"] as? String == "lost")

        let single = ChildStatus(name: "lint", path: "lint", state: .running, attempt: 1)
        let plain = try #require(
            try JSONSerialization.jsonObject(with: DashboardJSON.child(single).jsonData()) as? [String: Any])
        #expect((plain["earlierAttempts"] as? [Any])?.isEmpty == true)
    }
}
