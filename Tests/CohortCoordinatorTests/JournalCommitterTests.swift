import CohortJournal
import Foundation
import Synchronization
import Testing
@testable import CohortCoordinator

/// The committer that writes the loop's turns to the journal on its own thread.
@Suite struct JournalCommitterTests {
    func withJournal(_ body: (Journal) throws -> Void) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-commit-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let directory = try StateDirectory(path: path)
        let journal = try Journal(directory: directory)
        defer { journal.close() }
        try withExtendedLifetime(directory) { try body(journal) }
    }

    func batch(token: UInt64) -> JournalBatch {
        var batch = JournalBatch()
        batch.fencing["c"] = token
        return batch
    }

    /// Turns submitted while a commit runs are all written, in order, and reported committed.
    @Test func batchesSubmittedBackToBackAreAllCommittedInOrder() throws {
        try withJournal { (journal: Journal) throws in
            let wakes = Atomic<Int>(0)
            let committer = JournalCommitter(journal: journal) { wakes.add(1, ordering: .relaxed) }
            defer { committer.stop() }
            var last: UInt64 = 0
            for token in 1...200 { last = committer.submit(batch(token: UInt64(token))) }
            committer.waitUntilIdle()
            #expect(last == 200)
            #expect(committer.committed == last)
            #expect(committer.isIdle)
            #expect(committer.failure == nil)
            // The wake-up comes right after the commit is published.
            let deadline = ContinuousClock.now + .seconds(5)
            while wakes.load(ordering: .relaxed) == 0, ContinuousClock.now < deadline { sched_yield() }
            #expect(wakes.load(ordering: .relaxed) >= 1)
            #expect(try journal.load().lastTokens["c"] == 200)
            let here = committer.commitHere(batch(token: 201))
            #expect(committer.committed == here)
            #expect(try journal.load().lastTokens["c"] == 201)
        }
    }

    /// After a failed write nothing is reported committed again (so the loop never sends what
    /// it holds), on the committer's thread as on the caller's.
    @Test func aFailedWriteIsNeverReportedCommitted() throws {
        try withJournal { (journal: Journal) throws in
            let committer = JournalCommitter(journal: journal) {}
            defer { committer.stop() }
            let first = committer.submit(batch(token: 1))
            committer.waitUntilIdle()
            #expect(committer.committed == first)
            journal.close()  // every later write fails
            _ = committer.submit(batch(token: 2))
            committer.waitUntilIdle()
            #expect(committer.failure != nil)
            #expect(committer.committed == first)
            _ = committer.submit(batch(token: 3))
            committer.waitUntilIdle()
            #expect(committer.committed == first)
        }
    }

    /// A write made on the caller's thread that fails is not reported committed either.
    @Test func aFailedWriteHereIsNeverReportedCommitted() throws {
        try withJournal { (journal: Journal) throws in
            let committer = JournalCommitter(journal: journal) {}
            defer { committer.stop() }
            journal.close()
            let sequence = committer.commitHere(batch(token: 1))
            #expect(committer.failure != nil)
            #expect(committer.committed < sequence)
        }
    }
}
