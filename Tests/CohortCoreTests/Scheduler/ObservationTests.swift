import CohortSpec
import Testing

@testable import CohortCore

/// The scheduler's observations and summary, which the coordinator's metrics are made of.
@Suite struct ObservationTests {
    private func observed(_ h: inout SchedulerHarness) -> [SchedulerObservation] {
        var list: [SchedulerObservation] = []
        h.scheduler.drainObservations { list.append($0) }
        return list
    }

    @Test func nothingIsObservedUnlessAskedFor() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a", exclusive: ["db"])]), id: "g")
        try h.succeed("a")
        #expect(observed(&h).isEmpty)
        #expect(h.scheduler.lockTimes.isEmpty)
    }

    @Test func childrenFinishedAreObservedWithTheirKindAndOutcome() throws {
        var h = SchedulerHarness()
        h.scheduler.observes = true
        h.addWorker(1, slots: 4)
        try h.submit(
            GroupSpec("g", children: [leaf("a", "shell"), leaf("b", "shell"), leaf("c", "echo", after: ["b"])]),
            id: "g")
        try h.succeed("a")
        try h.fail("b")
        let finished = observed(&h).compactMap { observation -> String? in
            if case .childFinished(let kind, let phase) = observation { return "\(kind) \(phase)" }
            return nil
        }
        // c never ran: cancelled because b failed, and still counted once.
        #expect(finished.sorted() == ["echo cancelled", "shell failed", "shell succeeded"])
    }

    @Test func startDelayAndRunTimeAreMeasuredFromTheSchedulersClock() throws {
        var h = SchedulerHarness()
        h.scheduler.observes = true
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        let order = try #require(h.attempt("a"))
        h.now = h.now + .milliseconds(30)
        try h.start(order)
        h.now = h.now + .seconds(2)
        try h.finish(order, .succeeded(output: JSONValue.emptyObject.jsonData()))
        let list = observed(&h)
        #expect(list.contains(.attemptStarted(waited: .milliseconds(30))))
        #expect(list.contains(.attemptFinished(ran: .seconds(2))))
    }

    @Test func anAttemptThatNeverStartedHasNoRunTime() throws {
        var h = SchedulerHarness()
        h.scheduler.observes = true
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        let order = try #require(h.attempt("a"))
        h.now = h.now + .seconds(2)
        // No start report, no start time in the result: it never ran.
        try h.finish(order, .failed(error: "cannot start"))
        let list = observed(&h)
        #expect(!list.contains { if case .attemptFinished = $0 { true } else { false } })
        #expect(list.contains(.childFinished(kind: "echo", .failed)))
    }

    @Test func lockWaitAndHoldAreMeasuredPerCategory() throws {
        var h = SchedulerHarness()
        h.scheduler.observes = true
        h.addWorker(1, slots: 4)
        try h.submit(GroupSpec("g", children: [leaf("a", exclusive: ["db"]), leaf("b", exclusive: ["db"])]), id: "g")
        h.now = h.now + .seconds(3)
        try h.succeed("a")
        h.now = h.now + .seconds(1)
        try h.succeed("b")
        let locks = observed(&h).filter {
            switch $0 {
            case .lockGranted, .lockReleased: true
            default: false
            }
        }
        #expect(
            locks == [
                .lockGranted(category: "db", waited: .zero),
                .lockReleased(category: "db", held: .seconds(3)),
                .lockGranted(category: "db", waited: .seconds(3)),
                .lockReleased(category: "db", held: .seconds(1)),
            ])
        #expect(h.scheduler.lockTimes.isEmpty)
    }

    @Test func aLostWorkersAttemptIsObservedAsRerun() throws {
        var h = SchedulerHarness()
        h.scheduler.observes = true
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        let order = try #require(h.attempt("a"))
        try h.start(order)
        h.running = [:]
        h.record(h.scheduler.workerLost(SessionID(1), reason: "killed", now: h.now))
        #expect(observed(&h).contains(.attemptRerunAfterWorkerLoss))
    }

    @Test func theSummaryCountsGroupsChildrenLocksAndWorkers() throws {
        var h = SchedulerHarness(prefetch: 0)
        h.addWorker(1, slots: 1)
        try h.submit(
            GroupSpec(
                "g",
                children: [
                    leaf("a", exclusive: ["db"]), leaf("b", exclusive: ["db"]), leaf("c", after: ["a"]),
                    leaf("d", exclusive: ["cache"]), leaf("e", requires: ["gpu"]),
                ]), id: "g")
        let order = try #require(h.attempt("a"))
        try h.start(order)
        let summary = h.scheduler.summary()
        #expect(summary.groups == [.running: 1])
        #expect(summary.running == 1)
        #expect(summary.waiting[.lock] == 1)
        #expect(summary.waiting[.dependencies] == 1)
        #expect(summary.waiting[.label] == 1)
        #expect(summary.ready == 1)  // d holds its lock: a slot is all it needs
        #expect(summary.lockHolders == 2 && summary.lockWaiters == 1)
        #expect(summary.workers == [.ready: 1])
        #expect(summary.slots == 1 && summary.slotsInUse == 1)
    }
}
