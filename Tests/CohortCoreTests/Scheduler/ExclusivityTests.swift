import CohortSpec
import Testing

@testable import CohortCore

@Suite struct ExclusivityTests {
    @Test func locksAreGrantedBeforeDispatchAndTheDispatchCarriesTheTokens() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        h.addWorker(2, slots: 4)
        try h.submit(GroupSpec("g", children: (0..<3).map { leaf("c\($0)", exclusive: ["db", "cache"]) }), id: "g")
        #expect(h.running.count == 1)
        var tokens: [UInt64] = []
        while let order = h.running.values.first?.order {
            #expect(h.running.count == 1)
            #expect(Set(order.tokens.keys) == ["db", "cache"])
            tokens.append(order.tokens["db"]!)
            try h.succeed(order.ref.path)
        }
        #expect(tokens == [1, 2, 3])
        #expect(h.scheduler.locks.isEmpty)
    }

    @Test func aWaitingChildSaysWhichLockAndWhoHoldsIt() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(GroupSpec("g", children: [leaf("a", exclusive: ["db"]), leaf("b", exclusive: ["db"])]), id: "g")
        let waiting = try h.child("g", "b")
        #expect(waiting.phase == .waiting)
        #expect(waiting.waitingReason == "waiting for lock db held by g/a")
        let snapshot = h.scheduler.lockSnapshot()
        #expect(snapshot.map(\.category) == ["db"])
        #expect(snapshot[0].holder?.child == "a" && snapshot[0].holder?.worker == SessionID(1))
        #expect(snapshot[0].waiters.map(\.child) == ["b"])
    }

    @Test func groupsSharingACategoryExcludeEachOtherAcrossGroups() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(GroupSpec("one", children: [leaf("a", exclusive: ["db"])]), id: "one")
        try h.submit(GroupSpec("two", children: [leaf("a", exclusive: ["db"])]), id: "two")
        #expect(h.running.count == 1)
        try h.succeed("a", group: "one")
        #expect(h.attempt("a", group: "two") != nil)
    }

    @Test func aCycleOfCategoryPairsFinishesWithoutOverlap() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(
            GroupSpec(
                "g",
                children: [
                    leaf("ab", exclusive: ["a", "b"]), leaf("bc", exclusive: ["b", "c"]),
                    leaf("ca", exclusive: ["c", "a"]),
                ]), id: "g")
        var ran: [String] = []
        while let order = h.running.values.first?.order {
            #expect(h.running.count == 1)
            ran.append(order.ref.path)
            try h.succeed(order.ref.path)
        }
        #expect(ran.count == 3)
        #expect(h.finished["g"]?.phase == .succeeded)
    }

    @Test func aNestedGroupHoldsItsCategoriesAndItsChildrenDoNotQueueBehindIt() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(
            GroupSpec(
                "g",
                children: [
                    ChildSpec(
                        "deploy", exclusive: ["prod"],
                        children: [
                            leaf("migrate", exclusive: ["prod"]), leaf("restart", exclusive: ["prod"]), leaf("notify"),
                        ]),
                    leaf("outsider", exclusive: ["prod"]),
                ]), id: "g")
        // The group holds prod; one of its prod children runs (siblings exclude each other),
        // the child without categories runs beside it, the outsider waits for the group.
        #expect(h.runningPaths.contains("deploy/notify"))
        #expect(h.runningPaths.filter { $0 == "deploy/migrate" || $0 == "deploy/restart" }.count == 1)
        #expect(!h.runningPaths.contains("outsider"))
        // notify runs under the group's token; migrate and restart, which declare prod, each
        // get a larger one of their own, in grant order.
        let groupToken = try #require(h.attempt("deploy/notify")?.tokens["prod"])
        let migrate = try #require(h.attempt("deploy/migrate")?.tokens["prod"])
        #expect(migrate > groupToken)
        try h.succeed("deploy/migrate")
        #expect((h.attempt("deploy/restart")?.tokens["prod"] ?? 0) > migrate)
        try h.succeed("deploy/restart")
        #expect(!h.runningPaths.contains("outsider"))
        try h.succeed("deploy/notify")
        let outsider = try #require(h.attempt("outsider"))
        #expect(outsider.tokens["prod"]! > groupToken)
    }

    @Test func aTopLevelGroupsCategoriesAreHeldForItsWholeRun() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 8)
        try h.submit(
            GroupSpec("first", exclusive: ["release"], children: [leaf("a"), leaf("b", after: ["a"])]), id: "first")
        try h.submit(GroupSpec("second", exclusive: ["release"], children: [leaf("a")]), id: "second")
        #expect(h.runningPaths == ["a"])
        try h.succeed("a", group: "first")
        #expect(h.attempt("a", group: "second") == nil)
        try h.succeed("b", group: "first")
        #expect(h.attempt("a", group: "second") != nil)
    }

    @Test func localRequestsGoThroughTheSameTable() throws {
        var h = SchedulerHarness()
        let worker = h.addWorker(1, slots: 8)
        try h.submit(GroupSpec("g", children: [leaf("holder", exclusive: ["db"]), leaf("plain")]), id: "g")
        let holder = try #require(h.attempt("holder"))
        let plain = try #require(h.attempt("plain"))
        // A procedure created by `plain` asks for db: it waits behind `holder`.
        let asked = h.scheduler.lockRequested(1, by: worker, for: plain.ref, categories: ["db"], now: h.now)
        #expect(asked.isEmpty)
        // A procedure created by `holder` itself gets db from the attempt's own table.
        let own = h.scheduler.lockRequested(2, by: worker, for: holder.ref, categories: ["db"], now: h.now)
        #expect(own == [.grant(worker, request: 2, tokens: ["db": holder.tokens["db"]!])])
        #expect(h.scheduler.lockReleased(2, by: worker, now: h.now).isEmpty)
        h.record([])
        try h.finish(holder, .succeeded(output: .init("{}".utf8)))
        let granted = h.log.contains {
            if case .grant(worker, 1, let tokens) = $0 { return tokens["db"] == 2 }
            return false
        }
        #expect(granted)
        // Requests from attempts that are not running there are denied.
        let denied = h.scheduler.lockRequested(3, by: SessionID(9), for: plain.ref, categories: ["x"], now: h.now)
        guard case .deny(_, 3, .denied, _) = denied.first else {
            Issue.record("expected a denial, got \(denied)")
            return
        }
    }

    // MARK: No deadlock by construction (issue 12, item 2)

    /// Group `ga` holds p and its child needs q; group `gb` holds q and its child needs p.
    /// Each group's hold covers its child's category, taken atomically with its own: one group
    /// holds both, the other waits holding nothing, and both finish.
    @Test func crossedHoldsOfTwoGroupsDoNotDeadlock() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            GroupSpec("ga", exclusive: ["p"], children: [leaf("child", exclusive: ["q"])]), id: "ga")
        try h.submit(
            GroupSpec("gb", exclusive: ["q"], children: [leaf("child", exclusive: ["p"])]), id: "gb")
        #expect(h.running.count == 1)
        #expect(h.attempt("child", group: "ga") != nil)
        let waiting = try h.child("gb", "child")
        #expect(waiting.waitingReason == "the group waiting for lock q held by ga", "\(waiting)")
        try h.succeed("child", group: "ga")
        #expect(h.finished["ga"]?.phase == .succeeded)
        try h.succeed("child", group: "gb")
        #expect(h.finished["gb"]?.phase == .succeeded)
    }

    /// The same inside one spec: two nested groups whose holds cross.
    @Test func crossedHoldsOfNestedGroupsInOneSpecDoNotDeadlock() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            GroupSpec(
                "one",
                children: [
                    ChildSpec("a", exclusive: ["p"], children: [leaf("x", exclusive: ["q"])]),
                    ChildSpec("b", exclusive: ["q"], children: [leaf("y", exclusive: ["p"])]),
                ]), id: "one")
        #expect(h.runningPaths.count == 1)
        let first = try #require(h.runningPaths.first)
        try h.succeed(first)
        let second = try #require(h.runningPaths.first)
        #expect(second != first)
        try h.succeed(second)
        #expect(h.finished["one"]?.phase == .succeeded)
    }

    /// A holding group takes its hold only once what its children wait for outside it has
    /// finished: here `second` waits for `x`, which needs p, so the group (whose hold covers
    /// p for `second`) must not hold p while `x` waits for it.
    @Test func aGroupTakesItsHoldOnlyAfterWhatItsChildrenWaitForOutsideIt() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            GroupSpec(
                "dag",
                children: [
                    leaf("slow"),
                    leaf("x", after: ["slow"], exclusive: ["p"]),
                    ChildSpec(
                        "g", exclusive: ["a"],
                        children: [leaf("first"), leaf("second", after: ["x"], exclusive: ["p"])]),
                ]), id: "dag")
        #expect(h.runningPaths == ["slow"])
        let first = try h.child("dag", "g/first")
        #expect(
            first.waitingReason
                == "group \"g\" takes its locks (a, p) once what its children wait for outside it has finished",
            "\(first)")
        try h.succeed("slow")
        #expect(h.runningPaths == ["x"], "x gets p: the group does not hold it yet")
        try h.succeed("x")
        #expect(h.runningPaths == ["g/first", "g/second"])
        try h.succeed("g/first")
        try h.succeed("g/second")
        #expect(h.finished["dag"]?.phase == .succeeded)
    }

    /// Inside a holding group, children that declare the same category still exclude each
    /// other (from the group's own table), with the group's token.
    @Test func childrenInsideAHoldingGroupStillExcludeEachOther() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            GroupSpec(
                "g", exclusive: ["r"],
                children: [leaf("x", exclusive: ["q"]), leaf("y", exclusive: ["q"]), leaf("z")]), id: "g")
        #expect(h.runningPaths == ["x", "z"])
        let x = try #require(h.attempt("x"))
        #expect(x.tokens["q"] != nil && x.tokens["r"] != nil)
        // Another group using q waits for g's hold, not for x.
        try h.submit(GroupSpec("other", children: [leaf("w", exclusive: ["q"])]), id: "other")
        #expect(h.attempt("w") == nil)
        try h.succeed("x")
        #expect(h.runningPaths == ["y", "z"])
        #expect(h.attempt("w") == nil)
        try h.succeed("y")
        try h.succeed("z")
        #expect(h.finished["g"]?.phase == .succeeded)
        let w = try #require(h.attempt("w"))
        #expect(w.tokens["q"]! > x.tokens["q"]!)
    }

    /// A running attempt that holds categories may lock locally only those: waiting for
    /// another while holding could close a cycle. One that holds nothing may lock anything.
    @Test func aLocalRequestOutsideWhatTheAttemptHoldsIsRefused() throws {
        var h = SchedulerHarness()
        let worker = h.addWorker(1, slots: 4)
        try h.submit(GroupSpec("g", children: [leaf("holder", exclusive: ["p"]), leaf("free")]), id: "g")
        let holder = try #require(h.attempt("holder"))
        let refused = h.scheduler.lockRequested(1, by: worker, for: holder.ref, categories: ["q"], now: h.now)
        guard case .deny(_, 1, .denied, let reason)? = refused.first else {
            Issue.record("expected a denial, got \(refused)")
            return
        }
        #expect(
            reason
                == "an attempt of \"holder\" may lock only its exclusive categories (p), not q: declare it in the "
                + "child's `exclusive` (locks taken while holding others could deadlock)")
        let own = h.scheduler.lockRequested(2, by: worker, for: holder.ref, categories: ["p"], now: h.now)
        #expect(own.contains { if case .grant(_, 2, _) = $0 { true } else { false } }, "\(own)")
        let free = try #require(h.attempt("free"))
        let anything = h.scheduler.lockRequested(3, by: worker, for: free.ref, categories: ["q"], now: h.now)
        #expect(anything.contains { if case .grant(_, 3, _) = $0 { true } else { false } }, "\(anything)")
    }

    @Test func aLostWorkersGrantsAreRevokedAndTheNextWaiterIsGranted() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1, slots: 1)
        try h.submit(GroupSpec("g", children: [leaf("a", exclusive: ["db"])]), id: "g")
        try h.start(try #require(h.attempt("a")))
        try h.submit(GroupSpec("h", children: [leaf("b", exclusive: ["db"])]), id: "h")
        #expect(h.scheduler.locks.holder(of: "db") != nil)
        h.running.removeAll()
        h.record(h.scheduler.workerLost(one, reason: "gone", now: h.now))
        // a runs again (a worker loss), after b, which asked for db first.
        let a = try h.child("g", "a")
        #expect(a.phase == .waiting, "\(a)")
        #expect(a.waitingReason == "no connected worker offers kind \"echo\"", "\(a)")
        // b now holds db (a new token) and waits for a worker.
        #expect(try h.child("h", "b").phase == .waiting)
        #expect(try h.child("h", "b").waitingReason == "no connected worker offers kind \"echo\"")
        h.addWorker(2)
        #expect(h.attempt("b")?.tokens["db"] == 2)
    }

    @Test func cancellingAnAttemptWithdrawsItsWaitingLocalRequestsAndTellsTheWorker() throws {
        var h = SchedulerHarness()
        let worker = h.addWorker(1, slots: 8)
        try h.submit(GroupSpec("g", children: [leaf("holder", exclusive: ["db"]), leaf("asker")]), id: "g")
        let asker = try #require(h.attempt("asker"))
        #expect(h.scheduler.lockRequested(5, by: worker, for: asker.ref, categories: ["db"], now: h.now).isEmpty)
        #expect(h.scheduler.lockSnapshot().first?.waiters.map(\.child) == ["asker"])
        h.record(try h.scheduler.cancelChild("g", path: "asker", reason: "stop", now: h.now))
        #expect(h.log.contains(.deny(worker, request: 5, .cancelled, reason: "its attempt is being cancelled")))
        #expect(h.scheduler.lockSnapshot().first?.waiters.isEmpty == true)
    }

    @Test func aLostWorkersLocalGrantsAreRevokedAndTheNextWaiterIsGranted() throws {
        var h = SchedulerHarness()
        let one = h.addWorker(1, slots: 4)
        let two = h.addWorker(2, slots: 4)
        try h.submit(GroupSpec("g", children: [leaf("a"), leaf("b")]), id: "g")
        let a = try #require(h.attempt("a"))
        let b = try #require(h.attempt("b"))
        let (first, second) = h.running[a.ref.id]!.worker == one ? (a, b) : (b, a)
        #expect(h.running[second.ref.id]?.worker == two)
        let granted = h.scheduler.lockRequested(1, by: one, for: first.ref, categories: ["db"], now: h.now)
        #expect(granted == [.grant(one, request: 1, tokens: ["db": 1])])
        #expect(h.scheduler.lockRequested(1, by: two, for: second.ref, categories: ["db"], now: h.now).isEmpty)
        h.running[first.ref.id] = nil
        let actions = h.scheduler.workerLost(one, reason: "gone", now: h.now)
        #expect(actions.contains(.grant(two, request: 1, tokens: ["db": 2])))
    }

    @Test func aLocalGrantCarriesOverToTheWorkersNewSession() throws {
        var h = SchedulerHarness(prefetch: 0)
        let one = h.addWorker(1, slots: 1)
        try h.submit(GroupSpec("a", children: [leaf("a")]), id: "ga")
        let two = h.addWorker(2, slots: 1)
        try h.submit(GroupSpec("b", children: [leaf("b")]), id: "gb")
        let a = try #require(h.attempt("a"))
        let b = try #require(h.attempt("b"))
        #expect(h.running[a.ref.id]?.worker == one)
        #expect(
            h.scheduler.lockRequested(1, by: one, for: a.ref, categories: ["db"], now: h.now) == [
                .grant(one, request: 1, tokens: ["db": 1])
            ])
        #expect(h.scheduler.lockRequested(1, by: two, for: b.ref, categories: ["db"], now: h.now).isEmpty)
        // worker-1 reconnects with a new session and reports `a`: its earlier session is
        // dropped, but the grant is the attempt's and stays.
        let reconnected = h.scheduler.workerReady(
            SessionID(3), name: "worker-1", host: "host", labels: [], slots: 1, kinds: SchedulerHarness.builtins,
            running: [a.ref], now: h.now)
        #expect(!reconnected.contains { if case .grant = $0 { true } else { false } })
        #expect(h.scheduler.locks.snapshot().first?.holder?.child == "a")
        // Released from the new session: b's procedure gets it.
        #expect(
            h.scheduler.lockReleased(1, by: SessionID(3), now: h.now) == [.grant(two, request: 1, tokens: ["db": 2])])
    }
}
