import CohortSpec
import Testing

@testable import CohortCore

@Suite struct RetryAndLossTests {
    @Test func aFailedAttemptIsRetriedAfterItsBackoffWithinTheBudget() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(
            GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 3, backoff: .seconds(2)))]), id: "g")
        try h.fail("a", error: "first")
        #expect(h.running.isEmpty)
        let waiting = try h.child("g", "a")
        #expect(waiting.phase == .waiting)
        #expect(waiting.waitingReason == "retrying after attempt 1 ended: first")
        h.advance(.seconds(1))
        #expect(h.running.isEmpty)
        h.advance(.seconds(1))
        #expect(h.attempt("a")?.ref.attempt == 2)
        try h.fail("a", error: "second")
        h.advance(.seconds(2))
        try h.fail("a", error: "third")
        #expect(h.running.isEmpty)
        #expect(try h.child("g", "a").phase == .failed)
        #expect(try h.child("g", "a").error == "attempt 1: first; attempt 2: second; attempt 3: third")
        #expect(h.finished["g"]?.phase == .failed)
    }

    /// Issue 12 ("status that lies"): a child that succeeded on a later attempt shows no
    /// error of an earlier one.
    @Test func aChildThatSucceedsOnALaterAttemptShowsNoEarlierError() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 4, backoff: .zero))]), id: "g")
        try h.fail("a", error: "exited with code 3")
        h.advance(.seconds(1))
        try h.succeed("a")
        let child = try h.child("g", "a")
        #expect(child.phase == .succeeded)
        #expect(child.error == nil, "a succeeded child still showed: \(child.error ?? "")")
    }

    @Test func aRetryReleasesItsLocksBetweenAttempts() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            GroupSpec(
                "g",
                children: [
                    leaf("flaky", exclusive: ["db"], retry: RetryPolicy(attempts: 2, backoff: .seconds(5))),
                    leaf("other", exclusive: ["db"]),
                ]), id: "g")
        #expect(h.runningPaths == ["flaky"])
        try h.fail("flaky")
        #expect(h.runningPaths == ["other"])
        try h.succeed("other")
        h.advance(.seconds(5))
        #expect(h.attempt("flaky")?.tokens["db"] == 3)
    }

    @Test func aTimedOutAttemptIsRetriedAndEndsCancelledWhenTheBudgetIsSpent() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 2))]), id: "g")
        try h.finish(try #require(h.attempt("a")), .cancelled(reason: .timedOut))
        try h.finish(try #require(h.attempt("a")), .cancelled(reason: .timedOut))
        #expect(try h.child("g", "a").phase == .cancelled)
        #expect(try h.child("g", "a").error == "attempt 1: timed out; attempt 2: timed out")
    }

    @Test func aLostWorkersAttemptsGetNewAttemptsElsewhere() throws {
        var h = SchedulerHarness(prefetch: 2)
        let one = h.addWorker(1, slots: 1)
        try h.submit(
            GroupSpec("g", children: [leaf("started", retry: RetryPolicy(attempts: 2)), leaf("queued")]), id: "g")
        let started = try #require(h.attempt("started"))
        try h.start(started)
        #expect(h.running.count == 2)
        h.running.removeAll()
        h.record(h.scheduler.workerLost(one, reason: "connection closed", now: h.now))
        #expect(try h.child("g", "started").phase == .waiting)
        let two = h.addWorker(2, slots: 2)
        let again = try #require(h.attempt("started"))
        #expect(again.ref.attempt == 2 && again.ref.id != started.ref.id)
        #expect(h.running[again.ref.id]?.worker == two)
        // An attempt that never started does not count against the budget.
        #expect(h.attempt("queued")?.ref.attempt == 2)
        try h.succeed("started")
        try h.succeed("queued")
        #expect(h.finished["g"]?.phase == .succeeded)
    }

    /// A child that loses more workers than `maxWorkerLosses` fails, listing every loss.
    @Test func aChildFailsOnceItLosesMoreWorkersThanTheBudget() throws {
        var h = SchedulerHarness { $0.maxWorkerLosses = 2 }
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 5))]), id: "g")
        for number in 1...3 {
            let worker = h.addWorker(UInt64(number))
            try h.start(try #require(h.attempt("a")))
            h.running.removeAll()
            h.record(h.scheduler.workerLost(worker, reason: "killed", now: h.now))
            #expect(try h.child("g", "a").phase == (number < 3 ? .waiting : .failed))
        }
        #expect(
            try h.child("g", "a").error
                == "attempt 1: worker worker-1 (w-1) was lost: killed; attempt 2: worker worker-2 (w-2) was lost: "
                + "killed; attempt 3: worker worker-3 (w-3) was lost: killed (3 workers lost while it ran; "
                + "maxWorkerLosses is 2)")
        #expect(h.finished["g"]?.phase == .failed)
    }

    @Test func onWorkerLossFailFailsAtTheFirstLoss() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1)
        try h.submit(
            GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 3), onWorkerLoss: .fail)]), id: "g")
        try h.start(try #require(h.attempt("a")))
        h.running.removeAll()
        h.record(h.scheduler.workerLost(one, reason: "killed", now: h.now))
        let child = try h.child("g", "a")
        #expect(child.phase == .failed)
        #expect(child.error == "worker worker-1 (w-1) was lost: killed (onWorkerLoss: fail)")
    }

    /// A loss costs nothing of the retry budget: `retry: 2` still gets both its own attempts.
    @Test func aRetriedChildKeepsItsRetriesAfterALoss() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1)
        try h.submit(
            GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 2, backoff: .zero))]), id: "g")
        try h.start(try #require(h.attempt("a")))
        h.running.removeAll()
        h.record(h.scheduler.workerLost(one, reason: "killed", now: h.now))
        h.addWorker(2)
        try h.fail("a", error: "first")
        h.advance(.seconds(1))
        #expect(h.attempt("a")?.ref.attempt == 3, "the loss used up a retry")
        try h.succeed("a")
        #expect(h.finished["g"]?.phase == .succeeded)
    }

    @Test func aSilentWorkerIsDeclaredLostAfterItsLivenessIntervals() throws {
        var h = SchedulerHarness {
            $0.heartbeatInterval = .seconds(1)
            $0.liveness = 3
        }
        let one = h.addWorker(1)
        let two = h.addWorker(2)
        for _ in 0..<5 {
            h.now = h.now + .milliseconds(900)
            h.scheduler.workerHeard(two, now: h.now)
            h.record(h.scheduler.tick(now: h.now))
        }
        #expect(h.scheduler.membership.workers[one] == nil)
        #expect(h.scheduler.membership.workers[two] != nil)
        #expect(h.scheduler.workerRecords().first { $0.id == one }?.state == .lost)
    }

    @Test func aReconnectingWorkerKeepsItsRunningAttempts() throws {
        var h = SchedulerHarness()
        let old = h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        let order = try #require(h.attempt("a"))
        try h.start(order)
        let new = SessionID(7)
        h.record(
            h.scheduler.workerReady(
                new, name: "worker-1", host: "host", labels: [], slots: 2, kinds: SchedulerHarness.builtins,
                running: [order.ref, AttemptRef(id: 999, group: "x", path: "y", attempt: 1)], now: h.now))
        #expect(h.scheduler.membership.workers[old] == nil)
        #expect(h.cancels[999] != nil, "unknown attempts are cancelled")
        h.running[order.ref.id] = (new, order)
        try h.succeed("a")
        #expect(h.finished["g"]?.phase == .succeeded)
    }
}
