import CohortSpec
import Testing

@testable import CohortCore

@Suite struct FailurePolicyTests {
    @Test func cancelDependentsCancelsWhatWaitsOnTheFailedChildAndNothingElse() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(
            GroupSpec(
                "g",
                children: [
                    leaf("a"), leaf("b", after: ["a"]), leaf("c", after: ["b"]), leaf("other"),
                ]), id: "g")
        try h.fail("a", error: "exit code 2")
        #expect(try h.child("g", "b").phase == .cancelled)
        #expect(try h.child("g", "b").error == "dependency \"a\" failed")
        #expect(try h.child("g", "c").phase == .cancelled)
        #expect(try h.child("g", "c").error == "dependency \"b\" was cancelled")
        #expect(h.runningPaths == ["other"])
        try h.succeed("other")
        #expect(h.finished["g"]?.phase == .failed)
        #expect(h.dispatches.map(\.order.ref.path).sorted() == ["a", "other"])
    }

    @Test func cancelGroupCancelsEveryUnfinishedChild() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(
            GroupSpec(
                "g", onChildFailure: .cancelGroup,
                children: [
                    leaf("a"), leaf("running"), leaf("later", after: ["running"]),
                ]), id: "g")
        let running = try #require(h.attempt("running"))
        try h.fail("a")
        #expect(h.cancels[running.ref.id] == "cancelled because \"a\" failed (onChildFailure: cancel-group)")
        #expect(try h.child("g", "later").phase == .cancelled)
        #expect(h.finished["g"] == nil)
        try h.acknowledgeCancels()
        #expect(h.finished["g"]?.phase == .failed)
    }

    @Test func continueLetsDependentsRunAndTheGroupStillFails() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(
            GroupSpec("g", onChildFailure: .continue, children: [leaf("a"), leaf("b", after: ["a"])]), id: "g")
        try h.fail("a")
        #expect(h.runningPaths == ["b"])
        try h.succeed("b")
        #expect(h.finished["g"]?.phase == .failed)
    }

    @Test func aNestedGroupsPolicyActsInsideItAndItsParentsPolicyOnItsDependents() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(
            GroupSpec(
                "g", onChildFailure: .continue,
                children: [
                    ChildSpec("inner", onChildFailure: .cancelGroup, children: [leaf("x"), leaf("y")]),
                    leaf("after-inner", after: ["inner"]),
                    leaf("free"),
                ]), id: "g")
        let y = try #require(h.attempt("inner/y"))
        try h.fail("inner/x")
        #expect(h.cancels[y.ref.id] != nil)
        try h.acknowledgeCancels()
        #expect(try h.child("g", "inner").phase == .failed)
        // The parent's policy is `continue`: the dependent of the failed group still runs.
        #expect(h.runningPaths == ["after-inner", "free"])
    }

    @Test func aChildCancelledOnItsOwnEndsTheGroupCancelled() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(GroupSpec("g", children: [leaf("a"), leaf("b")]), id: "g")
        h.record(try h.scheduler.cancelChild("g", path: "a", reason: "not needed", now: h.now))
        try h.acknowledgeCancels()
        try h.succeed("b")
        #expect(h.finished["g"]?.phase == .cancelled)
    }
}
