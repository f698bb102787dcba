import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// Cancellation reasons are typed: the scheduler decides by the case (a worker's timeout is
/// retried, nothing else is), and results keep the case, with the words users saw before.
@Suite struct CancellationReasonTests {
    @Test func onlyAWorkerSideTimeoutIsRetriedWhateverTheWordsSay() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        let retry = RetryPolicy(attempts: 2)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: retry), leaf("b", retry: retry)]), id: "g")
        // The same words without the code: a cancel, final.
        try h.finish(try #require(h.attempt("a")), .cancelled(reason: .custom("timed out")))
        #expect(try h.child("g", "a").phase == .cancelled)
        // The code: a timeout, retried like a failure.
        try h.finish(try #require(h.attempt("b")), .cancelled(reason: .timedOut))
        #expect(try h.child("g", "b").phase != .cancelled)
        #expect(h.attempt("b")?.ref.attempt == 2)
        // Its last attempt times out too: the child ends cancelled, `timed out` after every attempt's.
        try h.finish(try #require(h.attempt("b")), .cancelled(reason: .timedOut))
        #expect(try h.child("g", "b").error == "attempt 1: timed out; attempt 2: timed out")
        // Its result keeps the code: every attempt timed out, so the child did.
        #expect(try h.scheduler.result("g", path: "b") == .cancelled(reason: .timedOut))
    }

    /// The code decides, not the words: a worker's timeout in words of its own is retried, and
    /// its attempt is kept as timed out.
    @Test func aTimeoutInOtherWordsIsStillATimeout() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 2))]), id: "g")
        let words = CancellationReason(code: .timedOut, text: "timed out after 30 s")
        try h.finish(try #require(h.attempt("a")), .cancelled(reason: words))
        #expect(h.attempt("a")?.ref.attempt == 2)
        #expect(try h.child("g", "a").earlierAttempts.map(\.ending) == [.timedOut])
    }

    @Test func aChildWhoseLastAttemptTimedOutAfterAFailureEndsTimedOut() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 2))]), id: "g")
        try h.finish(try #require(h.attempt("a")), .failed(error: "exit code 2"))
        try h.finish(try #require(h.attempt("a")), .cancelled(reason: .timedOut))
        #expect(try h.child("g", "a").phase == .cancelled)
        #expect(try h.child("g", "a").error == "attempt 1: exit code 2; attempt 2: timed out")
        #expect(try h.scheduler.result("g", path: "a") == .cancelled(reason: .timedOut))
    }

    @Test func resultsKeepTheReasonsCaseAndItsWords() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(
            GroupSpec(
                "g", timeout: .seconds(5),
                children: [
                    leaf("a"), leaf("b", after: ["a"]), leaf("slow"),
                    leaf("c", inject: [Injection(from: "a", into: "x")]),
                ]),
            id: "g")
        try h.fail("a")
        #expect(
            try h.scheduler.result("g", path: "b")
                == .cancelled(reason: .dependencyFailed(path: "a", cancelled: false, policy: .cancelDependents)))
        #expect(try h.scheduler.result("g", path: "c") == .cancelled(reason: .producerFailed(path: "a")))
        #expect(CancellationReason.producerFailed(path: "a").text == "producer \"a\" failed")
        h.advance(.seconds(5))
        #expect(h.cancels.values.contains("timed out"))
        try h.acknowledgeCancels()
        #expect(try h.scheduler.result("g", path: nil) == .cancelled(reason: .timedOut))
    }

    @Test func everyReasonReadsAsBefore() {
        #expect(CancellationReason.timedOut.text == "timed out")
        #expect(CancellationReason.cancelledByClient("alice").text == "cancelled by alice")
        #expect(CancellationReason.superseded(byAttempt: 3).text == "superseded by attempt 3")
        #expect(CancellationReason.unknownAttempt.text == "the coordinator does not know this attempt")
        #expect(CancellationReason.producerCancelled(path: "p").text == "producer \"p\" was cancelled")
        #expect(CancellationReason.groupFinished.text == "its group finished before it could start")
        #expect(
            CancellationReason.dependencyFailed(path: "a", cancelled: true, policy: .cancelGroup).text
                == "cancelled because \"a\" was cancelled (onChildFailure: cancel-group)")
        #expect(
            CancellationReason.dependencyFailed(path: "a", cancelled: false, policy: .cancelDependents).text
                == "dependency \"a\" failed")
        let words: CancellationReason = "stop"
        #expect(words == .custom("stop") && words.text == "stop")
    }
}
