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

    @Test func aNestedGroupThatIsNotLastIsRefused() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 4)
        try harness.submit(
            GroupSpec(
                "g",
                children: [ChildSpec(name: "inner", body: .group(.init(children: [leaf("x")]))), leaf("y")]), id: "g")
        let error = try #require(throws: SchedulerError.self) {
            try Self.add(&harness, [leaf("z")], to: "g", into: "inner")
        }
        #expect(error.message.contains("last in document order"))
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
