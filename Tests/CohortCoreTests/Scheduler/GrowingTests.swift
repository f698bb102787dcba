import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// Growing groups in the scheduler (Scheduler+Growing.swift): added children run like
/// submitted ones, the group finishes only after them, a finished group takes nothing, the lock
/// rules hold, and a restart replays the additions.
@Suite struct GrowingTests {
    /// Adds `children` to group `id` (into `path`), as the coordinator does.
    static func add(
        _ harness: inout SchedulerHarness, _ children: [ChildSpec], to id: String, into path: String = ""
    ) throws -> [String] {
        let grown = try harness.scheduler.runningSpec(id).adding(children, into: path)
        let (paths, actions) = try harness.scheduler.addChildren(
            id, children: children, into: path, grown: grown, now: harness.now)
        harness.record(actions)
        return paths
    }

    @Test func addedChildrenRunAndTheGroupFinishesOnlyAfterThem() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 4)
        try harness.submit(GroupSpec("g", children: [leaf("a"), leaf("b", after: ["a"])]), id: "g")
        let paths = try Self.add(
            &harness,
            [leaf("c", after: ["a"], inject: [Injection(from: "a", select: "x", into: "x")]), leaf("d", after: ["c"])],
            to: "g")
        #expect(paths == ["c", "d"])
        try harness.succeed("a", output: ["x": 7])
        try harness.succeed("b")
        #expect(harness.finished["g"] == nil, "c and d have not run")
        #expect(try harness.input(of: "c") == ["x": 7], "an added child injects from an existing sibling")
        try harness.succeed("c")
        #expect(harness.finished["g"] == nil)
        try harness.succeed("d")
        #expect(harness.finished["g"]?.phase == .succeeded)
        #expect(try harness.scheduler.groupSnapshot("g").children.map(\.path) == ["a", "b", "c", "d"])
    }

    @Test func aDependencyThatFinishedBeforeTheAdditionCounts() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 4)
        try harness.submit(GroupSpec("g", children: [leaf("a"), leaf("bad"), leaf("slow")]), id: "g")
        try harness.succeed("a")
        try harness.fail("bad")
        _ = try Self.add(&harness, [leaf("after-a", after: ["a"]), leaf("after-bad", after: ["bad"])], to: "g")
        #expect(harness.attempt("after-a") != nil, "a succeeded: it runs at once")
        #expect(try harness.child("g", "after-bad").phase == .cancelled, "bad failed: cancelled as a dependent")
        try harness.succeed("after-a")
        try harness.succeed("slow")
        #expect(harness.finished["g"]?.phase == .failed)
    }

    @Test func aFinishedGroupOrNestedGroupTakesNothing() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 4)
        try harness.submit(
            GroupSpec(
                "g",
                children: [
                    ChildSpec(name: "inner", body: .group(.init(children: [leaf("x")]))), leaf("y"),
                ]), id: "g")
        try harness.succeed("inner/x")
        #expect(throws: SchedulerError.self) { try Self.add(&harness, [leaf("z")], to: "g", into: "inner") }
        try harness.succeed("y")
        let error = try #require(throws: SchedulerError.self) { try Self.add(&harness, [leaf("z")], to: "g") }
        #expect(error.message.contains("has finished"))
    }

    @Test func aChildAddedInsideAHoldingGroupUsesOnlyItsCategories() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 4)
        try harness.submit(
            GroupSpec(
                "g",
                children: [
                    leaf("outside"),
                    ChildSpec(
                        name: "db", body: .group(.init(children: [leaf("migrate", exclusive: ["db"])])),
                        exclusive: ["db"]),
                ]), id: "g")
        let other = try #require(throws: SchedulerError.self) {
            try Self.add(&harness, [leaf("cache", exclusive: ["cache"])], to: "g", into: "db")
        }
        #expect(other.message.contains("may use only those categories"), "\(other.message)")
        let waits = try #require(throws: SchedulerError.self) {
            try Self.add(&harness, [leaf("late", after: ["outside"])], to: "g", into: "db")
        }
        #expect(waits.message.contains("may wait only for children inside it"), "\(waits.message)")
        #expect(try Self.add(&harness, [leaf("seed", exclusive: ["db"])], to: "g", into: "db") == ["db/seed"])
    }

    /// A group whose run has every kind of index the scheduler holds when children are
    /// inserted into `mid`, which is not last: attempts running (`blocker`, `mid/m1`, `flaky`,
    /// `locker1`), one attempt queued for a slot (6 ready for 5 slots), `locker2` waiting for
    /// the lock `db`, the group `held` waiting for its hold (`res`, held by `blocker`) with
    /// `held/h1` waiting for it, and `gpu` parked (no worker has the label).
    static let middleSpec = GroupSpec(
        "g",
        children: [
            leaf("blocker", exclusive: ["res"]),
            ChildSpec(name: "mid", body: .group(.init(children: [leaf("m1")]))),
            ChildSpec(
                name: "held", body: .group(.init(children: [leaf("h1")])), exclusive: ["res"], timeout: .seconds(3600)),
            leaf("flaky", retry: RetryPolicy(attempts: 3, backoff: .seconds(10))),
            leaf("locker1", exclusive: ["db"]),
            leaf("locker2", exclusive: ["db"]),
            leaf("gpu", requires: ["gpu"]),
            leaf("q1"),
            leaf("q2"),
        ])

    /// What is added into `mid`: a leaf after `m1` and a nested group, so every later leaf
    /// and group moves.
    static let middleAddition = [
        leaf("m2", after: ["m1"]), ChildSpec(name: "sub", body: .group(.init(children: [leaf("s1")]))),
    ]

    /// Succeeds whatever runs until group `g` finishes (a bounded number of rounds).
    static func finishAll(_ harness: inout SchedulerHarness) throws {
        for _ in 0..<20 where harness.finished["g"] == nil {
            for path in harness.runningPaths { try harness.succeed(path) }
            harness.advance(.seconds(1))
        }
    }

    @Test func childrenInsertedIntoAMiddleGroupRunAndEverythingElseKeepsItsPlace() throws {
        var harness = SchedulerHarness(prefetch: 0)
        harness.addWorker(1, slots: 5)
        try harness.submit(Self.middleSpec, id: "g")
        #expect(harness.running.count == 5, "\(harness.runningPaths)")
        #expect(harness.attempt("held/h1") == nil, "h1 waits for its group's hold")
        #expect(harness.attempt("locker2") == nil, "locker2 waits for db")
        #expect(harness.attempt("gpu") == nil, "gpu is parked")
        try harness.fail("flaky")  // a retry timer, 10 s
        #expect(harness.attempt("flaky") == nil, "flaky waits for its retry")

        let paths = try Self.add(&harness, Self.middleAddition, to: "g", into: "mid")
        #expect(Set(paths) == ["mid/m2", "mid/sub/s1", "mid/sub"])
        let order = try harness.scheduler.groupSnapshot("g").children.map(\.path)
        let m2 = try #require(order.firstIndex(of: "mid/m2"))
        let h1Place = try #require(order.firstIndex(of: "held/h1"))
        #expect(m2 < h1Place, "the added children are in mid, before held: \(order)")
        #expect(try harness.child("g", "mid/m2").phase == .waiting)
        let holdWaiter = harness.scheduler.lockSnapshot().first { $0.category == "res" }?.waiters.map(\.child)
        #expect(holdWaiter == ["held"], "the group hold still waits, under its new index")

        func holder(_ category: String) -> String? {
            harness.scheduler.lockSnapshot().first { $0.category == category }?.holder?.child
        }
        try harness.succeed("blocker")
        #expect(holder("res") == "held", "held's hold is granted under its new index")
        #expect(try harness.child("g", "held/h1").phase == .ready, "h1 goes on to a slot")
        try harness.succeed("locker1")
        #expect(holder("db") == "locker2", "the lock waiter is granted")
        try harness.succeed("mid/m1")
        #expect(try harness.child("g", "mid/m2").phase != .waiting, "m2 is unblocked")
        harness.advance(.seconds(11))
        #expect(try harness.child("g", "flaky").phase == .ready, "the retry timer fired for flaky")
        harness.addWorker(2, slots: 8, labels: ["gpu"])
        #expect(harness.attempt("gpu") != nil, "the parked leaf is unparked")
        try Self.finishAll(&harness)
        #expect(harness.finished["g"]?.phase == .succeeded)
        let snapshot = try harness.scheduler.groupSnapshot("g")
        for child in snapshot.children { #expect(child.phase == .succeeded, "\(child.path): \(child.phase)") }
        #expect(Set(harness.dispatches.map(\.order.ref.path)).isSuperset(of: ["mid/m2", "mid/sub/s1", "q1", "q2"]))
        #expect(try harness.child("g", "flaky").attempt == 2)
        let h1 = try #require(harness.dispatches.first { $0.order.ref.path == "held/h1" })
        #expect(h1.order.tokens["res"] != nil, "h1 ran under its group's hold")
    }

    @Test func aRestartAfterAMiddleInsertionGivesTheSameIndexes() throws {
        var harness = SchedulerHarness(prefetch: 0)
        harness.scheduler.emitsRecords = true
        var journal = RestoreTests.Journal()
        harness.addWorker(1, slots: 5)
        try harness.submit(Self.middleSpec, id: "g")
        journal.specs["g"] = Self.middleSpec
        _ = try Self.add(&harness, Self.middleAddition, to: "g", into: "mid")
        try harness.succeed("blocker")
        try harness.succeed("mid/m1")
        journal.absorb(&harness)
        let before = try harness.scheduler.groupSnapshot("g").children.map { "\($0.path) \($0.phase)" }

        var restarted = RestoreTests().restarted(journal, at: harness.now + .seconds(1))
        let after = try restarted.scheduler.groupSnapshot("g").children.map(\.path)
        #expect(after == before.map { String($0.split(separator: " ")[0]) })
        #expect(try restarted.child("g", "mid/m1").phase == .succeeded)
        #expect(try restarted.child("g", "blocker").phase == .succeeded)
        restarted.addWorker(2, slots: 16, labels: ["gpu"])
        restarted.advance(.seconds(30))
        try Self.finishAll(&restarted)
        #expect(restarted.finished["g"]?.phase == .succeeded)
        for child in try restarted.scheduler.groupSnapshot("g").children {
            #expect(child.phase == .succeeded, "\(child.path): \(child.phase)")
        }
    }

    @Test func aRestartReplaysTheAdditionsInOrder() throws {
        var harness = SchedulerHarness()
        harness.scheduler.emitsRecords = true
        harness.addWorker(1, slots: 4)
        var journal = RestoreTests.Journal()
        let spec = GroupSpec("g", children: [leaf("a")])
        try harness.submit(spec, id: "g")
        journal.specs["g"] = spec
        _ = try Self.add(&harness, [leaf("b", after: ["a"])], to: "g")
        _ = try Self.add(&harness, [leaf("c", after: ["b"])], to: "g")
        try harness.succeed("a")
        journal.absorb(&harness)
        #expect(journal.additions["g"]?.map { $0.children.map(\.name) } == [["b"], ["c"]])

        var restarted = RestoreTests().restarted(journal, at: harness.now + .seconds(1))
        #expect(try restarted.scheduler.groupSnapshot("g").children.map(\.path) == ["a", "b", "c"])
        #expect(try restarted.child("g", "a").phase == .succeeded)
        restarted.addWorker(2, slots: 4)
        restarted.advance(.seconds(30))
        try restarted.succeed("b")
        #expect(restarted.finished["g"] == nil)
        try restarted.succeed("c")
        #expect(restarted.finished["g"]?.phase == .succeeded)
    }
}

extension GrowingTests {
    /// A group whose failure policy `cancel-group` has cancelled everything in it takes nothing
    /// more while its running children report back (review of the growing branch).
    @Test func aGroupCancelledByItsFailurePolicyTakesNothing() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 4)
        try harness.submit(
            GroupSpec(
                "g",
                children: [
                    ChildSpec("p", onChildFailure: .cancelGroup, children: [leaf("a"), leaf("b")])
                ]), id: "g")
        try harness.fail("p/a")
        #expect(harness.cancels.count == 1, "b is being cancelled")
        let error = try #require(throws: SchedulerError.self) {
            try Self.add(&harness, [leaf("late")], to: "g", into: "p")
        }
        #expect(error.message.contains("is being cancelled"), "\(error.message)")
    }
}
