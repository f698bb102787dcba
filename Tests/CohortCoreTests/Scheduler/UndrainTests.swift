import CohortSpec
import Testing

@testable import CohortCore

/// Operator drains (`cohort drain`) and undrains (`cohort undrain`): a drain belongs to the
/// worker's name and lasts across its sessions until it is undrained.
@Suite struct UndrainTests {
    @Test func anUndrainedWorkerTakesTheWorkThatWaitedForIt() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1, slots: 1)
        h.record(h.scheduler.workerDrainedByOperator(one, now: h.now))
        #expect(h.scheduler.membership.workers[one]?.state == .draining)
        #expect(h.scheduler.isDrainedByOperator("worker-1"))
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        #expect(h.running.isEmpty)
        h.record(try h.scheduler.workerUndrained("worker-1", now: h.now))
        #expect(h.scheduler.membership.workers[one]?.state == .ready)
        #expect(!h.scheduler.isDrainedByOperator("worker-1"))
        #expect(h.running.values.map(\.worker) == [one])
    }

    @Test func theSessionIDNamesTheWorkerToo() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1, slots: 1)
        h.record(h.scheduler.workerDrainedByOperator(one, now: h.now))
        h.record(try h.scheduler.workerUndrained(one.description, now: h.now))
        #expect(h.scheduler.membership.workers[one]?.state == .ready)
    }

    @Test func aDrainLastsAcrossANewSessionOfTheSameName() throws {
        var h = SchedulerHarness()
        let first = h.addWorker(1, slots: 1)
        h.record(h.scheduler.workerDrainedByOperator(first, now: h.now))
        h.record(h.scheduler.workerLost(first, reason: "restarted", now: h.now))
        // The worker's process comes back with a new session of the same name: still drained.
        let second = SessionID(7)
        h.record(
            h.scheduler.workerReady(
                second, name: "worker-1", host: "host", labels: [], slots: 1, kinds: SchedulerHarness.builtins,
                now: h.now))
        #expect(h.scheduler.membership.workers[second]?.state == .draining)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        #expect(h.running.isEmpty)
        h.record(try h.scheduler.workerUndrained("worker-1", now: h.now))
        #expect(h.running.values.map(\.worker) == [second])
    }

    @Test func aDrainedWorkerThatIsNotConnectedCanBeUndrainedByName() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1, slots: 1)
        h.record(h.scheduler.workerDrainedByOperator(one, now: h.now))
        h.record(h.scheduler.workerLost(one, reason: "gone", now: h.now))
        h.record(try h.scheduler.workerUndrained("worker-1", now: h.now))
        let again = h.addWorker(1, slots: 1)
        #expect(h.scheduler.membership.workers[again]?.state == .ready)
    }

    @Test func undrainingAnUnknownWorkerIsNotFound() {
        var h = SchedulerHarness()
        h.addWorker(1)
        #expect(throws: SchedulerError(.notFound, "no worker named \"nobody\" is connected or drained")) {
            try h.scheduler.workerUndrained("nobody", now: h.now)
        }
    }

    @Test func undrainingAWorkerThatIsNotDrainedIsRefused() {
        var h = SchedulerHarness()
        h.addWorker(1)
        #expect(throws: SchedulerError(.invalidRequest, "worker \"worker-1\" is not drained")) {
            try h.scheduler.workerUndrained("worker-1", now: h.now)
        }
    }

    @Test func aWorkerThatStopsItselfCannotBeUndrained() {
        var h = SchedulerHarness()
        let one = h.addWorker(1)
        h.record(h.scheduler.workerDraining(one, now: h.now))
        #expect(throws: SchedulerError.self) { try h.scheduler.workerUndrained("worker-1", now: h.now) }
        do {
            _ = try h.scheduler.workerUndrained("worker-1", now: h.now)
        } catch {
            #expect(error.code == .invalidRequest && error.message.contains("stopping"))
        }
        #expect(h.scheduler.membership.workers[one]?.state == .draining)
    }

    @Test func undrainKeepsAWorkerThatAlsoStopsItselfDraining() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1)
        h.record(h.scheduler.workerDrainedByOperator(one, now: h.now))
        h.record(h.scheduler.workerDraining(one, now: h.now))
        h.record(try h.scheduler.workerUndrained("worker-1", now: h.now))
        #expect(h.scheduler.membership.workers[one]?.state == .draining)
        #expect(!h.scheduler.isDrainedByOperator("worker-1"))
    }
}
