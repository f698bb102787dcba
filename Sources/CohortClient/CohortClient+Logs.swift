import CohortWire
import Foundation

/// What ``CohortClient/followLogs(_:child:attempt:tail:since:pollInterval:)`` yields, in order.
public enum LogEvent: Sendable, Hashable {
    /// The child has not started yet (said once while it waits): its state.
    case waiting(ChildState)
    /// The lines that follow are of this attempt, run by this worker (empty if not known yet).
    case attempt(UInt32, worker: String)
    /// Lines, oldest first.
    case lines([LogLine])
    /// The attempt followed has ended (the last event): the page that said so, with the
    /// child's state and error.
    case ended(LogsPage)
}

extension CohortClient {
    /// A page of a child's log (docs/operations.md, "Logs"): the lines `query` selects, oldest
    /// first, at most the coordinator's page; ``LogsPage/more`` says more follow at once (ask
    /// again with ``LogsQuery/after`` at the last line's sequence number).
    ///
    /// ```swift
    /// let page = try await client.logs(LogsQuery(group: "release-3", path: "tests/unit", tail: 20))
    /// for line in page.lines { print(String(decoding: line.text, as: UTF8.self)) }
    /// ```
    /// - Throws: ``ClientError/Code/notFound`` for an unknown group, child or attempt;
    ///   ``ClientError/Code/rejected`` for a nested group's path.
    public func logs(_ query: LogsQuery) async throws(ClientError) -> LogsPage {
        let reply = try await connection.request(.logs(query))
        guard case .logs(let page) = reply else { throw unexpected(reply, for: "logs") }
        return page
    }

    /// Every line of a child's attempt (the latest when `attempt` is 0) stored so far, page
    /// after page, and the last page (which says whether the attempt has ended).
    public func allLogs(
        _ group: String, child: String, attempt: UInt32 = 0, tail: UInt32 = 0, since: WireTimestamp? = nil
    ) async throws(ClientError) -> (lines: [LogLine], last: LogsPage) {
        var query = LogsQuery(group: group, path: child, attempt: attempt, tail: tail, since: since)
        var lines: [LogLine] = []
        while true {
            let page = try await logs(query)
            lines += page.lines
            guard page.more, tail == 0, let last = page.lines.last else { return (lines, page) }
            query.attempt = page.attempt
            query.after = last.sequence
        }
    }

    /// Follows a child's log as it is written, as `cohort logs -f` does: its lines, attempt
    /// after attempt (a retry's next attempt too, unless `attempt` names one), until the attempt
    /// followed ends with the child. Polls every `pollInterval` while nothing new is stored;
    /// rides out a coordinator restart or failover (the next line after the last one yielded
    /// comes next: none is lost or repeated).
    ///
    /// `tail` and `since` apply to the first attempt's lines already written. The stream keeps
    /// what its reader has not taken yet: a reader slower than the log should use
    /// ``followLogs(_:child:attempt:tail:since:from:pollInterval:idle:_:)``, which waits for it.
    public func followLogs(
        _ group: String, child: String, attempt: UInt32 = 0, tail: UInt32 = 0, since: WireTimestamp? = nil,
        pollInterval: Duration = .milliseconds(100)
    ) -> AsyncThrowingStream<LogEvent, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await followLogs(
                        group, child: child, attempt: attempt, tail: tail, since: since, pollInterval: pollInterval
                    ) { event in continuation.yield(event) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Follows a child's log as the stream form does, handing each event to `each` and asking
    /// for the next page only once `each` has returned: a slow reader (a browser, a pipe) holds
    /// the follower back instead of growing a buffer. `idle` is called each time the follower
    /// waits `pollInterval` for more.
    ///
    /// With `from`, it carries on after that line (a position an earlier follower reached, such
    /// as a Server-Sent Events `Last-Event-ID`): `tail` and `since` do not apply, and with
    /// `attempt` 0 the retries after that attempt are followed too.
    public func followLogs(
        _ group: String, child: String, attempt requested: UInt32 = 0, tail: UInt32 = 0,
        since: WireTimestamp? = nil, from position: LogPosition? = nil, pollInterval: Duration = .milliseconds(100),
        idle: () async throws -> Void = {}, _ each: (LogEvent) async throws -> Void
    ) async throws {
        var current = position?.attempt ?? requested
        var after: UInt64 = position?.sequence ?? 0
        var first = position == nil
        var saidWaiting = false
        var announced: UInt32 = 0
        var fromFirst = false
        var outage: ContinuousClock.Instant?
        while true {
            try Task.checkCancellation()
            let page: LogsPage
            do {
                page = try await logs(
                    LogsQuery(
                        group: group, path: child, attempt: current, after: after, tail: first ? tail : 0,
                        since: first ? since : nil))
                outage = nil
            } catch {
                // A coordinator restarting or failing over: ask again, for a while.
                guard [.connectionLost, .unreachable, .shuttingDown].contains(error.code) else { throw error }
                let started = outage ?? .now
                outage = started
                guard ContinuousClock.now - started < .seconds(120) else { throw error }
                try await idle()
                try await Task.sleep(for: .milliseconds(200))
                continue
            }
            if page.attempt == 0 {
                // Followed from before it started: every attempt, from the first.
                fromFirst = requested == 0
                if page.state.isFinished { return try await each(.ended(page)) }
                if !saidWaiting { try await each(.waiting(page.state)) }
                saidWaiting = true
                try await idle()
                try await Task.sleep(for: pollInterval)
                continue
            }
            if current == 0 {
                current = fromFirst ? 1 : page.attempt
                if current != page.attempt { continue }
            }
            if announced != page.attempt {
                announced = page.attempt
                try await each(.attempt(page.attempt, worker: page.worker))
            }
            first = false
            if !page.lines.isEmpty {
                after = page.lines.last?.sequence ?? after
                try await each(.lines(page.lines))
            }
            if page.more { continue }
            // Lines a filter (`since`) or a tail left out are not asked for again.
            after = max(after, page.lastSequence)
            if page.attemptFinished {
                if requested != 0 { return try await each(.ended(page)) }
                if page.latestAttempt > current {
                    // A retry: its own log, from its first line.
                    current += 1
                    after = 0
                    continue
                }
                if page.state.isFinished { return try await each(.ended(page)) }
            }
            try await idle()
            try await Task.sleep(for: pollInterval)
        }
    }
}

/// A line of a child's log: its attempt and sequence number. Written `ATTEMPT:SEQUENCE`
/// (``description``), as the dashboard's log stream names its events.
public struct LogPosition: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    public var attempt: UInt32
    public var sequence: UInt64

    public init(attempt: UInt32, sequence: UInt64) {
        self.attempt = attempt
        self.sequence = sequence
    }

    /// `2:41`; `nil` for anything else (an attempt counts from 1).
    public init?(_ description: String) {
        let parts = description.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let attempt = UInt32(parts[0]), attempt > 0, let sequence = UInt64(parts[1]) else {
            return nil
        }
        self.init(attempt: attempt, sequence: sequence)
    }

    public var description: String { "\(attempt):\(sequence)" }
}

extension LogLine {
    /// The line as `cohort logs --json` prints it and the HTTP API answers it: `time`,
    /// `stream`, `text` (invalid UTF-8 replaced by U+FFFD), `attempt`, `worker`, `sequence`,
    /// `partial`; `level` for a kind's line; `bytes` (base64, the text as written) when the text
    /// is not valid UTF-8.
    public func json(attempt: UInt32, worker: String) -> JSONValue {
        var object: [String: JSONValue] = [
            "time": .string(at.rfc3339), "stream": .string(stream.name),
            "text": .string(String(decoding: text, as: UTF8.self)), "attempt": .int(Int64(attempt)),
            "worker": .string(worker), "sequence": .int(Int64(sequence)), "partial": .bool(partial),
        ]
        if stream == .kind { object["level"] = .string(level) }
        if String(bytes: text, encoding: .utf8) == nil { object["bytes"] = .string(Data(text).base64EncodedString()) }
        return .object(object)
    }
}

extension ChildState {
    /// Succeeded, failed, cancelled or skipped.
    var isFinished: Bool {
        switch self {
        case .succeeded, .failed, .cancelled, .skipped: true
        case .pending, .waiting, .ready, .running: false
        }
    }
}
