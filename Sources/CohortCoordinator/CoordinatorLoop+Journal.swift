import CohortCore
import CohortJournal
import CohortSpec
import CohortWire
import Foundation
import ZeroMQ

/// The loop's journal: what a turn changed is collected while it runs, then committed by
/// the ``JournalCommitter``'s thread while the loop goes on; the turn's messages are held
/// until that commit is done, so "accepted" means "on disk" (a client never holds a group id
/// the journal does not have, a worker never runs an attempt the journal does not know).
///
/// Not thread-safe: the loop thread's (the committer is shared with its thread).
final class JournalWriter {
    let journal: any JournalStore
    /// Kept for the life of the loop: it holds the state directory's lock (SQLite's only).
    let directory: StateDirectory?
    let committer: JournalCommitter
    /// Reads the history `cohort status` lists, beside the loop; nil if the journal could
    /// not be opened a second time to read (the lists then show what the scheduler holds).
    let history: HistoryReader?
    var batch = JournalBatch()
    /// Messages of turns whose records are not yet committed, oldest first, each with the
    /// sequence number of the last batch submitted by its turn.
    var held: [(sequence: UInt64, messages: [(RoutingID, [Outbox.Item])])] = []
    /// Sequence number of the last batch submitted.
    var submitted: UInt64 = 0
    var lastPrune: Timestamp?
    /// Set when a write failed: the loop stops with it.
    var failure: JournalError?
    /// The most turns held before the loop waits for the disk (bounds held memory).
    let maxHeldTurns = 64

    init(
        journal: any JournalStore, directory: StateDirectory?, metrics: JournalCommitter.Metrics? = nil,
        onCommit: @escaping @Sendable () -> Void
    ) {
        self.journal = journal
        self.directory = directory
        self.committer = JournalCommitter(journal: journal, metrics: metrics, onCommit: onCommit)
        self.history = (try? journal.openReader()).map(HistoryReader.init)
    }

    /// Closes the history's reader, then the journal (checkpointing its write-ahead log into
    /// the file); call it once the committer's ``JournalCommitter/run()`` has returned.
    func close() {
        history?.close()
        journal.close()
    }
}

extension CoordinatorLoop {
    /// Reloads the journal's groups into the scheduler. Runs before the endpoint is bound.
    func restoreFromJournal() throws(JournalError) {
        guard let writer = journalWriter else { return }
        scheduler.emitsRecords = true
        let cutoff = now + (Duration.zero - configuration.retention)
        let contents = try writer.journal.load(finishedSince: cutoff)
        let actions = scheduler.restore(
            contents.groups, lastTokens: contents.lastTokens, grace: configuration.restartGrace, now: now)
        apply(actions)
        let unfinished = contents.groups.count { $0.outcome == nil }
        logger.info(
            "journal loaded",
            metadata: [
                "journal.location": "\(writer.journal.location)", "journal.epoch": "\(writer.journal.epoch)",
                "groups.unfinished": "\(unfinished)", "groups.finished": "\(contents.groups.count - unfinished)",
                "attempts.awaitingWorkers": "\(scheduler.orphanCount)",
            ])
    }

    /// Results a worker sent while the coordinator was down arrive, after a restart, on a
    /// connection without a session (before the worker says HELLO again). Those of restored
    /// attempts are accepted (a key that may register as a worker is required with CURVE),
    /// so a finished child does not run again after the grace period.
    func acceptOrphanResults(_ message: WorkerMessage, principal: Principal) {
        guard case .results(let results) = message, scheduler.orphanCount > 0, principal.may(.register) else { return }
        for result in results {
            let kept = keptOutcome(result.outcome, attempt: result.ref)
            let startedAt = result.startedAt.nanosecondsSinceEpoch == 0 ? nil : Timestamp(result.startedAt)
            let finishedAt = result.finishedAt.nanosecondsSinceEpoch == 0 ? nil : Timestamp(result.finishedAt)
            if let actions = try? scheduler.orphanFinished(
                AttemptRef(result.ref), outcome: kept.outcome, startedAt: startedAt, finishedAt: finishedAt,
                outputTruncated: kept.truncated, now: now)
            {
                stats.results.bump()
                apply(actions)
            }
        }
    }

    /// Ends a turn with a journal: submits the turn's records to the committer, holds the
    /// turn's messages until they are committed, and sends every held turn that is. If the
    /// journal failed, stops the loop; what is held is then never sent.
    func endTurn(_ router: Socket, journal writer: JournalWriter) {
        var rounds = 0
        repeat {
            rounds += 1
            guard journalIsWritable(writer) else { return }
            if !writer.batch.isEmpty {
                // Pipelined while more work waits; written here when the loop would only
                // wait for the commit anyway (a hand-over costs a thread wake-up each way).
                writer.submitted =
                    writer.committer.isIdle && !hasInput(router)
                    ? writer.committer.commitHere(writer.batch) : writer.committer.submit(writer.batch)
                writer.batch.removeAll()
            }
            writer.history?.launch(upTo: writer.submitted, committer: writer.committer)
            if !outbox.isEmpty {
                writer.held.append((writer.submitted, outbox.take()))
            }
            if writer.held.count > writer.maxHeldTurns { writer.committer.waitUntilIdle() }
            guard journalIsWritable(writer) else { return }
            let committed = writer.committer.committed
            while let first = writer.held.first, first.sequence <= committed {
                writer.held.removeFirst()
                deliver(first.messages, router)
            }
            // Sending can end sessions, whose consequences are sent after their own commit.
        } while !outbox.isEmpty && rounds < 8
    }

    /// At the loop's end: waits until everything submitted is on disk and sends what was held.
    func finishJournal(_ router: Socket, journal writer: JournalWriter) {
        for _ in 0..<8 {
            endTurn(router, journal: writer)
            guard writer.failure == nil, !(writer.held.isEmpty && outbox.isEmpty) else { return }
            writer.committer.waitUntilIdle()
        }
    }

    /// Whether a message is waiting to be read.
    private func hasInput(_ router: Socket) -> Bool {
        ((try? router.get(.events)) ?? 0) & 1 != 0
    }

    /// False (and the loop stops, no longer serving) once a commit failed.
    private func journalIsWritable(_ writer: JournalWriter) -> Bool {
        if writer.failure != nil { return false }
        guard let error = writer.committer.failure else { return true }
        logger.critical("the journal cannot be written; stopping", metadata: ["error": "\(error)"])
        metrics?.role(serving: false, epoch: 0)
        writer.failure = error
        writer.held.removeAll()
        stopping = true
        return false
    }

    /// Prunes finished groups older than the retention, once an hour.
    func pruneJournalIfDue() {
        guard let writer = journalWriter, writer.failure == nil else { return }
        if let last = writer.lastPrune, now - last < .seconds(3600) { return }
        writer.lastPrune = now
        do {
            let pruned = try writer.journal.prune(finishedBefore: now + (Duration.zero - configuration.retention))
            logs?.remove(groups: pruned)
            if !pruned.isEmpty {
                logger.info("pruned finished groups from the journal", metadata: ["groups.pruned": "\(pruned.count)"])
            }
        } catch {
            logger.error("pruning the journal failed", metadata: ["error": "\(error)"])
        }
    }
}
