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
