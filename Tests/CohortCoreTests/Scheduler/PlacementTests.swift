import CohortSpec
import Testing

@testable import CohortCore

@Suite struct PlacementTests {
    @Test func childrenRunOnlyOnWorkersWithAllTheirRequiredLabels() throws {
        var h = SchedulerHarness()
        let plain = h.addWorker(1, slots: 4)
        let gpu = h.addWorker(2, slots: 4, labels: ["gpu", "linux"])
        try h.submit(
            GroupSpec(
                "g",
                children: [
                    leaf("train", requires: ["gpu"]), leaf("both", requires: ["gpu", "linux"]), leaf("any"),
                ]), id: "g")
        #expect(h.running.values.first { $0.order.ref.path == "train" }?.worker == gpu)
        #expect(h.running.values.first { $0.order.ref.path == "both" }?.worker == gpu)
        #expect(h.running.values.first { $0.order.ref.path == "any" }?.worker == plain)
    }

    @Test func groupRequiresApplyToEveryChildInside() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        let arm = h.addWorker(2, slots: 4, labels: ["arm"])
        try h.submit(GroupSpec("g", requires: ["arm"], children: [leaf("a"), leaf("b")]), id: "g")
        #expect(h.running.values.allSatisfy { $0.worker == arm })
        #expect(h.running.count == 2)
    }

    @Test func workIsSpreadLeastLoadedFirst() throws {
        var h = SchedulerHarness(prefetch: 0)
        let one = h.addWorker(1, slots: 2)
        let two = h.addWorker(2, slots: 2)
        try h.submit(GroupSpec("g", children: (0..<4).map { leaf("c\($0)") }), id: "g")
        let counts = Dictionary(grouping: h.running.values, by: \.worker).mapValues(\.count)
        #expect(counts == [one: 2, two: 2])
    }

    @Test func equallyLoadedWorkersTakeTurnsForWorkThatRunsOneAtATime() throws {
        var h = SchedulerHarness()
        let workers = [h.addWorker(1, slots: 2), h.addWorker(2, slots: 2), h.addWorker(3, slots: 2)]
        try h.submit(GroupSpec("g", children: (0..<30).map { leaf("c\($0)", exclusive: ["db"]) }), id: "g")
        // Only the holder of `db` is ever on a worker, so every worker is idle at each placement.
        while let (_, entry) = h.running.first {
            #expect(h.running.count == 1)
            try h.finish(entry.order, .succeeded(output: JSONValue.emptyObject.jsonData()))
        }
        #expect(h.finished["g"]?.phase == .succeeded)
        let counts = Dictionary(grouping: h.dispatches, by: \.worker).mapValues(\.count)
        #expect(counts == [workers[0]: 10, workers[1]: 10, workers[2]: 10])
    }

    @Test func aChainMovesAcrossIdleWorkersInTurn() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        h.addWorker(2)
        try h.submit(GroupSpec("g", mode: .sequence, children: (0..<4).map { leaf("c\($0)") }), id: "g")
        for index in 0..<4 { try h.succeed("c\(index)") }
        #expect(h.dispatches.map(\.worker.rawValue) == [1, 2, 1, 2])
    }

    @Test func aWorkerHoldsAtMostItsSlotsPlusThePrefetchWindow() throws {
        var h = SchedulerHarness(prefetch: 3)
        let worker = h.addWorker(1, slots: 2)
        try h.submit(GroupSpec("g", children: (0..<20).map { leaf("c\($0)") }), id: "g")
        #expect(h.running.count == 5)
        #expect(h.scheduler.membership.workers[worker]?.inFlight == 5)
        #expect(try h.child("g", "c5").phase == .ready)
        try h.succeed("c0")
        #expect(h.running.count == 5)
        #expect(h.running.values.contains { $0.order.ref.path == "c5" })
    }

    /// The window follows the work: `prefetch` until the worker's runs are known, twice its
    /// slots while they run under `shortAttempt`, `prefetch` again once they run longer (each
    /// new run weighs 1/8 of the average, so one long run is enough after short ones).
    @Test func aWorkerWhoseAttemptsRunShortHoldsTwiceItsSlotsBeyondThem() throws {
        var h = SchedulerHarness(prefetch: 1) { $0.shortAttempt = .milliseconds(2) }
        let worker = h.addWorker(1, slots: 2)
        try h.submit(GroupSpec("g", children: (0..<40).map { leaf("c\($0)") }), id: "g")
        #expect(h.running.count == 3)
        func run(for duration: Duration) throws {
            let (id, entry) = try #require(h.running.min { $0.key < $1.key })
            h.running[id] = nil
            let started = h.now
            h.advance(duration)
            h.record(
                try h.scheduler.attemptFinished(
                    entry.order.ref, outcome: .succeeded(output: JSONValue.emptyObject.jsonData()), worker: worker,
                    startedAt: started, finishedAt: h.now, now: h.now))
        }
        try run(for: .microseconds(100))
        #expect(h.scheduler.membership.workers[worker]?.recentRunTime == .microseconds(100))
        #expect(h.running.count == 6)
        try run(for: .microseconds(300))
        #expect(h.running.count == 6)
        try run(for: .seconds(1))
        #expect(h.running.count == 5)
        try run(for: .seconds(1))
        try run(for: .seconds(1))
        #expect(h.running.count == 3)
        try run(for: .seconds(1))
        #expect(h.running.count == 3)
    }

    /// Without `shortAttempt` (zero) short runs leave the window at `prefetch`, and attempts
    /// with their own locks (a category each, so no lock keeps them apart) never use a window,
    /// however short the worker's runs.
    @Test func shortRunsWidenNoWindowWithoutShortAttemptNorForLockedAttempts() throws {
        for shortAttempt in [Duration.zero, .milliseconds(2)] {
            var h = SchedulerHarness(prefetch: 1) { $0.shortAttempt = shortAttempt }
            let worker = h.addWorker(1, slots: 1)
            let exclusive = shortAttempt != .zero
            try h.submit(
                GroupSpec("g", children: (0..<10).map { leaf("c\($0)", exclusive: exclusive ? ["db\($0)"] : []) }),
                id: "g")
            for _ in 0..<3 {
                let (id, entry) = try #require(h.running.min { $0.key < $1.key })
                h.running[id] = nil
                h.record(
                    try h.scheduler.attemptFinished(
                        entry.order.ref, outcome: .succeeded(output: JSONValue.emptyObject.jsonData()), worker: worker,
                        startedAt: h.now, finishedAt: h.now + .microseconds(10), now: h.now + .microseconds(10)))
            }
            #expect(h.scheduler.membership.workers[worker]?.recentRunTime == .microseconds(10))
            #expect(h.running.count == (exclusive ? 1 : 2))
        }
    }

    @Test func attemptsWithTheirOwnLocksGoOnlyToAFreeSlot() throws {
        var h = SchedulerHarness(prefetch: 4)
        h.addWorker(1, slots: 1)
        try h.submit(GroupSpec("first", children: [leaf("busy")]), id: "first")
        try h.submit(GroupSpec("second", children: [leaf("locked", exclusive: ["db"])]), id: "second")
        #expect(h.runningPaths == ["busy"])
        #expect(try h.child("second", "locked").phase == .ready)
        try h.succeed("busy")
        #expect(h.runningPaths == ["locked"])
    }

    @Test func aKindNoWorkerOffersWaitsWithAReasonAndSubmitWarns() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        let receipt = try h.submit(GroupSpec("g", children: [leaf("resize", "resize"), leaf("plain")]), id: "g")
        #expect(receipt.warnings == ["no connected worker offers kind \"resize\""])
        let child = try h.child("g", "resize")
        #expect(child.phase == .waiting)
        #expect(child.waitingReason == "no connected worker offers kind \"resize\"")
        #expect(h.runningPaths == ["plain"])
        let custom = h.addWorker(2, kinds: ["resize"])
        #expect(h.running.values.first { $0.order.ref.path == "resize" }?.worker == custom)
    }

    @Test func missingLabelsAreNamedInTheWarning() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        let receipt = try h.submit(GroupSpec("g", children: [leaf("a", requires: ["gpu"])]), id: "g")
        #expect(receipt.warnings == ["no connected worker offers kind \"echo\" with labels gpu"])
    }

    @Test func aDrainingWorkerGetsNoNewWork() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1, slots: 1)
        h.record(h.scheduler.workerDraining(one, now: h.now))
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        #expect(h.running.isEmpty)
        let two = h.addWorker(2, slots: 1)
        #expect(h.running.values.first?.worker == two)
    }

    @Test func theDispatchCarriesKindInputAndTimeout() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(
            GroupSpec(
                "g",
                children: [
                    ChildSpec("s", run: "sleep", with: ["seconds": 1], timeout: .seconds(5))
                ]), id: "g")
        let order = try #require(h.attempt("s"))
        #expect(order.kind == "sleep")
        #expect(order.timeout == .seconds(5))
        #expect(try JSONValue(jsonData: order.input) == ["seconds": 1])
        #expect(order.ref.attempt == 1 && order.ref.group == "g")
    }
}
