import CohortTestSupport
import Testing

@testable import Procedures

@Suite("ExclusivityTable")
struct ExclusivityTableTests {
    typealias Table = ExclusivityTable<String>

    @Test func freeCategoryIsGrantedAtOnceWithAToken() {
        var table = Table()
        let grant = table.request("a", categories: ["db"])
        #expect(grant == Table.Grant(holder: "a", tokens: ["db": 1]))
        #expect(table.holder(of: "db") == "a")
        #expect(table.state(of: "a") == (true, true))
    }

    @Test func heldCategoryMakesTheNextRequestWait() {
        var table = Table()
        _ = table.request("a", categories: ["db"])
        #expect(table.request("b", categories: ["db"]) == nil)
        #expect(table.waiters(of: "db") == ["b"])
        #expect(table.state(of: "b") == (true, false))
    }

    @Test func multiCategoryRequestIsGrantedAllAtOnceOrNotAtAll() {
        var table = Table()
        _ = table.request("a", categories: ["x"])
        #expect(table.request("b", categories: ["x", "y"]) == nil)
        // b holds nothing while it waits: y stays free of holders.
        #expect(table.holder(of: "y") == nil)
        let grants = table.remove("a")
        #expect(grants.map(\.holder) == ["b"])
        #expect(Set(grants[0].tokens.keys) == ["x", "y"])
        #expect(table.holder(of: "x") == "b")
        #expect(table.holder(of: "y") == "b")
    }

    @Test func grantsAreFIFOPerCategory() {
        var table = Table()
        _ = table.request("a", categories: ["db"])
        for holder in ["b", "c", "d"] { #expect(table.request(holder, categories: ["db"]) == nil) }
        var order: [String] = []
        var current = "a"
        for _ in 0..<3 {
            let grants = table.remove(current)
            #expect(grants.count == 1)
            current = grants[0].holder
            order.append(current)
        }
        #expect(order == ["b", "c", "d"])
    }

    @Test func laterRequestWaitsBehindAnEarlierWaiterEvenIfItsCategoryIsFree() {
        var table = Table()
        _ = table.request("a", categories: ["x"])
        #expect(table.request("b", categories: ["x", "y"]) == nil)
        // y is free, but b is ahead in y's line: c must not overtake it.
        #expect(table.request("c", categories: ["y"]) == nil)
        #expect(table.waiters(of: "y") == ["b", "c"])
        #expect(table.remove("a").map(\.holder) == ["b"])
        #expect(table.remove("b").map(\.holder) == ["c"])
    }

    /// The three-contender case: A holds, B and C wait; B withdraws; A's release grants C alone.
    @Test func withdrawnWaiterNeverAffectsTheHolder() {
        var table = Table()
        _ = table.request("A", categories: ["db"])
        _ = table.request("B", categories: ["db"])
        _ = table.request("C", categories: ["db"])
        #expect(table.remove("B").isEmpty)
        #expect(table.holder(of: "db") == "A")
        #expect(table.waiters(of: "db") == ["C"])
        #expect(table.state(of: "B") == (false, false))
        #expect(table.remove("A").map(\.holder) == ["C"])
        #expect(table.holder(of: "db") == "C")
        #expect(table.waiters(of: "db").isEmpty)
    }

    @Test func withdrawingTheHeadWaiterGrantsTheOneBehindWhenFree() {
        var table = Table()
        _ = table.request("a", categories: ["x"])
        _ = table.request("b", categories: ["x", "y"])
        _ = table.request("c", categories: ["y"])
        // b was the only thing keeping c from the free y.
        #expect(table.remove("b").map(\.holder) == ["c"])
        #expect(table.holder(of: "x") == "a")
        #expect(table.holder(of: "y") == "c")
    }

    @Test func removingAnUnknownHolderDoesNothing() {
        var table = Table()
        _ = table.request("a", categories: ["x"])
        #expect(table.remove("nobody").isEmpty)
        #expect(table.holder(of: "x") == "a")
    }

    @Test func releaseGrantsEveryWaiterThatBecomesFree() {
        var table = Table()
        _ = table.request("a", categories: ["x", "y"])
        _ = table.request("b", categories: ["x"])
        _ = table.request("c", categories: ["y"])
        let grants = table.remove("a")
        #expect(Set(grants.map(\.holder)) == ["b", "c"])
        #expect(table.categories == ["x", "y"])
        _ = table.remove("b")
        _ = table.remove("c")
        #expect(table.categories.isEmpty)
    }

    @Test func fencingTokensStrictlyIncreasePerCategory() {
        var table = Table()
        var last: [String: UInt64] = [:]
        for round in 0..<10 {
            let categories: Set<String> = round.isMultiple(of: 2) ? ["x"] : ["x", "y"]
            let grant = table.request("h\(round)", categories: categories)!
            for (category, token) in grant.tokens {
                #expect(token > last[category, default: 0])
                last[category] = token
            }
            _ = table.remove("h\(round)")
        }
        #expect(table.lastTokens == last)
        #expect(last == ["x": 10, "y": 5])
    }

    @Test func tokensContinueFromTheFloorAndFromRestoredLastTokens() {
        var table = Table(tokenFloor: 1_000)
        #expect(table.request("a", categories: ["x"])?.tokens == ["x": 1_001])
        var restored = Table()
        restored.lastTokens = ["x": 41]
        #expect(restored.request("a", categories: ["x"])?.tokens == ["x": 42])
    }

    /// Random requests and removals against the table's promises: one holder per category,
    /// all-or-nothing grants, FIFO per category, and no deadlock (whenever someone waits,
    /// someone holds, so a release will come).
    @Test(arguments: [1, 2, 3, 42, 2024] as [UInt64])
    func randomScheduleKeepsEveryInvariant(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var table = Table()
        let categoryNames = ["a", "b", "c", "d", "e"]
        var live: [String: Set<String>] = [:]
        var granted: Set<String> = []
        var arrival: [String: Int] = [:]
        var lastGrantArrival: [String: Int] = [:]
        var next = 0

        func noteGrants(_ grants: [Table.Grant]) {
            for grant in grants {
                #expect(!granted.contains(grant.holder))
                #expect(Set(grant.tokens.keys) == live[grant.holder])
                granted.insert(grant.holder)
                // FIFO: in each category, grants go in arrival order.
                for category in grant.tokens.keys {
                    #expect(arrival[grant.holder]! > lastGrantArrival[category, default: -1])
                    lastGrantArrival[category] = arrival[grant.holder]!
                }
            }
        }

        for _ in 0..<3_000 {
            if live.isEmpty || Int.random(in: 0..<10, using: &random) < 5 {
                let holder = "r\(next)"
                arrival[holder] = next
                next += 1
                let count = Int.random(in: 1...3, using: &random)
                let categories = Set((0..<count).map { _ in categoryNames.randomElement(using: &random)! })
                live[holder] = categories
                if let grant = table.request(holder, categories: categories) { noteGrants([grant]) }
            } else {
                let holder = live.keys.sorted().randomElement(using: &random)!
                live[holder] = nil
                granted.remove(holder)
                noteGrants(table.remove(holder))
            }
            // One holder per category, and the table agrees with the model. (Stop at the
            // first broken step: the ones after it would only repeat the news.)
            for category in categoryNames {
                let holders = granted.filter { live[$0]!.contains(category) }
                guard holders.count <= 1, table.holder(of: category) == holders.first else {
                    Issue.record(
                        "category \(category): model holders \(holders), table holder \(String(describing: table.holder(of: category)))"
                    )
                    return
                }
            }
            // No deadlock: someone waits only while someone holds.
            if live.count > granted.count, granted.isEmpty {
                Issue.record("\(live.count) requests wait and nobody holds anything")
                return
            }
        }
        // Drain: releasing holders one by one grants every waiter in the end.
        while let holder = granted.sorted().first {
            live[holder] = nil
            granted.remove(holder)
            noteGrants(table.remove(holder))
        }
        #expect(live.isEmpty)
        #expect(table.categories.isEmpty)
    }
}
