import CohortCore
import CohortSpec
import Foundation
import GRDB
import Testing

@testable import CohortJournal

/// `cohort status`'s history: the finished groups the journal keeps, filtered by SQL.
@Suite struct JournalHistoryTests {
    private func spec(_ name: String) throws -> GroupSpec {
        try SpecParser.parse(text: "name: \(name)\nchildren:\n  - { name: a, run: echo }\n")
    }

    /// Ten groups, `nightly-0` … `release-9` submitted at 10…19 s; even ones succeeded, odd
    /// ones failed at 100 + i s, except the last two, which still run.
    private func history(_ place: JournalPlace) throws -> any JournalStore {
        let journal = try place.open()
        var batch = JournalBatch()
        for index in 0..<10 {
            let name = index < 5 ? "nightly-\(index)" : "release-\(index)"
            batch.submissions.append(.init(id: "g\(index)", spec: try spec(name), submittedAt: at(10 + Int64(index))))
            if index < 8 {
                batch.outcomes.append(
                    (
                        "g\(index)", index % 2 == 0 ? .succeeded : .failed, index % 2 == 0 ? nil : "boom", nil,
                        at(100 + Int64(index))
                    ))
            }
        }
        try journal.write(batch)
        return journal
    }

    @Test(arguments: StoreKind.allCases)
    func finishedGroupsComeNewestFirstWithTheirOutcome(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try history(place)
            defer { journal.close() }
            let reader = try journal.openReader()
            defer { reader.close() }
            let groups = try reader.finishedGroups(matching: GroupQuery())
            #expect(groups.map(\.id) == ["g7", "g6", "g5", "g4", "g3", "g2", "g1", "g0"])
            #expect(groups[0].phase == .failed && groups[0].reason == "boom" && groups[0].finishedAt == at(107))
            #expect(groups[0].name == "release-7" && groups[0].submittedAt == at(17))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func everyFilterIsAppliedByTheQuery(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try history(place)
            defer { journal.close() }
            let reader = try journal.openReader()
            defer { reader.close() }
            #expect(
                try reader.finishedGroups(matching: GroupQuery(phases: [.failed])).map(\.id) == [
                    "g7", "g5", "g3", "g1",
                ])
            #expect(
                try reader.finishedGroups(matching: GroupQuery(phases: [.succeeded], nameGlob: try Glob("release-*")))
                    .map(\.id) == ["g6"])
            #expect(
                try reader.finishedGroups(matching: GroupQuery(nameGlob: try Glob("nightly-[!0-2]"))).map(\.id) == [
                    "g4", "g3",
                ])
            #expect(
                try reader.finishedGroups(matching: GroupQuery(submittedSince: at(15), limit: 2)).map(\.id) == [
                    "g7", "g6",
                ])
            // Only unfinished states: the journal has nothing to add.
            #expect(try reader.finishedGroups(matching: GroupQuery(phases: [.running])).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func theReaderSeesCommitsMadeAfterItOpened(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try history(place)
            defer { journal.close() }
            let reader = try journal.openReader()
            defer { reader.close() }
            #expect(try reader.finishedGroups(matching: GroupQuery(limit: 1)).map(\.id) == ["g7"])
            var batch = JournalBatch()
            batch.outcomes.append(("g9", .cancelled, "cancelled by alice", nil, at(200)))
            try journal.write(batch)
            #expect(try reader.finishedGroups(matching: GroupQuery(limit: 1)).map(\.id) == ["g9"])
        }
    }

    @Test(arguments: [
        GroupQuery(), GroupQuery(phases: [.failed]), GroupQuery(submittedSince: at(15)),
    ])
    func theQueryUsesAnIndexInsteadOfSortingTheTable(_ query: GroupQuery) throws {
        try withJournalPlace(.sqlite) { place in
            let journal = try #require(try history(place) as? Journal)
            defer { journal.close() }
            let plan = try JournalReader(path: journal.path).queryPlan(matching: query).joined(separator: "; ")
            #expect(plan.contains("USING INDEX groups_by_"), "plan: \(plan)")
            #expect(!plan.contains("TEMP B-TREE FOR ORDER BY"), "plan: \(plan)")
        }
    }
}
