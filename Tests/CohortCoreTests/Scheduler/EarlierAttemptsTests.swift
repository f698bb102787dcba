import CohortSpec
import Testing

@testable import CohortCore

/// A child's earlier attempts (issue 15: the group page shows every attempt of a child): each
/// attempt that reached a worker and was followed by another is kept, with its worker, times
/// and how it ended.
@Suite struct EarlierAttemptsTests {
    @Test func aChildThatFailsThenSucceedsKeepsItsFailedAttempt() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 3, backoff: .zero))]), id: "g")
        let first = try #require(h.attempt("a"))
        try h.start(first)
        let startedAt = h.now
        h.advance(.seconds(2))
        try h.fail("a", error: "exit code 2")
        let waiting = try h.child("g", "a")
        #expect(
            waiting.earlierAttempts == [
                EndedAttempt(
                    attempt: 1, worker: "worker-1", startedAt: startedAt, finishedAt: startedAt + .seconds(2),
                    ending: .failed, error: "exit code 2")
            ])
        h.advance(.seconds(1))
        try h.succeed("a")
        let child = try h.child("g", "a")
        #expect(child.phase == .succeeded)
        #expect(child.attempt == 2)
        #expect(child.earlierAttempts.map(\.attempt) == [1])
        #expect(child.earlierAttempts.first?.error == "exit code 2")
        #expect(child.earlierAttempts.first?.ending == .failed)
    }

    @Test func aWorkerLostMidAttemptLeavesALostEarlierAttempt() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        try h.start(try #require(h.attempt("a")))
        h.advance(.seconds(1))
        h.running.removeAll()
        h.record(h.scheduler.workerLost(one, reason: "connection closed", now: h.now))
        h.addWorker(2)
        try h.succeed("a")
        let child = try h.child("g", "a")
        #expect(child.phase == .succeeded)
        #expect(child.workerName == "worker-2")
        let earlier = try #require(child.earlierAttempts.first)
        #expect(child.earlierAttempts.count == 1)
        #expect(earlier.attempt == 1)
        #expect(earlier.worker == "worker-1")
        #expect(earlier.ending == .lost)
        #expect(earlier.startedAt == .zero)
        #expect(earlier.finishedAt == .zero + .seconds(1))
        #expect(earlier.error == "worker worker-1 (w-1) was lost: connection closed")
    }

    @Test func aTimedOutAttemptThatIsRetriedEndsTimedOut() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 2, backoff: .zero))]), id: "g")
        try h.finish(try #require(h.attempt("a")), .cancelled(reason: .timedOut))
        try h.succeed("a")
        let child = try h.child("g", "a")
        #expect(child.earlierAttempts.map(\.ending) == [.timedOut])
        #expect(child.earlierAttempts.first?.error == "timed out")
    }

    @Test func aChildThatRanOnceHasNoEarlierAttempts() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 3)), leaf("b")]), id: "g")
        try h.succeed("a")
        try h.fail("b")
        #expect(try h.child("g", "a").earlierAttempts.isEmpty)
        // The last attempt is the latest, not an earlier one, however it ended.
        #expect(try h.child("g", "b").earlierAttempts.isEmpty)
    }

    @Test func onlyTheLastAttemptsAreKept() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 14, backoff: .zero))]), id: "g")
        for number in 1...13 { try h.fail("a", error: "failure \(number)") }
        try h.succeed("a")
        let child = try h.child("g", "a")
        #expect(child.attempt == 14)
        #expect(child.earlierAttempts.map(\.attempt) == Array(4...13))
        #expect(child.earlierAttempts.last?.error == "failure 13")
    }
}
