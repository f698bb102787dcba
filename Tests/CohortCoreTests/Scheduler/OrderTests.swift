import CohortSpec
import Testing

@testable import CohortCore

@Suite struct OrderTests {
    @Test func childrenWithoutDependenciesStartAtOnceAndDependentsWaitForTheirDependencies() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(
            GroupSpec(
                "g",
                children: [
                    leaf("a"), leaf("b"), leaf("c", after: ["a", "b"]), leaf("d", after: ["c"]),
                ]), id: "g")
        #expect(h.runningPaths == ["a", "b"])
        #expect(try h.child("g", "c").phase == .waiting)
        #expect(try h.child("g", "c").waitingReason == "waiting for \"a\", \"b\"")
        try h.succeed("a")
        #expect(h.runningPaths == ["b"])
        #expect(try h.child("g", "c").waitingReason == "waiting for \"b\"")
        try h.succeed("b")
        #expect(h.runningPaths == ["c"])
        try h.succeed("c")
        try h.succeed("d")
        #expect(h.finished["g"]?.phase == .succeeded)
    }

    @Test func sequenceRunsChildrenOneAfterAnotherInListedOrder() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(GroupSpec("s", mode: .sequence, children: [leaf("one"), leaf("two"), leaf("three")]), id: "s")
        var order: [String] = []
        while let next = h.running.values.first?.order {
            #expect(h.running.count == 1)
            order.append(next.ref.path)
            try h.succeed(next.ref.path)
        }
        #expect(order == ["one", "two", "three"])
        #expect(h.finished["s"]?.phase == .succeeded)
    }

    @Test func nestedGroupWaitsForItsAfterAndItsDependentsWaitForAllOfItsChildren() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        let spec = GroupSpec(
            "n",
            children: [
                leaf("build"),
                ChildSpec("tests", mode: .sequence, after: ["build"], children: [leaf("unit"), leaf("integration")]),
                ChildSpec("checks", children: [leaf("lint"), leaf("types")]),
                leaf("release", after: ["tests", "checks"]),
            ])
        try h.submit(spec, id: "n")
        #expect(h.runningPaths == ["build", "checks/lint", "checks/types"])
        try h.succeed("checks/lint")
        try h.succeed("checks/types")
        #expect(try h.child("n", "checks").phase == .succeeded)
        #expect(h.runningPaths == ["build"])
        try h.succeed("build")
        #expect(h.runningPaths == ["tests/unit"])
        try h.succeed("tests/unit")
        #expect(h.runningPaths == ["tests/integration"])
        try h.succeed("tests/integration")
        #expect(h.runningPaths == ["release"])
        try h.succeed("release")
        #expect(h.finished["n"]?.phase == .succeeded)
    }

    @Test func statusListsEveryChildDepthFirstInSpecOrder() throws {
        var h = SchedulerHarness()
        try h.submit(
            GroupSpec(
                "n",
                children: [
                    leaf("a"), ChildSpec("inner", children: [leaf("x"), ChildSpec("deep", children: [leaf("y")])]),
                    leaf("b"),
                ]), id: "n")
        let snapshot = try h.scheduler.groupSnapshot("n")
        #expect(snapshot.children.map(\.path) == ["a", "inner", "inner/x", "inner/deep", "inner/deep/y", "b"])
        #expect(snapshot.children.map(\.isGroup) == [false, true, false, true, false, false])
    }

    @Test func groupFinishesOnlyAfterEveryChildFinished() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(GroupSpec("g", children: [leaf("a"), leaf("b"), leaf("c")]), id: "g")
        try h.fail("a")
        #expect(h.finished["g"] == nil)
        try h.succeed("b")
        #expect(h.finished["g"] == nil)
        #expect(try h.scheduler.groupSnapshot("g").phase == .running)
        try h.succeed("c")
        #expect(h.finished["g"]?.phase == .failed)
        #expect(h.finished["g"]?.reason?.contains("\"a\" failed: boom") == true)
    }

    @Test func resultsOfChildrenAndOfTheWholeGroupAreKept() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a"), leaf("b")]), id: "g")
        #expect(throws: SchedulerError.self) { try h.scheduler.result("g", path: "a") }
        try h.succeed("a", output: ["value": 1])
        try h.succeed("b", output: "text")
        guard case .succeeded(let a) = try h.scheduler.result("g", path: "a") else {
            Issue.record("a did not succeed")
            return
        }
        #expect(try JSONValue(jsonData: a) == ["value": 1])
        guard case .succeeded(let all) = try h.scheduler.result("g", path: nil) else {
            Issue.record("the group did not succeed")
            return
        }
        #expect(try JSONValue(jsonData: all) == ["a": ["value": 1], "b": "text"])
    }
}
