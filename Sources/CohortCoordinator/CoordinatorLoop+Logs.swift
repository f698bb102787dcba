import CohortCore
import CohortJournal
import CohortWire
import Dispatch
import Foundation

/// A child's log lines, read beside the loop, on their way back to a client.
struct LogsAnswer: Sendable {
    var routing: RoutingID
    var requestID: UInt64
    var page: Result<LogsPage, ProtocolError>
}

/// The coordinator's log store beside the loop (docs/operations.md, "Logs"): lines workers
/// send are written, and clients' reads answered, on one serial queue of its own, so a child
/// printing 100 MB never holds up a turn of the loop, and a read sees every line that reached
/// the loop before it (an attempt's lines come before its result, and are queued before any
/// read that saw the result).
///
/// Not thread-safe: the loop thread's (the queue runs the store's calls).
final class LogDesk {
    let store: any LogStoring
    private let queue = DispatchQueue(label: "cohort.logs")
    /// The most lines in one reply.
    static let maxPage = 10_000

    init(store: any LogStoring) {
        self.store = store
    }

    /// Stores lines; `done` gets, on the queue, how far each attempt is stored.
    func append(
        _ attempts: [AttemptLogLines], worker: String,
        done: @escaping @Sendable (Result<[LogStored], JournalError>) -> Void
    ) {
        let store = self.store
        queue.async {
            do throws(JournalError) {
                var stored: [LogStored] = []
                for attempt in attempts {
                    let key = LogAttemptKey(
                        attemptID: attempt.ref.id, group: attempt.ref.group, path: attempt.ref.path,
                        attempt: attempt.ref.attempt)
                    let last = try store.append(key, worker: worker, lines: attempt.lines.map(\.stored))
                    stored.append(LogStored(attemptID: attempt.ref.id, sequence: last))
                }
                done(.success(stored))
            } catch {
                done(.failure(error))
            }
        }
    }

    /// Tells the store how an attempt ended (nothing happens for one without lines). Only
    /// attempts that ran a kind that logs reach here (see ``CoordinatorLoop/attemptEnded``).
    func ended(_ attemptID: UInt64, _ outcome: AttemptOutcome) {
        let (name, error): (String, String?) =
            switch outcome {
            case .succeeded: ("succeeded", nil)
            case .failed(let error): ("failed", error)
            case .cancelled(let reason): ("cancelled", reason.text)
            }
        let store = self.store
        queue.async { try? store.ended(attemptID: attemptID, outcome: name, error: error) }
    }

    /// Reads on the queue, after every line queued so far.
    func read(_ work: @escaping @Sendable (any LogStoring) -> Void) {
        let store = self.store
        queue.async { work(store) }
    }

    /// Deletes the logs of pruned groups.
    func remove(groups: [String]) {
        let store = self.store
        queue.async { try? store.remove(groups: groups) }
    }

    /// Waits for what is queued, then closes the store.
    func close() {
        queue.sync {}
        store.close()
    }
}

extension LogLine {
    var stored: StoredLogLine {
        StoredLogLine(
            sequence: sequence, at: at.nanosecondsSinceEpoch, stream: stream.rawValue, text: text, partial: partial,
            level: level)
    }

    init?(_ stored: StoredLogLine) {
        guard let stream = Stream(rawValue: stored.stream) else { return nil }
        self.init(
            sequence: stored.sequence, at: WireTimestamp(nanosecondsSinceEpoch: stored.at), stream: stream,
            text: stored.text, partial: stored.partial, level: stored.level)
    }
}

extension CoordinatorLoop {
    /// A worker's lines: stored beside the loop, then acknowledged (the worker forgets them).
    /// Only lines of an attempt this worker runs now are stored; the others (a group the
    /// coordinator does not know, an attempt id a coordinator without a journal handed out
    /// again after a restart, another worker's attempt) are acknowledged and dropped, as are
    /// lines the store refuses (disk full): a worker never waits for an acknowledgement that
    /// cannot come.
    func storeLogLines(
        _ attempts: [AttemptLogLines], from routing: RoutingID, worker: SessionID, session: PeerSession
    ) {
        var known: [AttemptLogLines] = []
        var dropped: [LogStored] = []
        var droppedLines = 0
        for attempt in attempts {
            let live = scheduler.liveAttempt(attempt.ref.group, path: attempt.ref.path)
            if let live, live.id.rawValue == attempt.ref.id,
                attempt.lines.allSatisfy({ $0.text.count <= LogLine.maxTextBytes }),
                live.attempt == attempt.ref.attempt, live.worker == worker,
                logs != nil
            {
                known.append(attempt)
                loggedAttempts.insert(attempt.ref.id)
            } else {
                dropped.append(LogStored(attemptID: attempt.ref.id, sequence: attempt.lines.last?.sequence ?? 0))
                droppedLines += attempt.lines.count
            }
        }
        if !dropped.isEmpty {
            outbox.send(.logStored(dropped), to: routing)
            metrics?.logLinesDropped.increment(by: droppedLines)
        }
        guard let logs, !known.isEmpty else { return }
        let mailbox = self.mailbox
        let logger = self.logger
        let dropCounter = metrics?.logLinesDropped
        let lineCount = known.reduce(0) { $0 + $1.lines.count }
        let all = known.map { LogStored(attemptID: $0.ref.id, sequence: $0.lines.last?.sequence ?? 0) }
        logs.append(known, worker: session.name) { result in
            switch result {
            case .success(let stored): mailbox.post(.logsStored(routing: routing, stored))
            case .failure(let error):
                logger.error("cannot store log lines; dropped them", metadata: ["error": "\(error)"])
                dropCounter?.increment(by: lineCount)
                mailbox.post(.logsStored(routing: routing, all))
            }
        }
    }

    /// An attempt that had lines ended (its result came): the store is told how.
    func attemptEnded(_ attemptID: UInt64, _ outcome: AttemptOutcome) {
        guard loggedAttempts.remove(attemptID) != nil else { return }
        logs?.ended(attemptID, outcome)
    }

    /// A client's `logs`: the child's state is taken now, its lines read beside the loop.
    func readLogs(_ query: LogsQuery, requestID: UInt64, from routing: RoutingID) {
        func fail(_ code: ProtocolError.Code, _ message: String) {
            outbox.send(
                CoordinatorReply(requestID: requestID, .error(ProtocolError(code: code, message: message))),
                to: routing)
        }
        guard !query.path.isEmpty else {
            return fail(.invalidRequest, "name a child of group \"\(query.group)\": its path, e.g. tests/unit")
        }
        guard let logs else { return fail(.internal, "this coordinator keeps no logs") }
        let limit = query.limit == 0 ? LogDesk.maxPage : min(Int(query.limit), LogDesk.maxPage)
        let tail = query.tail == 0 ? nil : Int(query.tail)
        let since = query.since?.nanosecondsSinceEpoch
        // A page's text stays well under the frame limit (lines are at most 64 KiB each).
        let pageBytes = max(configuration.maxFrameSize / 2 - LogLine.maxTextBytes, LogLine.maxTextBytes)
        let mailbox = self.mailbox
        let child: ChildSnapshot
        do {
            child = try scheduler.childSnapshot(query.group, path: query.path)
        } catch {
            guard scheduler.groupOwner(query.group) == nil else { return fail(.notFound, error.message) }
            // A group the scheduler has forgotten: what the store kept of it.
            logs.read { store in
                let page: Result<LogsPage, ProtocolError>
                do throws(JournalError) {
                    let read = try store.read(
                        group: query.group, path: query.path, attempt: query.attempt, after: query.after,
                        before: query.before, tail: tail, since: since, limit: limit, maxBytes: pageBytes)
                    if read.attempt == 0 {
                        page = .failure(
                            ProtocolError(
                                code: .notFound,
                                message: query.attempt == 0
                                    ? "no log of \"\(query.path)\" in group \"\(query.group)\": the coordinator "
                                        + "knows no such group, or it wrote nothing"
                                    : "no log of attempt \(query.attempt) of \"\(query.path)\" in group \"\(query.group)\""
                            ))
                    } else {
                        let state: ChildState =
                            switch read.outcome {
                            case "succeeded": .succeeded
                            case "cancelled": .cancelled
                            default: .failed
                            }
                        page = .success(
                            LogsPage(
                                group: query.group, path: query.path, attempt: read.attempt,
                                latestAttempt: read.attempt, state: state, attemptFinished: true,
                                lines: read.lines.compactMap(LogLine.init), lastSequence: read.lastSequence,
                                cutBytes: read.cutBytes, worker: read.worker, more: read.more,
                                error: read.outcome == nil ? "how the attempt ended is not recorded" : read.error))
                    }
                } catch {
                    page = .failure(ProtocolError(code: .internal, message: "cannot read the log store: \(error)"))
                }
                mailbox.post(.logsRead(LogsAnswer(routing: routing, requestID: requestID, page: page)))
            }
            return
        }
        guard !child.isGroup else {
            return fail(
                .invalidRequest,
                "\"\(query.path)\" in group \"\(query.group)\" is a nested group: name one of its children")
        }
        guard query.attempt <= child.attempt else {
            return fail(
                .notFound,
                "\"\(query.path)\" in group \"\(query.group)\" has had \(child.attempt) attempt\(child.attempt == 1 ? "" : "s"), not \(query.attempt)"
            )
        }
        let attempt = query.attempt == 0 ? child.attempt : query.attempt
        // Ended unless it is on a worker now (sent, or started).
        let live = scheduler.liveAttempt(query.group, path: query.path)
        let finished = attempt < child.attempt || live?.attempt != attempt
        let state = child.phase.wire
        let error = child.phase.isFinished ? child.error : nil
        let worker = attempt == child.attempt ? child.workerName ?? "" : ""
        guard attempt > 0 else {
            let page = LogsPage(
                group: query.group, path: query.path, attempt: 0, latestAttempt: 0, state: state,
                attemptFinished: false, lines: [], lastSequence: 0, error: error)
            return outbox.send(CoordinatorReply(requestID: requestID, .logs(page)), to: routing)
        }
        let latest = child.attempt
        logs.read { store in
            let page: Result<LogsPage, ProtocolError>
            do throws(JournalError) {
                let read = try store.read(
                    group: query.group, path: query.path, attempt: attempt, after: query.after,
                    before: query.before, tail: tail, since: since, limit: limit, maxBytes: pageBytes)
                page = .success(
                    LogsPage(
                        group: query.group, path: query.path, attempt: attempt, latestAttempt: latest, state: state,
                        attemptFinished: finished, lines: read.lines.compactMap(LogLine.init),
                        lastSequence: read.lastSequence, cutBytes: read.cutBytes,
                        worker: read.worker.isEmpty ? worker : read.worker, more: read.more, error: error))
            } catch {
                page = .failure(ProtocolError(code: .internal, message: "cannot read the log store: \(error)"))
            }
            mailbox.post(.logsRead(LogsAnswer(routing: routing, requestID: requestID, page: page)))
        }
    }

    /// Sends a read's page (or its error) to the client that asked.
    func answerLogs(_ answer: LogsAnswer) {
        let kind: CoordinatorReply.Kind =
            switch answer.page {
            case .success(let page): .logs(page)
            case .failure(let error): .error(error)
            }
        outbox.send(CoordinatorReply(requestID: answer.requestID, kind), to: answer.routing)
    }

    /// The store stored a worker's lines: tell the worker, if it is still connected there.
    func acknowledgeLogs(_ stored: [LogStored], to routing: RoutingID) {
        guard peers[routing] != nil else { return }
        outbox.send(.logStored(stored), to: routing)
    }
}
