import CohortJournal
import Foundation
import Synchronization
import Testing

@testable import CohortCoordinator

/// The committer that writes the loop's turns to the journal on its own thread.
@Suite struct JournalCommitterTests {
    func withJournal(_ body: (Journal) throws -> Void) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-commit-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let directory = try StateDirectory(path: path)
        let journal = try Journal(directory: directory)
        defer { journal.close() }
        try withExtendedLifetime(directory) { try body(journal) }
    }

    /// Runs the committer's service on its own thread while `body` runs, as the coordinator does.
    func serving<R>(_ committer: JournalCommitter, _ body: () throws -> R) rethrows -> R {
        try withServiceThread(named: "test-journal", run: committer.run, finish: committer.finish, body)
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
            try serving(committer) { () throws in
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
    }

    /// After a failed write nothing is reported committed again (so the loop never sends what
    /// it holds), on the committer's thread as on the caller's.
    @Test func aFailedWriteIsNeverReportedCommitted() throws {
        try withJournal { (journal: Journal) throws in
            let committer = JournalCommitter(journal: journal) {}
            serving(committer) {
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
    }

    /// A write made on the caller's thread that fails is not reported committed either.
    @Test func aFailedWriteHereIsNeverReportedCommitted() throws {
        try withJournal { (journal: Journal) throws in
            let committer = JournalCommitter(journal: journal) {}
            journal.close()
            let sequence = committer.commitHere(batch(token: 1))
            #expect(committer.failure != nil)
            #expect(committer.committed < sequence)
        }
    }

    /// finish() lets run() return only once what was submitted before it is written: nothing
    /// accepted by the loop is dropped when the coordinator stops.
    @Test func finishingWritesWhatWasSubmittedBeforeRunReturns() throws {
        try withJournal { (journal: Journal) throws in
            let committer = JournalCommitter(journal: journal) {}
            let last = serving(committer) {
                var last: UInt64 = 0
                for token in 1...500 { last = committer.submit(batch(token: UInt64(token))) }
                return last
            }
            // The scope waited for run() to return: everything is on disk, nothing is queued.
            #expect(committer.committed == last)
            #expect(committer.isIdle)
            #expect(try journal.load().lastTokens["c"] == 500)
        }
    }
}
