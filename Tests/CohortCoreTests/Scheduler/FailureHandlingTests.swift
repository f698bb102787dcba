import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// Issue 5 at the scheduler's level: timeouts from submission, every attempt's error in the
/// final one, handed-back attempts, draining workers, and superseded attempts' late reports.
@Suite struct FailureHandlingTests {
    @Test func aGroupsTimeoutRunsFromItsSubmissionEvenBeforeAnythingStarts() throws {
        var h = SchedulerHarness()
        // No worker offers "resize": the only child waits, parked, and never starts.
        try h.submit(GroupSpec("g", timeout: .seconds(5), children: [leaf("a", "resize")]), id: "g")
        h.advance(.seconds(4))
        #expect(h.finished["g"] == nil)
        h.advance(.seconds(1))
        #expect(h.finished["g"]?.phase == .cancelled)
        #expect(h.finished["g"]?.reason == "timed out")
        #expect(try h.child("g", "a").phase == .cancelled)
    }

    @Test func aGroupsTimeoutCountsTheTimeItWaitedForALock() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(GroupSpec("holder", children: [leaf("hold", exclusive: ["db"])]), id: "holder")
        h.advance(.seconds(3))
        try h.submit(GroupSpec("g", timeout: .seconds(5), children: [leaf("a", exclusive: ["db"])]), id: "g")
        h.advance(.seconds(3))
        try h.succeed("hold")
        #expect(h.attempt("a") != nil, "started 3 s after its submission")
        h.advance(.seconds(2))
        #expect(h.cancels.values.contains("timed out"), "5 s after submission, not after its start")
        try h.acknowledgeCancels()
        #expect(h.finished["g"]?.phase == .cancelled)
    }

    @Test func theFinalErrorNamesEveryAttemptsError() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 3))]), id: "g")
        try h.fail("a", error: "exit code 1")
        try h.finish(try #require(h.attempt("a")), .cancelled(reason: .timedOut))
        try h.fail("a", error: "exit code 3")
        let child = try h.child("g", "a")
        #expect(child.phase == .failed)
        #expect(child.error == "attempt 1: exit code 1; attempt 2: timed out; attempt 3: exit code 3")
        #expect(
            h.finished["g"]?.reason
                == "\"a\" failed: attempt 1: exit code 1; attempt 2: timed out; attempt 3: exit code 3")
    }

    @Test func aSingleAttemptsErrorIsShownAlone() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        try h.fail("a", error: "exit code 2")
        #expect(try h.child("g", "a").error == "exit code 2")
    }

    /// A worker loss is one of the attempts the final error names; it ran again on the
    /// worker-loss budget, so a child without `retry` still had its own attempt (issue 12, item 4).
    @Test func aWorkerLossIsOneOfTheAttemptsTheFinalErrorNames() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        try h.start(try #require(h.attempt("a")))
        h.running.removeAll()
        h.record(h.scheduler.workerLost(one, reason: "connection closed", now: h.now))
        h.addWorker(2)
        try h.fail("a", error: "exit code 4")
        #expect(
            try h.child("g", "a").error
                == "attempt 1: worker worker-1 (w-1) was lost: connection closed; attempt 2: exit code 4")
    }

    @Test func handedBackAttemptsDoNotUseUpTheRetryBudget() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1)
        // No retry at all: one attempt that counts.
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        let first = try #require(h.attempt("a"))
        try h.start(first)
        h.record(h.scheduler.workerDraining(one, now: h.now))
        h.running.removeAll()
        h.record(h.scheduler.workerLost(one, reason: "it disconnected", handedBack: true, now: h.now))
        #expect(try h.child("g", "a").phase == .waiting)
        let two = h.addWorker(2)
        let second = try #require(h.attempt("a"))
        #expect(second.ref.attempt == 2)
        #expect(h.running[second.ref.id]?.worker == two)
        try h.succeed("a")
        #expect(h.finished["g"]?.phase == .succeeded)
    }

    @Test func aDrainingWorkerGetsNoNewWorkAndFinishesWhatItRuns() throws {
        var h = SchedulerHarness(prefetch: 0)
        let one = h.addWorker(1, slots: 1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        let a = try #require(h.attempt("a"))
        #expect(h.running[a.ref.id]?.worker == one)
        h.record(h.scheduler.workerDraining(one, now: h.now))
        try h.submit(GroupSpec("h", children: (1...4).map { leaf("c\($0)") }), id: "h")
        #expect(h.running.count == 1, "nothing new goes to a draining worker")
        try h.succeed("a")
        #expect(h.finished["g"]?.phase == .succeeded)
        #expect(h.running.isEmpty)
        let two = h.addWorker(2, slots: 4)
        #expect(h.running.count == 4)
        #expect(h.running.values.allSatisfy { $0.worker == two })
    }

    @Test func aWorkerThatReconnectsWhileDrainingGetsNoWorkBetweenItsReadyAndItsDrainingMessage() throws {
        var h = SchedulerHarness(prefetch: 0)
        let one = h.addWorker(1, slots: 2)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        let a = try #require(h.attempt("a"))
        h.record(h.scheduler.workerDraining(one, now: h.now))
        // Work is waiting when worker-1 comes back in a new session, still draining: READY
        // says so, and nothing is dispatched before its `draining` message would arrive.
        try h.submit(GroupSpec("h", children: [leaf("b")]), id: "h")
        let again = h.scheduler.workerReady(
            SessionID(5), name: "worker-1", host: "host", labels: [], slots: 2, kinds: SchedulerHarness.builtins,
            running: [a.ref], draining: true, now: h.now)
        h.record(again)
        #expect(!again.contains { if case .dispatch = $0 { true } else { false } })
        #expect(h.scheduler.membership.workers[SessionID(5)]?.state == .draining)
        // Without the flag the same READY takes the waiting child at once.
        var plain = SchedulerHarness(prefetch: 0)
        plain.addWorker(1, slots: 2)
        plain.record(plain.scheduler.workerDraining(SessionID(1), now: plain.now))
        try plain.submit(GroupSpec("h", children: [leaf("b")]), id: "h")
        let ready = plain.scheduler.workerReady(
            SessionID(5), name: "worker-1", host: "host", labels: [], slots: 2, kinds: SchedulerHarness.builtins,
            now: plain.now)
        #expect(ready.contains { if case .dispatch(SessionID(5), _) = $0 { true } else { false } })
    }

    @Test func aSupersededAttemptsLateResultIsRefusedAndNeverOverwritesTheNewOutcome() throws {
        var h = SchedulerHarness {
            $0.heartbeatInterval = .seconds(1)
            $0.liveness = 3
        }
        let one = h.addWorker(1, slots: 1)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: RetryPolicy(attempts: 3))]), id: "g")
        let first = try #require(h.attempt("a"))
        try h.start(first)
        let two = h.addWorker(2, slots: 1)
        // Worker 1 goes silent (SIGSTOP) past its liveness; worker 2 keeps heartbeating.
        for _ in 0..<4 {
            h.now = h.now + .seconds(1)
            h.scheduler.workerHeard(two, now: h.now)
            h.record(h.scheduler.tick(now: h.now))
        }
        #expect(h.scheduler.membership.workers[one] == nil)
        h.running[first.ref.id] = nil
        let second = try #require(h.attempt("a"))
        #expect(second.ref.attempt == 2 && h.running[second.ref.id]?.worker == two)
        try h.start(second)

        // Before the new attempt finishes: the late result changes nothing.
        #expect(throws: SchedulerError.self) {
            try h.scheduler.attemptFinished(
                first.ref, outcome: .succeeded(output: Data("\"late\"".utf8)), worker: one, now: h.now)
        }
        #expect(try h.child("g", "a").phase == .running)
        try h.succeed("a", output: ["from": "attempt 2"])
        // After: neither the old session nor a new session of the same worker may overwrite it.
        let rejoined = SessionID(9)
        h.record(
            h.scheduler.workerReady(
                rejoined, name: "worker-1", host: "host", labels: [], slots: 1, kinds: SchedulerHarness.builtins,
                running: [first.ref], now: h.now))
        #expect(h.cancels[first.ref.id] == "superseded by attempt 2")
        for worker in [one, rejoined] {
            do {
                _ = try h.scheduler.attemptFinished(
                    first.ref, outcome: .failed(error: "late"), worker: worker, now: h.now)
                Issue.record("a late result from \(worker) was accepted")
            } catch {
                #expect(error.code == .superseded)
            }
        }
        guard case .succeeded(let output) = try h.scheduler.result("g", path: "a") else {
            Issue.record("the child did not keep its success")
            return
        }
        #expect(try JSONValue(jsonData: output) == ["from": "attempt 2"])
        #expect(h.finished["g"]?.phase == .succeeded)
    }

    /// A READY adopts only what an earlier session of the same worker ran (or a session before
    /// a restart): a worker that kept a result of another coordinator's attempt with the same
    /// id and group (a coordinator without a journal numbers both from 1 again) neither takes
    /// the attempt from the worker running it nor has its result accepted.
    @Test func aReadyListingAnAttemptAnotherWorkerRunsDoesNotTakeIt() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1, slots: 1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        let a = try #require(h.attempt("a"))
        #expect(h.running[a.ref.id]?.worker == one)
        try h.start(a)
        let stranger = SessionID(2)
        h.record(
            h.scheduler.workerReady(
                stranger, name: "worker-2", host: "host", labels: [], slots: 1, kinds: SchedulerHarness.builtins,
                running: [a.ref], started: [a.ref.id], now: h.now))
        #expect(h.cancels[a.ref.id] != nil, "the stranger is told to drop it")
        #expect(throws: SchedulerError.self) {
            try h.scheduler.attemptFinished(
                a.ref, outcome: .succeeded(output: Data("\"stale\"".utf8)), worker: stranger, now: h.now)
        }
        #expect(try h.child("g", "a").phase == .running)
        try h.succeed("a", output: ["from": "worker-1"])
        guard case .succeeded(let output) = try h.scheduler.result("g", path: "a") else {
            Issue.record("the child did not keep the real worker's success")
            return
        }
        #expect(try JSONValue(jsonData: output) == ["from": "worker-1"])
    }

    @Test func aLostWorkersGrantIsRevokedTheNextHolderGetsALargerTokenAndALateReleaseChangesNothing() throws {
        var h = SchedulerHarness {
            $0.heartbeatInterval = .seconds(1)
            $0.liveness = 3
        }
        let one = h.addWorker(1, slots: 1)
        try h.submit(GroupSpec("g", children: [leaf("outer")]), id: "g")
        let outer = try #require(h.attempt("outer"))
        try h.start(outer)
        // A procedure inside the running attempt takes the cluster-wide "db" lock.
        h.record(h.scheduler.lockRequested(1, by: one, for: outer.ref, categories: ["db"], now: h.now))
        let firstToken = try #require(grantedTokens(h.log, request: 1)["db"])

        // Two slots: the lost attempt runs again there too (a worker loss).
        let two = h.addWorker(2, slots: 2)
        try h.submit(GroupSpec("other", children: [leaf("user", exclusive: ["db"])]), id: "other")
        #expect(h.attempt("user") == nil, "waits for the lock worker 1 holds")
        for _ in 0..<4 {
            h.now = h.now + .seconds(1)
            h.scheduler.workerHeard(two, now: h.now)
            h.record(h.scheduler.tick(now: h.now))
        }
        #expect(h.scheduler.membership.workers[one] == nil)
        let user = try #require(h.attempt("user"), "the revoked lock went to the next waiter")
        let nextToken = try #require(user.tokens["db"])
        #expect(nextToken > firstToken)

        // Worker 1's late release (its old session's request 1) does not free worker 2's grant.
        h.record(h.scheduler.lockReleased(1, by: one, now: h.now))
        #expect(h.scheduler.locks.holder(of: "db") == .attempt(user.ref.id))
        try h.submit(GroupSpec("third", children: [leaf("waiter", exclusive: ["db"])]), id: "third")
        #expect(h.attempt("waiter") == nil)
        try h.succeed("user")
        #expect(try #require(h.attempt("waiter")).tokens["db"]! > nextToken)
    }

    @Test func exponentialBackoffDoublesUpToItsCapAndJitterShortensEachWait() {
        let policy = RetryPolicy(attempts: 6, backoff: .seconds(1), strategy: .exponential, maxBackoff: .seconds(5))
        #expect(
            (1...5).map { policy.delay(afterFailedAttempt: $0, unitRandom: 0.9) }
                == [1, 2, 4, 5, 5].map { Duration.seconds($0) })
        let fixed = RetryPolicy(attempts: 3, backoff: .seconds(2))
        #expect(fixed.delay(afterFailedAttempt: 2, unitRandom: 0.5) == .seconds(2))
        var jittered = policy
        jittered.jitter = 0.5
        #expect(jittered.delay(afterFailedAttempt: 2, unitRandom: 0) == .seconds(2))
        #expect(jittered.delay(afterFailedAttempt: 2, unitRandom: 0.5) == .milliseconds(1500))
        #expect(jittered.delay(afterFailedAttempt: 2, unitRandom: 0.999_999) > .seconds(1))
    }

    /// The times (after each failure) at which the next attempts of an exponential, jittered
    /// retry are dispatched, with the scheduler's generator seeded by `seed`.
    private func retryWaits(seed: UInt64) throws -> [Duration] {
        var h = SchedulerHarness { $0.randomSeed = seed }
        h.addWorker(1)
        let policy = RetryPolicy(attempts: 4, backoff: .seconds(1), strategy: .exponential, jitter: 0.5)
        try h.submit(GroupSpec("g", children: [leaf("a", retry: policy)]), id: "g")
        var waits: [Duration] = []
        for _ in 1...3 {
            try h.fail("a")
            let failedAt = h.now
            while h.attempt("a") == nil { h.advance(.milliseconds(10)) }
            waits.append(h.now - failedAt)
        }
        return waits
    }

    @Test func jitteredExponentialRetriesWaitWithinTheirWindowReproduciblyForASeed() throws {
        let waits = try retryWaits(seed: 42)
        for (index, wait) in waits.enumerated() {
            let full = Duration.seconds(1 << index)
            #expect(wait >= full * 0.5 && wait <= full + .milliseconds(10), "retry \(index + 1) waited \(wait)")
        }
        #expect(try retryWaits(seed: 42) == waits, "the same seed, the same waits")
        #expect(try retryWaits(seed: 7) != waits, "another seed, other waits")
    }

    private func grantedTokens(_ log: [SchedulerAction], request: UInt64) -> [String: UInt64] {
        for case .grant(_, let id, let tokens) in log where id == request { return tokens }
        return [:]
    }
}
