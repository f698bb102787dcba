import CohortSpec
import Testing

@testable import CohortCore

@Suite struct SubmitTests {
    @Test func submittingTheSameIDTwiceIsIdempotent() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        let spec = GroupSpec("g", children: [leaf("a"), leaf("b")])
        let first = try h.submit(spec, id: "release-42")
        let second = try h.submit(spec, id: "release-42")
        #expect(first.id == "release-42" && second.id == "release-42")
        #expect(!first.alreadySubmitted && second.alreadySubmitted)
        #expect(h.dispatches.count == 2)
        #expect(h.scheduler.groupOverviews().count == 1)
    }

    @Test func reusingAnIDForAnotherSpecIsAConflict() throws {
        var h = SchedulerHarness()
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "x")
        #expect(throws: SchedulerError.self) { try h.submit(GroupSpec("g", children: [leaf("b")]), id: "x") }
    }

    @Test func badIDsAreRefused() throws {
        var h = SchedulerHarness()
        for id in ["", "has space", "tab\there", String(repeating: "x", count: 201)] {
            #expect(throws: SchedulerError.self) { try h.submit(GroupSpec("g", children: [leaf("a")]), id: id) }
        }
    }

    @Test func generatedIDsAreUniqueAndNamedAfterTheGroup() throws {
        var h = SchedulerHarness()
        let a = try h.submit(GroupSpec("release", children: [leaf("a")]))
        let b = try h.submit(GroupSpec("release", children: [leaf("a")]))
        #expect(a.id != b.id)
        #expect(a.id.hasPrefix("release-") && b.id.hasPrefix("release-"))
        #expect(h.scheduler.groupOverviews().map(\.id) == [a.id, b.id])
    }

    @Test func finishedGroupsBeyondTheRetentionAreForgottenOldestFirst() throws {
        var h = SchedulerHarness { $0.finishedGroupRetention = 2 }
        h.addWorker(1, slots: 8)
        for index in 0..<4 {
            try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g\(index)")
            try h.succeed("a", group: "g\(index)")
        }
        #expect(h.scheduler.groupOverviews().map(\.id) == ["g2", "g3"])
    }

    @Test func statusTimesFollowTheManualClock() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        h.now = .zero + .seconds(100)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        h.now = .zero + .seconds(101)
        try h.start(try #require(h.attempt("a")))
        h.now = .zero + .seconds(103)
        try h.succeed("a")
        let snapshot = try h.scheduler.groupSnapshot("g")
        #expect(snapshot.submittedAt == .zero + .seconds(100))
        #expect(snapshot.finishedAt == .zero + .seconds(103))
        #expect(snapshot.children[0].startedAt == .zero + .seconds(101))
        #expect(snapshot.children[0].finishedAt == .zero + .seconds(103))
        #expect(snapshot.children[0].workerName == "worker-1")
    }

    @Test func childrenThatNeverReachedAWorkerShowAttemptZero() throws {
        var h = SchedulerHarness(prefetch: 0)
        h.addWorker(1, slots: 1)
        try h.submit(GroupSpec("first", children: [leaf("busy")]), id: "first")
        // `queued` holds its lock but has no free slot; `blocked` waits for it.
        try h.submit(
            GroupSpec("g", children: [leaf("queued", exclusive: ["db"]), leaf("blocked", after: ["queued"])]), id: "g")
        #expect(try h.child("g", "queued").phase == .ready)
        #expect(try h.child("g", "queued").attempt == 0)
        #expect(try h.child("g", "queued").worker == nil)
        #expect(try h.child("g", "blocked").attempt == 0)
        try h.succeed("busy")
        #expect(try h.child("g", "queued").attempt == 1)
        #expect(try h.child("g", "queued").workerName == "worker-1")

        // Cancelled before it reached a worker: it never started.
        try h.submit(GroupSpec("late", children: [leaf("never")]), id: "late")
        h.record(try h.scheduler.cancelGroup("late", reason: "stop", now: h.now))
        #expect(h.finished["late"]?.phase == .cancelled)
        #expect(try h.child("late", "never").attempt == 0)
        #expect(try h.child("g", "blocked").attempt == 0)
    }
}
