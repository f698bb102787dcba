import CohortWire
import Foundation
import Testing

@testable import CohortClient

private struct Counts: Codable, Sendable, Equatable { var words: Int }

@Suite struct DescriptionTests {
    let at = WireTimestamp(nanosecondsSinceEpoch: 1_777_629_600_123_000_000)  // 2026-05-01T10:00:00.123Z

    @Test func eventsPrintInWordsNotWireModels() {
        let running = ChildStatus(name: "unit", path: "tests/unit", state: .running, worker: "build-1", attempt: 1)
        let queued = ChildStatus(name: "unit", path: "tests/unit", state: .ready)
        let sent = ChildStatus(name: "unit", path: "tests/unit", state: .ready, worker: "build-1", attempt: 1)
        let waiting = ChildStatus(name: "d", path: "d", state: .waiting, waitingReason: "lock prod held by g/x")
        let failed = ChildStatus(name: "b", path: "b", state: .failed, worker: "w1", attempt: 2, error: "exit status 1")
        #expect("\(at)" == "2026-05-01T10:00:00.123Z")
        #expect(
            "\(GroupEvent.child(running, at: at))"
                == "2026-05-01T10:00:00.123Z tests/unit: running on build-1 (attempt 1)")
        #expect("\(queued)" == "tests/unit: ready")
        #expect("\(sent)" == "tests/unit: ready for build-1 (attempt 1)")
        #expect("\(waiting)" == "d: waiting (lock prod held by g/x)")
        #expect("\(failed)" == "b: failed on w1 (attempt 2): exit status 1")
        let detail = GroupDetail(
            id: "r-1", name: "release", state: .failed, submittedAt: at, reason: "child b failed",
            children: [running, failed])
        #expect(
            "\(GroupEvent.snapshot(detail))"
                == "snapshot: release (r-1): failed, 1 of 2 children finished: child b failed")
        #expect(
            "\(GroupEvent.finished(.cancelled, reason: "timed out", at: at))" == "\(at) finished: cancelled (timed out)"
        )
        let worker = WorkerInfo(
            id: "w-3", name: "build-1", host: "a", labels: ["linux"], slots: 4, running: 1, state: .ready)
        #expect("\(worker)" == "build-1 (w-3) on a: ready, 1 of 4 slots busy, labels linux")
        // A child waiting to be retried still carries the ended attempt's worker: not said.
        let retrying = ChildStatus(
            name: "n", path: "n", state: .waiting, worker: "w1", attempt: 1,
            waitingReason: "retrying after attempt 1 ended: boom")
        #expect("\(retrying)" == "n: waiting (retrying after attempt 1 ended: boom)")
        let receipt = SubmitReceipt(id: "r-2", name: "release", warnings: ["no connected worker offers kind \"x\""])
        #expect("\(receipt)" == "release (r-2) accepted; warning: no connected worker offers kind \"x\"")
    }

    @Test func outcomesPrintAndDecode() throws {
        let succeeded = ChildOutcome.succeeded(["words": 5])
        #expect("\(succeeded)" == #"succeeded: {"words":5}"#)
        #expect(try succeeded.output(as: Counts.self) == Counts(words: 5))
        #expect("\(ChildOutcome.failed("boom"))" == "failed: boom")
        #expect(throws: ClientError(.childFailed, "the child failed: boom")) {
            try ChildOutcome.failed("boom").output(as: Counts.self)
        }
        do {
            _ = try ChildOutcome.succeeded(["count": 5]).output(as: Kind<Int, Counts>("k"))
            Issue.record("decoded a mismatched output")
        } catch {
            #expect(error.code == .undecodable)
            #expect(error.message.contains("words: missing"), "\(error)")
        }
    }
}
