import Testing

@testable import CohortCore

/// Counting locks (a category with a limit) and ranks in the cluster lock table.
@Suite struct CountingLockTests {
    private func cluster(_ categories: String...) -> [LockLevel] {
        [LockLevel(scope: .cluster, categories: Set(categories))]
    }

    private func table(limits: [String: Int]) -> LockTable {
        var table = LockTable()
        table.declare(limits)
        return table
    }

    @Test func nHoldersAreGrantedAndTheNextOneWaits() {
        var table = table(limits: ["quota": 3])
        for holder in 1...3 {
            let owner = LockOwner(group: "g", child: "c\(holder)", attempt: 1)
            #expect(table.request(.attempt(AttemptID(UInt64(holder))), levels: cluster("quota"), owner: owner) != nil)
        }
        #expect(table.request(.attempt(4), levels: cluster("quota")) == nil)
        #expect(table.waiters(of: "quota") == [.attempt(4)])
        let snapshot = table.snapshot()
        #expect(snapshot.map(\.limit) == [3])
        #expect(snapshot.first?.holders.map(\.owner.child) == ["c1", "c2", "c3"])
        #expect(snapshot.first?.holders.map(\.token) == [1, 2, 3])
    }

    @Test func eachHolderHasItsOwnStrictlyIncreasingToken() {
        var table = table(limits: ["quota": 2])
        table.tokenFloor = 100
        var tokens: [UInt64] = []
        for holder in 1...2 {
            tokens.append(
                table.request(.attempt(AttemptID(UInt64(holder))), levels: cluster("quota"))?.tokens["quota"] ?? 0)
        }
        #expect(table.request(.attempt(3), levels: cluster("quota")) == nil)
        tokens.append(table.remove(.attempt(1)).first?.tokens["quota"] ?? 0)
        #expect(tokens == [101, 102, 103])
        #expect(table.tokens(of: .attempt(2)) == ["quota": 102])
        #expect(table.tokens(of: .attempt(3)) == ["quota": 103])
    }

    @Test func releasingOneUnitGrantsTheFirstWaiterOnly() {
        var table = table(limits: ["quota": 2])
        _ = table.request(.attempt(1), levels: cluster("quota"))
        _ = table.request(.attempt(2), levels: cluster("quota"))
        #expect(table.request(.attempt(3), levels: cluster("quota")) == nil)
        #expect(table.request(.attempt(4), levels: cluster("quota")) == nil)
        #expect(table.remove(.attempt(2)).map(\.holder) == [.attempt(3)])
        #expect(table.waiters(of: "quota") == [.attempt(4)])
        #expect(table.remove(.attempt(1)).map(\.holder) == [.attempt(4)])
    }

    @Test func aWaiterIsNotOvertakenEvenWhenUnitsAreFree() {
        // 2 needs quota and db; db is held, so 2 waits at the head of quota's queue although
        // quota has a free unit. 3 asks for quota only, later: it waits behind 2 (FIFO).
        var table = table(limits: ["quota": 2])
        _ = table.request(.attempt(1), levels: cluster("db"))
        #expect(table.request(.attempt(2), levels: cluster("quota", "db")) == nil)
        #expect(table.request(.attempt(3), levels: cluster("quota")) == nil)
        // Once db is free, 2 goes, and 3 takes quota's second unit at once.
        #expect(table.remove(.attempt(1)).map(\.holder) == [.attempt(2), .attempt(3)])
    }

    @Test func multiCategoryGrantsAreAtomicWithCounts() {
        var table = table(limits: ["a": 2, "b": 1])
        _ = table.request(.attempt(1), levels: cluster("b"))
        #expect(table.request(.attempt(2), levels: cluster("a", "b")) == nil)
        // 2 holds no unit of a while it waits.
        #expect(table.snapshot().first { $0.category == "a" }?.holders.isEmpty ?? true)
        let grants = table.remove(.attempt(1))
        #expect(grants.map(\.holder) == [.attempt(2)])
        #expect(Set(grants.first?.tokens.keys ?? [:].keys) == ["a", "b"])
    }

    @Test func countingCategoriesNeverDeadlockInACycle() {
        var table = table(limits: ["a": 2, "b": 2, "c": 2])
        for (index, pair) in [("a", "b"), ("b", "c"), ("c", "a"), ("a", "b"), ("b", "c"), ("c", "a")].enumerated() {
            _ = table.request(.attempt(AttemptID(UInt64(index + 1))), levels: cluster(pair.0, pair.1))
        }
        var running = (1...6).map { LockHolder.attempt(AttemptID(UInt64($0))) }.filter { table.state(of: $0).granted }
        var finished = 0
        while let holder = running.first {
            running.removeFirst()
            finished += 1
            running += table.remove(holder).map(\.holder)
        }
        #expect(finished == 6)
        #expect(table.isEmpty)
    }

    @Test func revokingAHolderFreesItsUnit() {
        var table = table(limits: ["quota": 1])
        _ = table.request(.group(run: 1, group: 0), levels: cluster("quota"))
        let inner = [LockLevel(scope: .group(run: 1, group: 0), categories: ["quota"])]
        #expect(table.request(.attempt(5), levels: inner) != nil)
        #expect(table.request(.attempt(6), levels: cluster("quota")) == nil)
        // The group (and its child inside) goes: the unit is 6's.
        #expect(table.remove(.group(run: 1, group: 0)).map(\.holder) == [.attempt(6)])
    }

    @Test func aGroupHoldIsOneUnitSharedByItsChildrenWhoExcludeEachOtherInside() {
        var table = table(limits: ["quota": 2])
        #expect(table.request(.group(run: 1, group: 1), levels: cluster("quota")) != nil)
        let inner = [LockLevel(scope: .group(run: 1, group: 1), categories: ["quota"])]
        #expect(table.request(.attempt(1), levels: inner) != nil)
        #expect(table.request(.attempt(2), levels: inner) == nil)
        // The cluster has one unit left for someone else.
        #expect(table.request(.attempt(3), levels: cluster("quota")) != nil)
        #expect(table.request(.attempt(4), levels: cluster("quota")) == nil)
    }

    @Test func limitOneBehavesAsAnExclusiveLock() {
        var table = LockTable()
        #expect(table.limit(of: "db") == 1)
        #expect(table.request(.attempt(1), levels: cluster("db")) != nil)
        #expect(table.request(.attempt(2), levels: cluster("db")) == nil)
        #expect(table.snapshot().first?.limit == 1)
    }

    @Test func aDisagreeingLimitIsRefusedWhileTheCategoryIsInForce() {
        var table = table(limits: ["quota": 3])
        let conflicts = table.conflicts(with: ["quota": 5])
        #expect(conflicts == [LockTable.LimitConflict(category: "quota", declared: 5, inForce: 3)])
        #expect(conflicts.first?.description.contains("5") == true)
        #expect(conflicts.first?.description.contains("3") == true)
        #expect(table.conflicts(with: ["quota": 3]).isEmpty)
        // A category in use at the default limit 1 refuses another limit too.
        _ = table.request(.attempt(1), levels: cluster("db"))
        let inUse = table.conflicts(with: ["db": 2])
        #expect(inUse == [LockTable.LimitConflict(category: "db", declared: 2, inForce: 1, declaredByAGroup: false)])
        #expect(inUse.first?.description.contains("its holders or waiters still use it") == true)
    }

    @Test func theLimitIsDroppedWhenNoGroupDeclaresItAndTheCategoryIsIdle() {
        var table = table(limits: ["quota": 3])
        _ = table.request(.attempt(1), levels: cluster("quota"))
        table.undeclare(["quota": 3])
        // Still held: the limit stays in force.
        #expect(table.conflicts(with: ["quota": 5]).count == 1)
        _ = table.remove(.attempt(1))
        #expect(table.conflicts(with: ["quota": 5]).isEmpty)
        table.declare(["quota": 5])
        #expect(table.limit(of: "quota") == 5)
        // Undeclared and idle: the next request sees limit 1 again.
        table.undeclare(["quota": 5])
        _ = table.request(.attempt(2), levels: cluster("quota"))
        #expect(table.limit(of: "quota") == 1)
        #expect(table.request(.attempt(3), levels: cluster("quota")) == nil)
    }

    @Test func theConfiguredLimitWinsOverDeclaredOnes() {
        var table = LockTable()
        table.configuredLimits = ["quota": 2]
        #expect(table.conflicts(with: ["quota": 7]).isEmpty)
        table.declare(["quota": 7])
        #expect(table.limit(of: "quota") == 2)
        _ = table.request(.attempt(1), levels: cluster("quota"))
        _ = table.request(.attempt(2), levels: cluster("quota"))
        #expect(table.request(.attempt(3), levels: cluster("quota")) == nil)
    }

    @Test func aSmallerRankGoesFirstAmongWaitersAndEqualRanksKeepArrivalOrder() {
        var table = LockTable()
        _ = table.request(.attempt(1), levels: cluster("db"), rank: 0)
        #expect(table.request(.attempt(2), levels: cluster("db"), rank: 10) == nil)
        #expect(table.request(.attempt(3), levels: cluster("db"), rank: 10) == nil)
        #expect(table.request(.attempt(4), levels: cluster("db"), rank: 5) == nil)
        #expect(table.waiters(of: "db") == [.attempt(4), .attempt(2), .attempt(3)])
        #expect(table.remove(.attempt(1)).map(\.holder) == [.attempt(4)])
    }

    @Test func aBetterRankedNewcomerTakesAFreeUnitBeforeABlockedWaiter() {
        // 2 waits for quota and db (db held); a better-ranked 3 needs quota only: it is ahead
        // of 2 in quota's queue, so it takes the free unit.
        var table = table(limits: ["quota": 2])
        _ = table.request(.attempt(1), levels: cluster("db"), rank: 0)
        #expect(table.request(.attempt(2), levels: cluster("quota", "db"), rank: 10) == nil)
        #expect(table.request(.attempt(3), levels: cluster("quota"), rank: 5) != nil)
    }
}
