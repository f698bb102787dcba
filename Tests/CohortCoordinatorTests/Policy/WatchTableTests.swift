import Testing

@testable import CohortCoordinator

@Suite struct WatchTableTests {
    static let alice: RoutingID = [1]
    static let bob: RoutingID = [2]

    @Test func theSchedulerIsToldOnlyWhenAGroupBecomesWatchedOrStopsBeingWatched() {
        var table = WatchTable()
        #expect(table.add("g", by: Self.alice, requestID: 1) == [WatchTable.Change(group: "g", watched: true)])
        #expect(table.add("g", by: Self.bob, requestID: 7).isEmpty, "already watched")
        #expect(table.add("g", by: Self.bob, requestID: 7).isEmpty)
        #expect(table.watches(of: "g").map(\.requestID) == [1, 7], "a repeated watch is kept once, in order")
        #expect(table.remove("g", by: Self.alice).isEmpty, "bob still watches")
        #expect(table.remove("g", by: Self.bob) == [WatchTable.Change(group: "g", watched: false)])
        #expect(table.byGroup.isEmpty)
        #expect(table.remove("g", by: Self.bob).isEmpty, "nothing to stop")
    }

    @Test func aClientThatLeavesStopsWatchingEverywhereAndOthersGoOn() {
        var table = WatchTable()
        _ = table.add("g", by: Self.alice, requestID: 1)
        _ = table.add("h", by: Self.alice, requestID: 2)
        _ = table.add("h", by: Self.bob, requestID: 3)
        #expect(table.clients == [Self.alice, Self.bob])
        #expect(table.watches(by: Self.alice).map(\.watch.requestID) == [1, 2])
        #expect(table.removeAll(by: Self.alice) == [WatchTable.Change(group: "g", watched: false)])
        #expect(table.watches(of: "h") == [WatchTable.Watch(routing: Self.bob, requestID: 3)])
        #expect(table.clients == [Self.bob])
    }

    @Test func aFinishedGroupsWatchesEnd() {
        var table = WatchTable()
        _ = table.add("g", by: Self.alice, requestID: 1)
        _ = table.add("g", by: Self.bob, requestID: 2)
        #expect(table.end("g") == [WatchTable.Change(group: "g", watched: false)])
        #expect(table.watches(of: "g").isEmpty)
        #expect(table.end("g").isEmpty)
    }
}
