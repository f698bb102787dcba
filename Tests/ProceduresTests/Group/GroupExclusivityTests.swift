import CohortTestSupport
import Dispatch
import Testing

@testable import Procedures

@Suite("Groups and mutual exclusion")
struct GroupExclusivityTests {
    func exclusive(_ name: String, _ category: String, gauge: Gauge? = nil, finishesItself: Bool = true)
        -> TestProcedure
    {
        let procedure = TestProcedure(name, finishesItself: finishesItself, gauge: gauge)
        procedure.addCondition(MutuallyExclusive(category: category))
        return procedure
    }

    /// ProcedureKit #47/#486: a group and its own child in the same category deadlocked.
    @Test func groupAndItsChildInTheSameCategoryDoNotDeadlock() async throws {
        let queue = makeQueue()
        let child = exclusive("child", "db")
        let group = GroupProcedure(child)
        group.addCondition(MutuallyExclusive(category: "db"))
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
        #expect(child.didExecute)
        #expect(group.fencingTokens["db"] != nil)
        #expect(child.fencingTokens["db"] != nil)
    }

    @Test func siblingsInsideAGroupHoldingTheCategoryStillExcludeEachOther() async throws {
        let queue = makeQueue()
        let gauge = Gauge()
        let children = (0..<4).map { exclusive("c\($0)", "db", gauge: gauge, finishesItself: false) }
        let group = GroupProcedure(children: children)
        group.addCondition(MutuallyExclusive(category: "db"))
        queue.add(group)
        for _ in children {
            try await waitUntil("a child executes") { children.contains { $0.isExecuting } }
            #expect(children.filter { $0.isExecuting }.count == 1)
            children.first { $0.isExecuting }!.complete()
        }
        #expect(try await finished(group).isSucceeded)
        #expect(gauge.max == 1)
    }

    @Test func groupHoldingACategoryKeepsOutsidersOutUntilItFinishes() async throws {
        let queue = makeQueue()
        let child = exclusive("child", "db", finishesItself: false)
        let group = GroupProcedure(child)
        group.addCondition(MutuallyExclusive(category: "db"))
        queue.add(group)
        try await waitUntil("child executes") { child.isExecuting }
        let outsider = exclusive("outsider", "db")
        queue.add(outsider)
        try await waitUntil("outsider waits for the lock") { outsider.state == .evaluatingConditions }
        child.complete()
        try await finished(group)
        #expect(try await finished(outsider).isSucceeded)
        #expect(try #require(outsider.fencingTokens["db"]) > (try #require(group.fencingTokens["db"])))
    }

    @Test func childCategoryTheGroupDoesNotHoldExcludesProceduresOutsideTheGroup() async throws {
        let queue = makeQueue()
        let outsider = exclusive("outsider", "db", finishesItself: false)
        queue.add(outsider)
        try await waitUntil("outsider executes") { outsider.isExecuting }
        let child = exclusive("child", "db")
        let group = GroupProcedure(child)
        queue.add(group)
        try await waitUntil("child waits for the lock") { child.state == .evaluatingConditions }
        #expect(!child.didExecute)
        outsider.complete()
        #expect(try await finished(group).isSucceeded)
        #expect(child.didExecute)
    }

    @Test func grandchildGetsTheCategoryFromTheAncestorThatHoldsIt() async throws {
        let queue = makeQueue()
        let gauge = Gauge()
        let grandchildren = (0..<3).map { exclusive("g\($0)", "db", gauge: gauge) }
        let inner = GroupProcedure(children: grandchildren)
        let outer = GroupProcedure(inner)
        outer.addCondition(MutuallyExclusive(category: "db"))
        queue.add(outer)
        #expect(try await finished(outer).isSucceeded)
        #expect(grandchildren.allSatisfy { $0.didExecute })
        #expect(gauge.max == 1)
    }

    @Test func nestedGroupsHoldingTheSameCategoryDoNotDeadlock() async throws {
        let queue = makeQueue()
        let leaf = exclusive("leaf", "db")
        let inner = GroupProcedure(leaf)
        inner.addCondition(MutuallyExclusive(category: "db"))
        let sibling = exclusive("sibling", "db")
        let outer = GroupProcedure(inner, sibling)
        outer.addCondition(MutuallyExclusive(category: "db"))
        queue.add(outer)
        #expect(try await finished(outer).isSucceeded)
        #expect(leaf.didExecute && sibling.didExecute)
    }

    /// Children of groups nested before the outer group is enqueued must use the queue's
    /// exclusivity manager (on a worker: the cluster's), not the process-wide default.
    @Test func childrenOfNestedGroupsUseTheQueuesExclusivityManager() async throws {
        let queue = makeQueue()
        let manager = RecordingExclusivityManager()
        queue.exclusivityManager = manager
        let leaf = exclusive("leaf", "db")
        let inner = GroupProcedure(leaf)
        let outer = GroupProcedure(inner)
        queue.add(outer)
        #expect(try await finished(outer).isSucceeded)
        #expect(manager.calls(.request, for: "leaf").count == 1)
        #expect(manager.calls(.release, for: "leaf").count == 1)
    }

    @Test func childOfANestedGroupWaitsForAnOutsiderHoldingItsCategory() async throws {
        let queue = makeQueue()
        let outsider = exclusive("outsider", "db", finishesItself: false)
        queue.add(outsider)
        try await waitUntil("outsider executes") { outsider.isExecuting }
        let leaf = exclusive("leaf", "db")
        let outer = GroupProcedure(GroupProcedure(leaf))
        queue.add(outer)
        try await waitUntil("leaf waits") { leaf.state == .evaluatingConditions }
        outsider.complete()
        #expect(try await finished(outer).isSucceeded)
        #expect(try #require(leaf.fencingTokens["db"]) > (try #require(outsider.fencingTokens["db"])))
    }

    @Test func cancellingAGroupWaitingForItsCategoryFinishesItWithoutRunningChildren() async throws {
        let queue = makeQueue()
        let outsider = exclusive("outsider", "db", finishesItself: false)
        queue.add(outsider)
        try await waitUntil("outsider executes") { outsider.isExecuting }
        let child = exclusive("child", "db")
        let group = GroupProcedure(child)
        group.addCondition(MutuallyExclusive(category: "db"))
        queue.add(group)
        try await waitUntil("group waits for the lock") { group.state == .evaluatingConditions }
        group.cancel()
        #expect(try await finished(group).isCancelled)
        #expect(!child.didExecute)
        #expect(outsider.isExecuting)
        outsider.complete()
        try await allFinished(queue)
    }

    @Test func cancellingAGroupWithdrawsAChildWaitingForTheQueuesLock() async throws {
        let queue = makeQueue()
        let outsider = exclusive("outsider", "db", finishesItself: false)
        queue.add(outsider)
        try await waitUntil("outsider executes") { outsider.isExecuting }
        let child = exclusive("child", "db")
        let group = GroupProcedure(child)
        queue.add(group)
        try await waitUntil("child waits for the lock") { child.state == .evaluatingConditions }
        group.cancel()
        // The group finishes while the outsider still holds the lock: the child withdrew.
        #expect(try await finished(group).isCancelled)
        #expect(!child.didExecute)
        #expect(outsider.isExecuting)
        outsider.complete()
        try await allFinished(queue)
    }

    @Test func cancellingAGroupWithdrawsAChildWaitingInTheGroupsOwnTable() async throws {
        let queue = makeQueue()
        let holder = exclusive("holder", "db", finishesItself: false)
        let waiter = exclusive("waiter", "db")
        let group = GroupProcedure(holder, waiter)
        group.addCondition(MutuallyExclusive(category: "db"))
        queue.add(group)
        try await waitUntil("holder executes") { holder.isExecuting }
        try await waitUntil("waiter waits") { waiter.state == .evaluatingConditions }
        group.cancel()
        #expect(try await finished(group).isCancelled)
        #expect(!waiter.didExecute)
        // The group released its category as it finished.
        let after = exclusive("after", "db")
        queue.add(after)
        #expect(try await finished(after).isSucceeded)
    }

    /// On a queue with a finite `maxConcurrentCount`, a procedure takes its categories only
    /// once it holds a slot: an outsider waiting for the slot a group occupies must not hold
    /// the category the group's child needs (that was a deadlock: neither could move).
    @Test
    func groupOccupyingTheOnlySlotAndAnOutsiderWaitingForItDoNotDeadlock() async throws {
        let queue = makeQueue(maxConcurrentCount: 1)
        let gate = TestProcedure("gate", finishesItself: false)
        let child = exclusive("child", "db")
        child.addDependency(gate)
        let group = GroupProcedure(gate, child)
        queue.add(group)
        try await waitUntil("gate executes") { gate.isExecuting }
        let outsider = exclusive("outsider", "db")
        queue.add(outsider)
        try await waitUntil("outsider queued for the slot, its category not taken") {
            outsider.core.withLock { $0.pendingCategories == ["db"] }
        }
        gate.complete()
        #expect(try await finished(group, within: .seconds(5)).isSucceeded)
        #expect(try await finished(outsider, within: .seconds(5)).isSucceeded)
    }

    /// Open question, left in the engine (see the test report): a descendant granted a
    /// category by its group's own table gets that table's token (1, 2, ...), smaller than
    /// the tokens already issued for the category, so a fencing resource would refuse it.
    @Test
    func descendantGrantedByItsGroupCarriesATokenNoSmallerThanTheGroups() async throws {
        let queue = makeQueue()
        for index in 0..<3 {
            let earlier = exclusive("earlier\(index)", "db")
            queue.add(earlier)
            try await finished(earlier)
        }
        let child = exclusive("child", "db")
        let group = GroupProcedure(child)
        group.addCondition(MutuallyExclusive(category: "db"))
        queue.add(group)
        try await finished(group)
        #expect(try #require(child.fencingTokens["db"]) >= (try #require(group.fencingTokens["db"])))
    }
}
