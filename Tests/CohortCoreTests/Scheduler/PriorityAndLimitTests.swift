import CohortSpec
import Testing

@testable import CohortCore

/// Priorities (slots and locks) and counting locks, through the scheduler with the test clock.
@Suite struct PriorityAndLimitTests {
    private func group(_ name: String, priority: Int = 0, limits: [String: Int] = [:], _ children: [ChildSpec])
        -> GroupSpec
    {
        var spec = GroupSpec(name, children: children)
        spec.priority = priority
        spec.limits = limits
        return spec
    }

    // MARK: Slots

    @Test func aHigherPriorityGroupsReadyChildrenTakeFreeSlotsFirst() throws {
        var h = SchedulerHarness(prefetch: 0)
        h.addWorker(1, slots: 1)
        try h.submit(group("low", [leaf("l1"), leaf("l2"), leaf("l3")]), id: "low")
        h.advance(.seconds(1))
        try h.submit(group("high", priority: 5, [leaf("h1"), leaf("h2")]), id: "high")
        // l1 took the only slot; as it finishes, high's children go before l2 and l3.
        try h.succeed("l1")
        try h.succeed("h1")
        try h.succeed("h2")
        try h.succeed("l2")
        try h.succeed("l3")
        #expect(h.dispatches.map(\.order.ref.path) == ["l1", "h1", "h2", "l2", "l3"])
    }

    @Test func withinAPriorityChildrenGoInArrivalOrder() throws {
        var h = SchedulerHarness(prefetch: 0)
        h.addWorker(1, slots: 1)
        try h.submit(group("a", priority: 3, [leaf("a1"), leaf("a2")]), id: "a")
        h.advance(.seconds(1))
        try h.submit(group("b", priority: 3, [leaf("b1")]), id: "b")
        for path in ["a1", "a2", "b1"] { try h.succeed(path) }
        #expect(h.dispatches.map(\.order.ref.path) == ["a1", "a2", "b1"])
    }

    @Test func agingBoundsHowLongALowPriorityChildWaits() throws {
        // Priority 0 against priority 2 with aging 10 s: a low child queued 25 s before a high
        // one has gained 2 levels and more, so it goes first; one queued 15 s before has not.
        var h = SchedulerHarness(prefetch: 0) { $0.priorityAging = .seconds(10) }
        h.addWorker(1, slots: 1)
        try h.submit(group("busy", [leaf("blocker")]), id: "busy")
        try h.submit(group("old", [leaf("old")]), id: "old")
        h.advance(.seconds(10))
        try h.submit(group("young", [leaf("young")]), id: "young")
        h.advance(.seconds(15))
        try h.submit(group("high", priority: 2, [leaf("high")]), id: "high")
        for path in ["blocker", "old", "high", "young"] { try h.succeed(path) }
        #expect(h.dispatches.map(\.order.ref.path) == ["blocker", "old", "high", "young"])
    }

    @Test func priorityOrdersTheWaitersOfALock() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(group("holder", [leaf("hold", exclusive: ["db"])]), id: "holder")
        try h.submit(group("low", [leaf("low", exclusive: ["db"])]), id: "low")
        h.advance(.seconds(1))
        try h.submit(group("high", priority: 1, [leaf("high", exclusive: ["db"])]), id: "high")
        #expect(h.runningPaths == ["hold"])
        try h.succeed("hold")
        #expect(h.runningPaths == ["high"])
        try h.succeed("high")
        #expect(h.runningPaths == ["low"])
    }

    // MARK: Counting locks

    @Test func aCountingLockRunsAtMostLimitHoldersEachWithItsOwnToken() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        h.addWorker(2, slots: 4)
        try h.submit(
            group("quota", limits: ["q": 3], (1...8).map { leaf("c\($0)", exclusive: ["q"]) }), id: "quota")
        #expect(h.running.count == 3)
        var tokens: [UInt64] = []
        while !h.running.isEmpty {
            #expect(h.running.count <= 3)
            let order = try #require(h.running.values.map(\.order).min { $0.ref.path < $1.ref.path })
            tokens.append(try #require(order.tokens["q"]))
            try h.finish(order, .succeeded(output: JSONValue.emptyObject.jsonData()))
        }
        #expect(tokens.count == 8)
        #expect(Set(tokens).count == 8)
        #expect(h.finished["quota"]?.phase == .succeeded)
    }

    @Test func aSubmissionWhoseLimitDisagreesWithTheOneInForceIsRefusedNamingBoth() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(group("first", limits: ["q": 3], [leaf("a", "sleep", with: ["seconds": 5], exclusive: ["q"])]))
        let spec = group("second", limits: ["q": 5], [leaf("b", exclusive: ["q"])])
        let error = try #require(throws: SchedulerError.self) { try h.scheduler.submit(spec, now: h.now) }
        #expect(error.code == .conflict)
        #expect(error.message.contains("limits.q is 5"))
        #expect(error.message.contains("limit 3"))
        // The same limit is fine; once the first group finished and q is idle, another is too.
        try h.submit(group("same", limits: ["q": 3], [leaf("c", exclusive: ["q"])]), id: "same")
        try h.succeed("a")
        try h.succeed("c")
        try h.submit(group("later", limits: ["q": 5], [leaf("d", exclusive: ["q"])]), id: "later")
        #expect(h.scheduler.locks.limit(of: "q") == 5)
    }

    @Test func theConfiguredLimitWinsAndTheSubmissionIsWarned() throws {
        var h = SchedulerHarness { $0.lockLimits = ["q": 2] }
        h.addWorker(1, slots: 8)
        let receipt = try h.submit(
            group("g", limits: ["q": 5], (1...4).map { leaf("c\($0)", exclusive: ["q"]) }), id: "g")
        #expect(receipt.warnings.contains { $0.contains("limits.q is 5") && $0.contains("sets 2") })
        #expect(h.running.count == 2)
    }

    @Test func aRestartedSchedulerRestoresTheDeclaredLimits() throws {
        var h = SchedulerHarness()
        h.scheduler.emitsRecords = true
        h.addWorker(1, slots: 8)
        let spec = group("g", priority: 4, limits: ["q": 2], (1...3).map { leaf("c\($0)", exclusive: ["q"]) })
        try h.submit(spec, id: "g")
        #expect(h.running.count == 2)
        var restarted = SchedulerHarness()
        _ = restarted.scheduler.restore(
            [RestoredGroup(id: "g", spec: spec, sequence: 1, submittedAt: .zero)], lastTokens: [:], grace: .seconds(1),
            now: .zero)
        #expect(restarted.scheduler.locks.limit(of: "q") == 2)
        #expect(restarted.scheduler.locks.conflicts(with: ["q": 3]).count == 1)
        restarted.addWorker(1, slots: 8)
        #expect(restarted.running.count == 2)
        #expect(try restarted.scheduler.groupSnapshot("g").priority == 4)
    }

    /// A grant of an earlier group may hold a unit of a category only a later group declares:
    /// a restart declares every unfinished group's limits before it restores any grant, so
    /// every holder is restored and the limit stays the declared one.
    @Test func aRestartRestoresEveryHolderOfALimitALaterGroupDeclares() throws {
        let first = group("a", priority: 0, limits: [:], (1...3).map { leaf("c\($0)", exclusive: ["q"]) })
        let second = group("b", priority: 0, limits: ["q": 3], [leaf("x")])
        let records = (1...3).map { index in
            ChildRecord(
                group: "a", path: "c\(index)", attempt: 1, attemptID: AttemptID(UInt64(index)), state: .inFlight,
                worker: "worker-1", tokens: ["q": UInt64(index)], startedAt: .zero)
        }
        var restarted = SchedulerHarness()
        _ = restarted.scheduler.restore(
            [
                RestoredGroup(id: "a", spec: first, sequence: 1, submittedAt: .zero, children: records),
                RestoredGroup(id: "b", spec: second, sequence: 2, submittedAt: .zero),
            ], lastTokens: ["q": 3], grace: .seconds(1), now: .zero)
        #expect(restarted.scheduler.locks.limit(of: "q") == 3)
        let holders = restarted.scheduler.locks.snapshot().first { $0.category == "q" }?.holders ?? []
        #expect(holders.count == 3, "every restored holder keeps its unit: \(holders)")
        #expect(restarted.scheduler.locks.conflicts(with: ["q": 3]).isEmpty)
    }
}
