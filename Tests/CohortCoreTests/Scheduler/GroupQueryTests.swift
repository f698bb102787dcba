import CohortSpec
import Testing

@testable import CohortCore

@Suite struct GlobTests {
    @Test(arguments: [
        ("release-*", "release-3", true), ("release-*", "release", false), ("release-*", "release-", true),
        ("*-nightly", "db-nightly", true), ("*-nightly", "db-nightly-2", false), ("build-?", "build-7", true),
        ("build-?", "build-17", false), ("build-[0-9]", "build-4", true), ("build-[0-9]", "build-x", false),
        ("build-[!0-9]", "build-x", true), ("build-[^0-9]", "build-4", false), ("[*]x", "*x", true),
        ("a*b*c", "aXbYc", true), ("a*b*c", "aXbY", false), ("*", "", true), ("exact", "exact", true),
        ("exact", "Exact", false), ("[]a]", "]", true),
    ])
    func matchesLikeAShell(pattern: String, name: String, expected: Bool) throws {
        #expect(try Glob(pattern).matches(name) == expected)
    }

    @Test func anUnclosedBracketIsNamed() {
        #expect(throws: GlobError.self) { try Glob("build-[0-9") }
        #expect(throws: GlobError.self) { try Glob("") }
    }

    @Test func theSQLitePatternWritesNegationWithACaret() throws {
        #expect(try Glob("build-[!0-9]*").sqlitePattern == "build-[^0-9]*")
        #expect(try Glob("a?[b-c]").sqlitePattern == "a?[b-c]")
    }
}

@Suite struct GroupQueryTests {
    private func group(_ id: String, _ name: String, _ phase: GroupPhase, at seconds: Int64) -> GroupSnapshot {
        GroupSnapshot(
            id: id, name: name, phase: phase, submittedAt: Timestamp(nanosecondsSinceEpoch: seconds * 1_000_000_000))
    }

    @Test func mergeListsEachGroupOnceNewestFirstAndCutsToTheLimit() throws {
        let held = [group("g3", "c", .running, at: 3), group("g2", "b", .succeeded, at: 2)]
        // The journal still has g2 as it was committed (say failed), and older ones.
        let journaled = [group("g2", "b", .failed, at: 2), group("g1", "a", .succeeded, at: 1)]
        let all = GroupQuery().merge(held: held, journaled: journaled)
        #expect(all.map(\.id) == ["g3", "g2", "g1"])
        #expect(all[1].phase == .succeeded)
        #expect(GroupQuery(limit: 2).merge(held: held, journaled: journaled).map(\.id) == ["g3", "g2"])
    }

    @Test(arguments: [0, GroupQuery.maxGroups, GroupQuery.maxGroups + 5_000])
    func aFullJournalPageDropsHeldGroupsOlderThanItsLastRow(limit: Int) throws {
        // The journal answered a full page: groups submitted at 100,001 … 110,000 s, newest
        // first; older finished groups exist but were not read.
        let page = GroupQuery.maxGroups
        let journaled = (0..<page).map { index in
            group("j\(page - index)", "n", .succeeded, at: 100_000 + Int64(page - index))
        }
        // Held: one newer than the page, one inside it, one older than its last row.
        let held = [
            group("new", "n", .running, at: 200_000), group("inside", "n", .running, at: 105_000),
            group("old", "n", .running, at: 50),
        ]
        let list = GroupQuery(limit: limit).merge(held: held, journaled: journaled)
        #expect(list.count == GroupQuery.maxGroups)
        #expect(list.first?.id == "new")
        #expect(list.contains { $0.id == "inside" })
        #expect(!list.contains { $0.id == "old" })
        #expect(zip(list, list.dropFirst()).allSatisfy { GroupQuery.newerFirst($0, $1) })
    }

    @Test func aShortJournalAnswerKeepsOlderHeldGroups() throws {
        // The journal read everything it has (fewer rows than the limit): an older held group
        // is no gap.
        let journaled = [group("j2", "n", .failed, at: 20), group("j1", "n", .succeeded, at: 10)]
        let held = [group("old", "n", .running, at: 5)]
        #expect(GroupQuery(limit: 5).merge(held: held, journaled: journaled).map(\.id) == ["j2", "j1", "old"])
        // A full page of 2 (limit 2) drops it, though it would be cut anyway.
        #expect(GroupQuery(limit: 2).merge(held: held, journaled: journaled).map(\.id) == ["j2", "j1"])
    }

    @Test func theJournalsFinishedEntryWinsOverAnUnfinishedHeldOne() throws {
        // Held was taken when the list was asked for (g2 running); the journal committed g2's
        // end since. A held entry that is finished stays the scheduler's.
        let held = [group("g2", "b", .running, at: 2), group("g1", "a", .succeeded, at: 1)]
        let journaled = [group("g2", "b", .failed, at: 2), group("g1", "a", .failed, at: 1)]
        let list = GroupQuery().merge(held: held, journaled: journaled)
        #expect(list.map(\.id) == ["g2", "g1"])
        #expect(list.map(\.phase) == [.failed, .succeeded])
        // Filtered on failed: the held g2 (running) does not match, the journal's does.
        #expect(GroupQuery(phases: [.failed]).merge(held: [], journaled: journaled).map(\.id) == ["g2", "g1"])
    }

    @Test func everyFilterMustMatch() throws {
        let groups = [
            group("g1", "release-1", .succeeded, at: 10), group("g2", "release-2", .failed, at: 20),
            group("g3", "nightly", .failed, at: 30),
        ]
        let failedReleases = GroupQuery(phases: [.failed], nameGlob: try Glob("release-*"))
        #expect(failedReleases.merge(held: groups, journaled: []).map(\.id) == ["g2"])
        let recent = GroupQuery(submittedSince: Timestamp(nanosecondsSinceEpoch: 20_000_000_000))
        #expect(recent.merge(held: groups, journaled: []).map(\.id) == ["g3", "g2"])
        #expect(!GroupQuery(phases: [.running]).wantsFinished)
    }

    @Test func theSchedulerListsWhatItHoldsNewestFirst() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("alpha", children: [leaf("a")]), id: "g1")
        h.now = h.now + .seconds(1)
        try h.submit(GroupSpec("beta", children: [leaf("b")]), id: "g2")
        try h.succeed("a")
        #expect(h.scheduler.groupOverviews(matching: GroupQuery()).map(\.id) == ["g2", "g1"])
        #expect(h.scheduler.groupOverviews(matching: GroupQuery(phases: [.succeeded])).map(\.id) == ["g1"])
        #expect(h.scheduler.groupOverviews(matching: GroupQuery(nameGlob: try Glob("b*"))).map(\.id) == ["g2"])
    }
}
