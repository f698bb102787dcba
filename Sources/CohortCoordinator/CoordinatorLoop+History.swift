import CohortCore
import CohortJournal
import CohortWire
import Dispatch
import Foundation

/// The finished groups a `cohort status` list found in the journal, on their way back to the
/// loop.
struct HistoryRead: Sendable {
    var routing: RoutingID
    var requestID: UInt64
    var query: GroupQuery
    /// What the scheduler held that the query selects, when the list was asked for.
    var held: [GroupSnapshot]
    var result: Result<[GroupSnapshot], JournalError>
}

/// Reads the journal's history for `cohort status` beside the loop: a read-only connection
/// of its own (``JournalReader``; WAL lets it read the last commit while the committer
/// writes, neither waiting for the other) on a serial queue, so a long query (a name glob
/// over a long history) never holds up the loop's turn.
///
/// A read waits, on its queue, until the committer has written every batch the loop had
/// submitted by the end of the turn that asked (``launch(upTo:committer:)``), so it sees every
/// outcome the scheduler had decided by then: a group the scheduler has since forgotten (its
/// `finishedGroupRetention`) is in the journal.
///
/// Not thread-safe: the loop thread's (the queue runs the reads).
final class HistoryReader {
    let reader: any JournalStoreReader
    private let queue = DispatchQueue(label: "cohort.journal.history")
    /// Reads asked for this turn, launched at its end.
    private var pending: [@Sendable (any JournalStoreReader) -> Void] = []

    init(reader: any JournalStoreReader) {
        self.reader = reader
    }

    /// Runs `query` once this turn's records are committed; `done` gets the result on the queue.
    func read(_ query: GroupQuery, done: @escaping @Sendable (Result<[GroupSnapshot], JournalError>) -> Void) {
        read { reader in
            do throws(JournalError) {
                done(.success(try reader.finishedGroups(matching: query)))
            } catch {
                done(.failure(error))
            }
        }
    }

    /// Runs `work` on the queue once this turn's records are committed.
    func read(_ work: @escaping @Sendable (any JournalStoreReader) -> Void) {
        pending.append(work)
    }

    /// Waits for the reads under way, then closes the connection (before the journal: see
    /// ``JournalReader/close()``).
    func close() {
        queue.sync {}
        reader.close()
    }

    /// Launches the reads asked for so far, each once batch `sequence` is committed. The loop
    /// calls it after it submitted the turn's batch.
    func launch(upTo sequence: UInt64, committer: JournalCommitter) {
        guard !pending.isEmpty else { return }
        let reader = self.reader
        for work in pending {
            queue.async {
                committer.waitUntilCommitted(sequence)
                work(reader)
            }
        }
        pending.removeAll()
    }
}

/// `cohort status` without a group: the groups a filter selects, newest first.
///
/// What the scheduler holds (every unfinished group, and finished ones for
/// `finishedGroupRetention`) is exact; the journal adds the finished groups it keeps (until
/// `cohort prune` or the coordinator's `retention` drops them). Without a journal the list
/// is the scheduler's alone. With one, what the scheduler holds is taken when the list is
/// asked for, the journal's part is read beside the loop (``HistoryReader``, which sees at
/// least every commit of that turn), and the two are merged once it is back
/// (``GroupQuery/merge(held:journaled:)``): a group both know is listed as the scheduler had
/// it, unless the journal has it finished and the scheduler had not. Taking both views at the
/// same point means a group the scheduler forgets while the journal is read (its
/// `finishedGroupRetention`) is still listed.
extension CoordinatorLoop {
    func listGroups(_ filter: GroupFilter, requestID: UInt64, from routing: RoutingID) {
        let query: GroupQuery
        switch GroupQuery.from(filter) {
        case .success(let made): query = made
        case .failure(let error):
            return outbox.send(CoordinatorReply(requestID: requestID, .error(error)), to: routing)
        }
        guard let history = journalWriter?.history, query.wantsFinished else {
            let groups = scheduler.groupOverviews(matching: query)
            return outbox.send(CoordinatorReply(requestID: requestID, .groups(groups.map(\.wireSummary))), to: routing)
        }
        // At most the limit: the merged list's first `limit` come from the first `limit` of each side.
        let held = scheduler.groupOverviews(matching: query)
        let mailbox = self.mailbox
        history.read(query) { result in
            mailbox.post(
                .historyRead(
                    HistoryRead(routing: routing, requestID: requestID, query: query, held: held, result: result)))
        }
    }

    /// Answers a list once the journal's part is read.
    func answerHistory(_ read: HistoryRead) {
        let reply: CoordinatorReply.Kind
        switch read.result {
        case .success(let journaled):
            reply = .groups(read.query.merge(held: read.held, journaled: journaled).map(\.wireSummary))
        case .failure(let error):
            logger.error("cannot read the journal's history", metadata: ["error": "\(error)"])
            reply = .error(ProtocolError(code: .internal, message: "cannot read the journal's history: \(error)"))
        }
        outbox.send(CoordinatorReply(requestID: read.requestID, reply), to: read.routing)
    }
}

extension GroupQuery {
    /// The query of a client's filter, or the `invalidRequest` error naming what is wrong.
    static func from(_ filter: GroupFilter) -> Result<GroupQuery, ProtocolError> {
        var glob: Glob?
        if let pattern = filter.nameGlob {
            do throws(GlobError) {
                glob = try Glob(pattern)
            } catch {
                return .failure(ProtocolError(code: .invalidRequest, message: error.message))
            }
        }
        return .success(
            GroupQuery(
                phases: Set(filter.states.map(GroupPhase.init)), nameGlob: glob,
                submittedSince: filter.submittedSince.map(Timestamp.init), limit: Int(filter.limit)))
    }
}

extension GroupPhase {
    init(_ state: GroupState) {
        switch state {
        case .pending: self = .pending
        case .running: self = .running
        case .succeeded: self = .succeeded
        case .failed: self = .failed
        case .cancelled: self = .cancelled
        }
    }
}
