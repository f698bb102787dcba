import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// Fan-out at run time (Scheduler+Map.swift): a map makes one procedure per item of its
/// producer's list once what it waits for has finished, what waits for it waits for all of
/// them and gathers their outputs in order, `maxParallel` bounds how many run, a map that
/// cannot fan out ends as a procedure would, and a restart makes the same procedures.
@Suite struct MapTests {
    /// `list` returns a list; `each` maps over it; `sum` gathers the outputs; `other` is a
    /// bystander that keeps the group open.
    static func spec(maxParallel: Int? = nil, select: JSONPath = "files", other: Bool = false) -> GroupSpec {
        var children = [
            leaf("list"),
            ChildSpec(
                "each", run: "echo", with: ["fixed": 1],
                map: MapSpec(from: "list", select: select, into: "file", maxParallel: maxParallel)),
            leaf("sum", inject: [Injection(from: "each", select: "n", into: "all")]),
        ]
        if other { children.append(leaf("other")) }
        return GroupSpec("g", children: children)
    }

    @Test func aMapFansOutAfterItsProducerAndItsDependentGathersTheOutputsInOrder() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        try harness.submit(Self.spec(), id: "g")
        #expect(try harness.scheduler.groupSnapshot("g").children.map(\.path) == ["list", "each", "sum"])
        #expect(harness.attempt("each[0]") == nil)
        try harness.succeed("list", output: ["files": ["a.txt", "b.txt", "c.txt"]])
        #expect(
            try harness.scheduler.groupSnapshot("g").children.map(\.path) == [
                "list", "each", "each/each[0]", "each/each[1]", "each/each[2]", "sum",
            ])
        #expect(
            try harness.input(of: "each/each[1]") == [
                "fixed": 1, "file": "b.txt", "map": ["index": 1, "item": "b.txt"],
            ])
        try harness.succeed("each/each[2]", output: ["n": 3])
        try harness.succeed("each/each[0]", output: ["n": 1])
        #expect(harness.attempt("sum") == nil, "sum waits for every procedure of the map")
        try harness.succeed("each/each[1]", output: ["n": 2])
        #expect(try harness.input(of: "sum") == ["all": [1, 2, 3]], "outputs in item order, not finishing order")
        try harness.succeed("sum")
        #expect(harness.finished["g"]?.phase == .succeeded)
        #expect(try harness.child("g", "each").phase == .succeeded)
    }

    @Test func anEmptyListFinishesTheMapAtOnceAndItsDependentGetsAnEmptyList() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        try harness.submit(Self.spec(), id: "g")
        try harness.succeed("list", output: ["files": []])
        #expect(try harness.child("g", "each").phase == .succeeded)
        #expect(try harness.input(of: "sum") == ["all": []])
        try harness.succeed("sum")
        #expect(harness.finished["g"]?.phase == .succeeded)
    }

    @Test func aStringIsTakenAsItsLines() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        try harness.submit(Self.spec(), id: "g")
        try harness.succeed("list", output: ["files": "a.txt\n\nb.txt\r\nc.txt\n"])
        #expect(try harness.input(of: "each/each[2]")["file"] == "c.txt")
        #expect(harness.attempt("each/each[3]") == nil)
    }

    @Test func aListThatIsNotOneFailsTheMapNamingWhy() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        try harness.submit(Self.spec(), id: "g")
        try harness.succeed("list", output: ["files": ["name": "a.txt"]])
        let each = try harness.child("g", "each")
        #expect(each.phase == .failed)
        #expect(each.error?.contains("output at \"files\" is object, not a list") == true, "\(each.error ?? "")")
        #expect(try harness.child("g", "sum").phase == .cancelled, "its dependent is cancelled, as for a failure")
        #expect(harness.finished["g"]?.phase == .failed)
        #expect(harness.finished["g"]?.reason?.contains("\"each\" failed: map: producer \"list\"") == true)
    }

    @Test func aFailedProducerCancelsTheMapAndWhatWaitsForIt() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        try harness.submit(Self.spec(), id: "g")
        try harness.fail("list")
        #expect(try harness.child("g", "each").phase == .cancelled)
        #expect(try harness.child("g", "each").error?.contains("list") == true)
        #expect(try harness.child("g", "sum").phase == .cancelled)
        #expect(harness.finished["g"]?.phase == .failed)
    }

    @Test func aMapRunsAtMostMaxParallelProceduresInItemOrder() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 16)
        try harness.submit(Self.spec(maxParallel: 2, other: true), id: "g")
        try harness.succeed("list", output: ["files": ["a", "b", "c", "d", "e"]])
        var order: [String] = []
        while true {
            let running = harness.runningPaths.filter { $0.hasPrefix("each/") }
            #expect(running.count <= 2, "\(running)")
            guard let first = running.first else { break }
            if running.count < 2 {
                #expect(order.count >= 4, "a place is free only when fewer are left: \(order) \(running)")
            }
            let waiting = try harness.scheduler.groupSnapshot("g").children.filter {
                $0.path.hasPrefix("each/") && $0.phase == .waiting
            }
            for child in waiting { #expect(child.waitingReason?.contains("maxParallel") == true) }
            order.append(first)
            try harness.succeed(first, output: ["n": .int(Int64(order.count))])
        }
        #expect(order == (0..<5).map { "each/each[\($0)]" })
        #expect(harness.runningPaths.contains("other"), "the limit is the map's, not the group's")
        try harness.succeed("sum")
        try harness.succeed("other")
        #expect(harness.finished["g"]?.phase == .succeeded)
    }

    @Test func aRetryKeepsItsPlace() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 16)
        let spec = GroupSpec(
            "g",
            children: [
                leaf("list"),
                ChildSpec(
                    "each", run: "echo", retry: RetryPolicy(attempts: 2),
                    map: MapSpec(from: "list", maxParallel: 1)),
            ])
        try harness.submit(spec, id: "g")
        try harness.succeed("list", output: [1, 2])
        try harness.fail("each/each[0]")
        #expect(harness.attempt("each/each[0]")?.ref.attempt == 2, "the retry goes at once")
        #expect(harness.attempt("each/each[1]") == nil, "the retry still holds the only place")
        try harness.succeed("each/each[0]")
        try harness.succeed("each/each[1]")
        #expect(harness.finished["g"]?.phase == .succeeded)
    }

    @Test func cancellingTheGroupEndsAMapThatHasNotFannedOut() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        let spec = GroupSpec(
            "g",
            children: [
                leaf("list"),
                ChildSpec(
                    name: "inner",
                    body: .group(.init(children: [ChildSpec("each", run: "echo", map: MapSpec(from: "list"))]))),
            ])
        try harness.submit(spec, id: "g")
        harness.record(
            try harness.scheduler.cancelChild("g", path: "inner", reason: .custom("stop"), now: harness.now))
        #expect(try harness.child("g", "inner/each").phase == .cancelled)
        #expect(try harness.child("g", "inner").phase == .cancelled, "no need to wait for list")
        try harness.succeed("list", output: [1, 2])
        #expect(try harness.scheduler.groupSnapshot("g").children.map(\.path) == ["list", "inner", "inner/each"])
        #expect(harness.finished["g"]?.phase == .cancelled)
    }

    @Test func anIfFalseSkipsTheMapWithoutMakingProcedures() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        let spec = GroupSpec(
            "g",
            children: [
                leaf("list"),
                ChildSpec("each", run: "echo", condition: "false", map: MapSpec(from: "list")),
                leaf("after", after: ["each"]),
            ])
        try harness.submit(spec, id: "g")
        try harness.succeed("list", output: [1, 2])
        #expect(try harness.child("g", "each").phase == .skipped)
        #expect(try harness.scheduler.groupSnapshot("g").children.count == 3)
        #expect(try harness.child("g", "after").phase == .skipped, "a dependent of a skipped child is skipped")
        #expect(harness.finished["g"]?.phase == .succeeded)
    }

    @Test func childrenCannotBeAddedIntoAMapByHand() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        try harness.submit(Self.spec(), id: "g")
        let error = try #require(throws: SchedulerError.self) {
            try GrowingTests.add(&harness, [leaf("x")], to: "g", into: "each")
        }
        #expect(error.message.contains("is a map"), "\(error.message)")
    }

    @Test func anEarlierMapMovesALaterMapsProceduresAndItsQueue() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 16)
        let spec = GroupSpec(
            "g",
            children: [
                leaf("first"), leaf("second"),
                ChildSpec("early", run: "echo", map: MapSpec(from: "first")),
                ChildSpec("late", run: "echo", map: MapSpec(from: "second", maxParallel: 1)),
            ])
        try harness.submit(spec, id: "g")
        try harness.succeed("second", output: ["x", "y", "z"])
        #expect(harness.attempt("late/late[0]") != nil)
        try harness.succeed("first", output: [1, 2, 3, 4])
        #expect(
            try harness.scheduler.groupSnapshot("g").children.map(\.path).filter { $0.contains("[") } == [
                "early/early[0]", "early/early[1]", "early/early[2]", "early/early[3]", "late/late[0]",
                "late/late[1]", "late/late[2]",
            ])
        // The queue of `late` moved with its procedures: each takes the place in turn.
        for index in 0..<3 {
            #expect(harness.runningPaths.filter { $0.hasPrefix("late/") } == ["late/late[\(index)]"])
            try harness.succeed("late/late[\(index)]")
        }
        for index in 0..<4 { try harness.succeed("early/early[\(index)]") }
        #expect(harness.finished["g"]?.phase == .succeeded)
    }

    @Test func aRestartMakesTheSameProceduresAndKeepsWhatRan() throws {
        var harness = SchedulerHarness()
        harness.scheduler.emitsRecords = true
        var journal = RestoreTests.Journal()
        harness.addWorker(1, slots: 8)
        let spec = Self.spec(maxParallel: 2)
        try harness.submit(spec, id: "g")
        journal.specs["g"] = spec
        try harness.succeed("list", output: ["files": ["a", "b", "c"]])
        try harness.succeed("each/each[0]", output: ["n": 1])
        journal.absorb(&harness)
        #expect(journal.additions["g"]?.count == 1, "the fan-out is journaled as an addition")
        let before = try harness.scheduler.groupSnapshot("g").children.map(\.path)

        var restarted = RestoreTests().restarted(journal, at: harness.now + .seconds(1))
        #expect(try restarted.scheduler.groupSnapshot("g").children.map(\.path) == before)
        #expect(try restarted.child("g", "each/each[0]").phase == .succeeded)
        restarted.addWorker(2, slots: 8)
        restarted.advance(.seconds(30))
        #expect(
            restarted.runningPaths.filter { $0.hasPrefix("each/") } == ["each/each[1]", "each/each[2]"],
            "each[1] was running, each[2] takes the other place")
        try restarted.succeed("each/each[1]", output: ["n": 2])
        try restarted.succeed("each/each[2]", output: ["n": 3])
        #expect(try restarted.input(of: "sum") == ["all": [1, 2, 3]])
        try restarted.succeed("sum")
        #expect(restarted.finished["g"]?.phase == .succeeded)
    }

    @Test func aRestartDecidesAMapThatEndedWithoutProceduresAgain() throws {
        var harness = SchedulerHarness()
        harness.scheduler.emitsRecords = true
        var journal = RestoreTests.Journal()
        harness.addWorker(1, slots: 8)
        let spec = Self.spec(other: true)
        try harness.submit(spec, id: "g")
        journal.specs["g"] = spec
        try harness.succeed("list", output: ["files": 7])
        journal.absorb(&harness)
        #expect(journal.additions["g"] == nil)
        var restarted = RestoreTests().restarted(journal, at: harness.now + .seconds(1))
        #expect(try restarted.child("g", "each").phase == .failed)
        #expect(try restarted.child("g", "sum").phase == .cancelled)
        restarted.addWorker(2, slots: 8)
        restarted.advance(.seconds(30))
        try restarted.succeed("other")
        #expect(restarted.finished["g"]?.phase == .failed)
    }
}

extension MapTests {
    /// Simulation, seed 4: a holding group (`c4`, `exclusive: [prod]`) after two maps counted
    /// them inside itself while they had no procedures (an empty leaf range lies within every
    /// range), so its hold waited for one node too few, then for one too many once they fanned
    /// out, and was never asked for.
    @Test func aHoldingGroupAfterMapsTakesItsHoldOnceTheyHaveFinished() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        var spec = GroupSpec(
            "g", mode: .sequence, onChildFailure: .continue,
            children: [
                leaf("c1", exclusive: ["db", "repo", "prod"]),
                ChildSpec(
                    "c2", run: "echo", exclusive: ["repo"], map: MapSpec(from: "c1", select: "items", maxParallel: 1)),
                ChildSpec("c3", run: "echo", exclusive: ["prod"], map: MapSpec(from: "c1", select: "items")),
                ChildSpec("c4", after: ["c1", "c2"], exclusive: ["prod"], children: [leaf("c5")]),
            ])
        spec.exclusive = ["repo"]
        try harness.submit(spec, id: "g")
        try harness.succeed("c1", output: ["items": [0, 1]])
        try harness.succeed("c2/c2[0]")
        try harness.fail("c2/c2[1]")
        try harness.fail("c3/c3[0]")
        #expect(harness.attempt("c4/c5") == nil, "c4 follows c3, which has not finished")
        try harness.succeed("c3/c3[1]")
        let c5 = try #require(harness.attempt("c4/c5"), "c4 took its hold once c3 had finished")
        #expect(c5.tokens["prod"] != nil)
        try harness.succeed("c4/c5")
        #expect(harness.finished["g"]?.phase == .failed)
    }
}

extension MapTests {
    /// A map added to a running group (`cohort add`) whose producer has finished fans out at
    /// once; the group waits for it.
    @Test func aMapAddedAfterItsProducerFinishedFansOutAtOnce() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        try harness.submit(GroupSpec("g", children: [leaf("list"), leaf("slow")]), id: "g")
        try harness.succeed("list", output: [10, 20])
        let paths = try GrowingTests.add(
            &harness, [ChildSpec("each", run: "echo", map: MapSpec(from: "list", into: "value"))], to: "g")
        #expect(paths == ["each"])
        #expect(try harness.input(of: "each/each[1]")["value"] == 20)
        try harness.succeed("slow")
        #expect(harness.finished["g"] == nil, "the group waits for the map's procedures")
        try harness.succeed("each/each[0]")
        try harness.succeed("each/each[1]")
        #expect(harness.finished["g"]?.phase == .succeeded)
    }

    /// `cohort rerun`: the map fans out again from its reused producer and its procedures that
    /// succeeded are reused; the one that failed runs again, and so does what gathers them.
    @Test func aRerunReusesTheMapsProceduresThatSucceeded() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        let spec = Self.spec()
        try harness.submit(spec, id: "g")
        try harness.succeed("list", output: ["files": ["a", "b"]])
        try harness.succeed("each/each[0]", output: ["n": 1])
        try harness.fail("each/each[1]")
        #expect(harness.finished["g"]?.phase == .failed)
        let list: JSONValue = ["files": ["a", "b"]]
        let first: JSONValue = ["n": 1]
        let outputs = ["list": list.jsonData(), "each/each[0]": first.jsonData()]
        let acceptance = try harness.scheduler.submit(spec, id: "g2", reusing: outputs, now: harness.now)
        harness.record(acceptance.actions)
        #expect(acceptance.reused == 2, "list and each[0]")
        #expect(try harness.child("g2", "each/each[0]").phase == .succeeded)
        #expect(harness.attempt("each/each[1]", group: "g2") != nil)
        try harness.succeed("each/each[1]", output: ["n": 2], group: "g2")
        #expect(try JSONValue(jsonData: try #require(harness.attempt("sum", group: "g2")).input) == ["all": [1, 2]])
    }
}

extension MapTests {
    /// Simulation, seed 24: a map cancelled before its producer finished ends cancelled; a
    /// restart used to apply the journaled cancel only after replaying the producer's finish,
    /// so the map decided again, by its `if:`, and ended skipped, skipping a dependent that was
    /// running. Its end is journaled and replayed in its place.
    @Test func aRestartReplaysHowAMapEndedInItsPlace() throws {
        var harness = SchedulerHarness()
        harness.scheduler.emitsRecords = true
        var journal = RestoreTests.Journal()
        harness.addWorker(1, slots: 8)
        let spec = GroupSpec(
            "g", onChildFailure: .continue,
            children: [
                leaf("list"),
                ChildSpec("each", run: "echo", condition: "outputs.list.n > 5", map: MapSpec(from: "list")),
                leaf("next", after: ["each"]),
            ])
        try harness.submit(spec, id: "g")
        journal.specs["g"] = spec
        harness.record(try harness.scheduler.cancelChild("g", path: "each", reason: .custom("no"), now: harness.now))
        journal.cancels["g", default: []].append(("each", "no"))
        #expect(try harness.child("g", "each").phase == .cancelled)
        #expect(harness.attempt("next") != nil, "onChildFailure continue: next runs after the cancelled map")
        try harness.succeed("list", output: ["n": 1])
        journal.absorb(&harness)

        var restarted = RestoreTests().restarted(journal, at: harness.now + .seconds(1))
        #expect(try restarted.child("g", "each").phase == .cancelled)
        #expect(try restarted.child("g", "next").phase == .running, "still the attempt in flight, not skipped")
        restarted.addWorker(2, slots: 8)
        restarted.advance(.seconds(30))
        try restarted.succeed("next")
        #expect(restarted.finished["g"]?.phase == .cancelled)
    }
}

/// The review's cases: holds, conditions of enclosing groups, `cancel-group`, rerun, injection
/// from a map that ended without procedures, skips.
extension MapTests {
    /// A map inside a holding group whose producer is outside it and takes the same category:
    /// the hold waits for the producer (as it would for a procedure waiting for it), so there
    /// is no deadlock, and the procedures made later wait for nothing outside.
    @Test func aMapInsideAHoldingGroupWithAProducerOutsideIt() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        let spec = GroupSpec(
            "g",
            children: [
                ChildSpec(
                    "h", exclusive: ["db"],
                    children: [leaf("a"), ChildSpec("m", run: "echo", map: MapSpec(from: "p"))]),
                leaf("p", exclusive: ["db"]),
            ])
        try harness.submit(spec, id: "g")
        #expect(harness.attempt("h/a") == nil, "h takes db only after p, which m waits for")
        try harness.succeed("p", output: [1, 2])
        try harness.succeed("h/a")
        try harness.succeed("h/m/m[0]")
        try harness.succeed("h/m/m[1]")
        #expect(harness.finished["g"]?.phase == .succeeded)
    }

    /// A map in a cleanup group whose `if: failed(deploy)` decides: deploy's failure does not
    /// cancel the map, as it would not cancel a procedure in its place.
    @Test func anEnclosingGroupsIfDecidesForTheMap() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        let spec = GroupSpec(
            "g",
            children: [
                leaf("deploy"),
                ChildSpec(
                    "cleanup", condition: "failed(deploy)",
                    children: [leaf("list"), ChildSpec("each", run: "echo", map: MapSpec(from: "list"))]),
            ])
        try harness.submit(spec, id: "g")
        try harness.fail("deploy")
        try harness.succeed("cleanup/list", output: ["x"])
        #expect(harness.attempt("cleanup/each/each[0]") != nil)
    }

    /// `cancel-group`: a failure in the map's group cancels the map that has not fanned out,
    /// at once; its producer's later list makes nothing.
    @Test func cancelGroupEndsAMapThatHasNotFannedOut() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        let spec = GroupSpec(
            "g",
            children: [
                leaf("list"),
                ChildSpec(
                    "work", onChildFailure: .cancelGroup,
                    children: [leaf("bad"), ChildSpec("each", run: "echo", map: MapSpec(from: "list"))]),
            ])
        try harness.submit(spec, id: "g")
        try harness.fail("work/bad")
        #expect(try harness.child("g", "work/each").phase == .cancelled)
        #expect(try harness.child("g", "work").phase.isFinished)
        try harness.succeed("list", output: [1, 2])
        #expect(harness.attempt("work/each/each[0]") == nil)
        #expect(harness.finished["g"]?.phase == .failed)
    }

    /// A dependent that injects from a map that failed without procedures is cancelled (its
    /// producer failed), not given an empty list, even under `continue`.
    @Test func injectingFromAMapThatFailedCancelsTheConsumer() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        let spec = GroupSpec(
            "g", onChildFailure: .continue,
            children: [
                leaf("list"),
                ChildSpec("each", run: "echo", map: MapSpec(from: "list", select: "files")),
                leaf("sum", inject: [Injection(from: "each", into: "all")]),
            ])
        try harness.submit(spec, id: "g")
        try harness.succeed("list", output: ["files": 3])
        #expect(try harness.child("g", "each").phase == .failed)
        let sum = try harness.child("g", "sum")
        #expect(sum.phase == .cancelled)
        #expect(sum.error?.contains("\"each\"") == true, "\(sum.error ?? "")")
    }

    /// A nested group whose only child is a map that was skipped reads as skipped, and what
    /// waits for it is skipped too.
    @Test func aGroupOfASkippedMapIsSkipped() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        let spec = GroupSpec(
            "g",
            children: [
                leaf("list"),
                ChildSpec(
                    "wrap", children: [ChildSpec("each", run: "echo", condition: "false", map: MapSpec(from: "list"))]),
                leaf("after", after: ["wrap"]),
            ])
        try harness.submit(spec, id: "g")
        try harness.succeed("list", output: [1])
        #expect(try harness.child("g", "wrap/each").phase == .skipped)
        #expect(try harness.child("g", "wrap/each").error?.contains("if \"false\" was false") == true)
        #expect(try harness.child("g", "wrap").phase == .skipped)
        #expect(try harness.child("g", "after").phase == .skipped)
    }

    /// Rerun: when the producer runs again, the map's procedures are made anew (none reused),
    /// and what gathers the map runs again whenever the map does.
    @Test func aRerunWhoseProducerRunsAgainReusesNoneOfTheMap() throws {
        var harness = SchedulerHarness()
        harness.addWorker(1, slots: 8)
        let spec = Self.spec()
        let first: JSONValue = ["n": 1]
        let outputs = ["each/each[0]": first.jsonData(), "sum": first.jsonData()]
        let acceptance = try harness.scheduler.submit(spec, id: "g2", reusing: outputs, now: harness.now)
        harness.record(acceptance.actions)
        #expect(acceptance.reused == 0)
        try harness.succeed("list", output: ["files": ["z"]], group: "g2")
        #expect(harness.attempt("each/each[0]", group: "g2") != nil, "list ran again: each[0] is made anew")
    }
}
