import CohortJournal
import Foundation
import Metrics

/// Commits the loop's turns to the journal on a thread of its own, so the loop reads and
/// computes turn N+1 while turn N is being committed (the commit is mostly waiting for the
/// disk). Turns queued while a commit runs are written together in the next transaction (a
/// group commit). The loop holds each turn's messages until ``committed`` reaches that turn.
///
/// After a failed write nothing more is written: ``failure`` stays set and ``committed``
/// never moves again, so what the loop holds is never sent.
///
/// A service: ``run()`` commits on the thread its owner gives it (`withServiceThread`) and
/// returns once ``finish()`` was called and everything submitted before is written; nothing
/// starts a thread in `init`.
///
/// Thread-safety: `Sendable`; every method may be called from any thread (the loop calls
/// them from its own).
final class JournalCommitter: @unchecked Sendable {
    // @unchecked Sendable: every mutable property is read and written with `condition` held.
    private let condition = NSCondition()
    private var queued: [JournalBatch] = []
    /// Sequence number of the last batch submitted.
    private var submitted: UInt64 = 0
    /// Every batch up to this sequence number is on disk.
    private var committedUpTo: UInt64 = 0
    private var writeFailure: JournalError?
    private var finishing = false

    private let journal: any JournalStore
    /// Called on the committer's thread after every commit or failure (wakes the loop).
    private let onCommit: @Sendable () -> Void

    /// The commit's metrics: how long each transaction took and how many records it wrote.
    struct Metrics: Sendable {
        var commit: Timer
        var batchSize: Recorder
    }
    private let metrics: Metrics?

    init(journal: any JournalStore, metrics: Metrics? = nil, onCommit: @escaping @Sendable () -> Void) {
        self.journal = journal
        self.metrics = metrics
        self.onCommit = onCommit
    }

    /// Writes `batches` in one transaction, timing it when there are metrics.
    private func write(_ batches: [JournalBatch]) throws(JournalError) {
        guard let metrics else { return try journal.write(batches) }
        let start = ContinuousClock.now
        try journal.write(batches)
        let elapsed = ContinuousClock.now - start
        let (seconds, attoseconds) = elapsed.components
        metrics.commit.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        metrics.batchSize.record(batches.reduce(0) { $0 + $1.recordCount })
    }

    /// Every batch up to this sequence number is on disk.
    var committed: UInt64 { locked { committedUpTo } }

    /// Set once a write failed.
    var failure: JournalError? { locked { writeFailure } }

    /// Queues `batch` for the next commit; returns its sequence number.
    func submit(_ batch: JournalBatch) -> UInt64 {
        locked {
            submitted += 1
            queued.append(batch)
            condition.broadcast()
            return submitted
        }
    }

    /// Whether every batch submitted is committed (nothing queued or being written).
    var isIdle: Bool { locked { committedUpTo == submitted } }

    /// Writes `batch` on the calling thread, when that is quicker than handing it over (the
    /// caller has nothing else to do meanwhile); returns its sequence number. Only while
    /// ``isIdle``, from the thread that submits, so that batches stay in order.
    func commitHere(_ batch: JournalBatch) -> UInt64 {
        let sequence = locked {
            submitted += 1
            return submitted
        }
        do {
            try write([batch])
            locked {
                committedUpTo = sequence
                condition.broadcast()
            }
        } catch {
            locked { writeFailure = error }
        }
        return sequence
    }

    /// Blocks until everything submitted so far is committed, or a write failed.
    func waitUntilIdle() {
        locked {
            while committedUpTo < submitted, writeFailure == nil { condition.wait() }
        }
    }

    /// Blocks until every batch up to `sequence` is committed, or a write failed (for
    /// readers beside the loop that must see what the loop had submitted).
    func waitUntilCommitted(_ sequence: UInt64) {
        locked {
            while committedUpTo < sequence, writeFailure == nil { condition.wait() }
        }
    }

    /// Asks ``run()`` to return once what was submitted is written. Does not wait.
    func finish() {
        locked {
            finishing = true
            condition.broadcast()
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// Commits what is queued, again and again, until ``finish()`` was called and nothing is
    /// left. Blocks: call it on a thread of its own.
    func run() {
        while true {
            let (batches, last): ([JournalBatch], UInt64) = locked {
                while queued.isEmpty, !finishing { condition.wait() }
                defer { queued = [] }
                return (writeFailure == nil ? queued : [], submitted)
            }
            if batches.isEmpty {
                let done = locked { finishing && queued.isEmpty }
                if done { return }
                continue
            }
            var failed: JournalError?
            do { try write(batches) } catch { failed = error }
            locked {
                if let failed { writeFailure = failed } else { committedUpTo = last }
                condition.broadcast()
            }
            onCommit()
        }
    }
}
