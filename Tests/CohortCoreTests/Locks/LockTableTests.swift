import Testing

@testable import CohortCore

@Suite struct LockTableTests {
    private func cluster(_ categories: String...) -> [LockLevel] {
        [LockLevel(scope: .cluster, categories: Set(categories))]
    }

    @Test func grantsAreFIFOPerCategory() {
        var table = LockTable()
        #expect(table.request(.attempt(1), levels: cluster("db")) != nil)
        #expect(table.request(.attempt(2), levels: cluster("db")) == nil)
        #expect(table.request(.attempt(3), levels: cluster("db")) == nil)
        #expect(table.waiters(of: "db") == [.attempt(2), .attempt(3)])
        #expect(table.remove(.attempt(1)).map(\.holder) == [.attempt(2)])
        #expect(table.remove(.attempt(2)).map(\.holder) == [.attempt(3)])
        #expect(table.remove(.attempt(3)).isEmpty)
        #expect(table.isEmpty)
    }

    @Test func everyCategoryOfARequestIsGrantedAtOnceOrNotAtAll() {
        var table = LockTable()
        _ = table.request(.attempt(1), levels: cluster("a"))
        #expect(table.request(.attempt(2), levels: cluster("a", "b")) == nil)
        // b is free, but the request holds none of its categories while it waits.
        #expect(table.holder(of: "b") == nil)
        let grants = table.remove(.attempt(1))
        #expect(grants.map(\.holder) == [.attempt(2)])
        #expect(Set(grants[0].tokens.keys) == ["a", "b"])
        #expect(table.holder(of: "a") == .attempt(2) && table.holder(of: "b") == .attempt(2))
    }

    @Test func aLaterRequestNeverOvertakesAnEarlierOneOnASharedCategory() {
        var table = LockTable()
        _ = table.request(.attempt(1), levels: cluster("a"))
        #expect(table.request(.attempt(2), levels: cluster("a", "b")) == nil)
        // b is free, but 2 is in line for it first.
        #expect(table.request(.attempt(3), levels: cluster("b")) == nil)
        #expect(table.remove(.attempt(1)).map(\.holder) == [.attempt(2)])
        #expect(table.remove(.attempt(2)).map(\.holder) == [.attempt(3)])
    }

    @Test func aCycleOfCategoryPairsNeverDeadlocks() {
        var table = LockTable()
        #expect(table.request(.attempt(1), levels: cluster("a", "b")) != nil)
        #expect(table.request(.attempt(2), levels: cluster("b", "c")) == nil)
        #expect(table.request(.attempt(3), levels: cluster("c", "a")) == nil)
        var finished: [LockHolder] = [.attempt(1)]
        var next = table.remove(.attempt(1)).map(\.holder)
        while let holder = next.first {
            finished.append(holder)
            next = Array(next.dropFirst()) + table.remove(holder).map(\.holder)
        }
        #expect(finished == [.attempt(1), .attempt(2), .attempt(3)])
        #expect(table.isEmpty)
    }

    @Test func tokensStrictlyIncreasePerCategoryAndStartAboveTheFloor() {
        var table = LockTable(tokenFloor: 1000)
        var last: UInt64 = 1000
        for id in 1...50 as ClosedRange<UInt64> {
            let grant = table.request(.attempt(AttemptID(id)), levels: cluster("db"))
            let token = try! #require(grant?.tokens["db"])
            #expect(token > last)
            last = token
            _ = table.remove(.attempt(AttemptID(id)))
        }
        table.tokenFloor = 5000
        #expect(table.request(.attempt(99), levels: cluster("db"))?.tokens["db"] == 5001)
    }

    @Test func aWithdrawnWaiterNeverAffectsTheHolder() {
        var table = LockTable()
        _ = table.request(.attempt(1), levels: cluster("db"))
        _ = table.request(.attempt(2), levels: cluster("db"))
        _ = table.request(.attempt(3), levels: cluster("db"))
        #expect(table.remove(.attempt(2)).isEmpty)
        #expect(table.holder(of: "db") == .attempt(1))
        #expect(table.remove(.attempt(1)).map(\.holder) == [.attempt(3)])
    }

    @Test func aGroupsDescendantsGetItsCategoriesFromItsOwnTableAndSiblingsStillExcludeEachOther() {
        var table = LockTable()
        let group = LockHolder.group(run: 0, group: 1)
        let groupGrant = table.request(group, levels: cluster("db"))
        let token = try! #require(groupGrant?.tokens["db"])
        let inner = [LockLevel(scope: .group(run: 0, group: 1), categories: ["db"])]
        // The group holds db; its children do not queue behind it.
        let first = table.request(.attempt(1), levels: inner)
        // A token of its own, larger than the group's: the fence tells its attempts apart.
        let firstToken = try! #require(first?.tokens["db"])
        #expect(firstToken > token, "a child's grant from its group's table gets a token of its own")
        #expect(table.request(.attempt(2), levels: inner) == nil, "siblings exclude each other")
        // Outsiders wait for the group.
        #expect(table.request(.attempt(3), levels: cluster("db")) == nil)
        let second = table.remove(.attempt(1))
        #expect(second.map(\.holder) == [.attempt(2)])
        #expect((second.first?.tokens["db"] ?? 0) > firstToken)
        #expect(table.remove(.attempt(2)).isEmpty)
        let outsider = table.remove(group)
        #expect(outsider.map(\.holder) == [.attempt(3)])
        #expect((outsider.first?.tokens["db"] ?? 0) > (second.first?.tokens["db"] ?? 0))
    }

    @Test func removingAScopeOwnerRemovesWhatIsLeftInItsTableFromEveryTable() {
        var table = LockTable()
        _ = table.request(.attempt(1), levels: cluster("db"))
        let local = LockHolder.local(attempt: 1, request: 7)
        // The attempt's local procedure takes "cache" from the cluster and "db" from the attempt.
        let grant = table.request(
            local,
            levels: [
                LockLevel(scope: .cluster, categories: ["cache"]),
                LockLevel(scope: .attempt(1), categories: ["db"]),
            ])
        #expect(grant != nil)
        #expect(table.request(.attempt(2), levels: cluster("cache")) == nil)
        let grants = table.remove(.attempt(1))
        #expect(grants.map(\.holder) == [.attempt(2)])
        #expect(table.state(of: local).exists == false)
    }

    @Test func theSnapshotShowsHolderTokenAndWaitersInLine() {
        var table = LockTable()
        _ = table.request(
            .attempt(1), levels: cluster("db"),
            owner: LockOwner(group: "g", child: "a", attempt: 1, worker: SessionID(2)))
        _ = table.request(.attempt(2), levels: cluster("db"), owner: LockOwner(group: "g", child: "b", attempt: 1))
        let snapshot = table.snapshot()
        #expect(snapshot.count == 1)
        #expect(snapshot[0].category == "db" && snapshot[0].token == 1)
        #expect(snapshot[0].holder == LockOwner(group: "g", child: "a", attempt: 1, worker: SessionID(2)))
        #expect(snapshot[0].waiters.map(\.child) == ["b"])
    }
}

@Suite struct LockAgeTests {
    private func cluster(_ categories: String...) -> [LockLevel] {
        [LockLevel(scope: .cluster, categories: Set(categories))]
    }

    private func at(_ seconds: Int64) -> Timestamp { Timestamp(nanosecondsSinceEpoch: seconds * 1_000_000_000) }

    @Test func theSnapshotSaysWhenAHoldWasGrantedAndEachWaitBegan() {
        var table = LockTable()
        let owner = { (n: Int) in LockOwner(group: "g", child: "c\(n)", attempt: 1) }
        _ = table.request(.attempt(1), levels: cluster("db"), owner: owner(1), at: at(10))
        _ = table.request(.attempt(2), levels: cluster("db"), owner: owner(2), at: at(12))
        _ = table.request(.attempt(3), levels: cluster("db"), owner: owner(3), at: at(13))
        var lock = table.snapshot()[0]
        #expect(lock.heldSince == at(10))
        #expect(lock.waitingSince == [at(12), at(13)])
        // The next in line holds from the time of the release that granted it.
        _ = table.remove(.attempt(1), at: at(20))
        lock = table.snapshot()[0]
        #expect(lock.holder == owner(2))
        #expect(lock.heldSince == at(20))
        #expect(lock.waitingSince == [at(13)])
    }

    @Test func withoutTimesTheAgesAreUnknown() {
        var table = LockTable()
        _ = table.request(.attempt(1), levels: cluster("db"), owner: LockOwner(group: "g", child: "c"))
        #expect(table.snapshot()[0].heldSince == nil)
    }
}
