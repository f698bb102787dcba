import CohortClient
import Foundation
import Hummingbird

import enum CohortSpec.JSONValue

// `GET /api/groups/ID/logs` (docs/http.md, "GET /api/groups/ID/logs"): a page of a child's log,
// or with `follow=1` its lines as they are written, as Server-Sent Events.

extension DashboardServer {
    /// The most lines one page answers (as the coordinator's own page).
    static let maxLogPage = 10_000

    /// What a logs request asks for, read from its query.
    struct LogsRequest {
        var child: String
        var attempt: UInt32
        var after: UInt64
        var before: UInt64
        var tail: UInt32
        var since: WireTimestamp?
        var limit: UInt32
        var follow: Bool
        /// Where a follower carries on: `from`, or the browser's `Last-Event-ID` on a reconnect.
        var from: LogPosition?
    }

    /// The query of `GET /api/groups/ID/logs`.
    /// - Throws: ``APIError`` 400 naming the parameter that is wrong.
    func logsRequest(_ request: Request) throws(APIError) -> LogsRequest {
        let query = request.uri.queryParameters
        guard let child = query.get("child").flatMap({ $0.isEmpty ? nil : $0 }) else {
            throw APIError(.badRequest, "bad_request", "child: name the child whose log to read, e.g. child=tests/unit")
        }
        func number(_ name: String, _ range: ClosedRange<Int>) throws(APIError) -> Int {
            try Self.integer(query.get(name), name, default: 0, range: range)
        }
        let attempt = try number("attempt", 1...Int(UInt32.max))
        let tail = try number("tail", 1...Self.maxLogPage)
        let limit = try number("limit", 1...Self.maxLogPage)
        func sequence(_ name: String) throws(APIError) -> UInt64 {
            guard let text = query.get(name) else { return 0 }
            guard let value = UInt64(text) else {
                throw APIError(.badRequest, "bad_request", "\(name) must be a line's sequence number, not \"\(text)\"")
            }
            return value
        }
        var since: WireTimestamp?
        if let text = query.get("since") {
            guard let date = Self.rfc3339Date(text) else {
                throw APIError(
                    .badRequest, "bad_request",
                    "since must be an RFC 3339 time such as 2026-11-25T08:00:00Z, not \"\(text)\"")
            }
            since = WireTimestamp(date)
        }
        let follow: Bool
        switch query.get("follow") {
        case nil, "0", "false": follow = false
        case "1", "true": follow = true
        case let other?:
            throw APIError(.badRequest, "bad_request", "follow must be 1 or 0, not \"\(other)\"")
        }
        var from: LogPosition?
        if let text = query.get("from") {
            guard let position = LogPosition(text) else {
                throw APIError(
                    .badRequest, "bad_request",
                    "from must be ATTEMPT:SEQUENCE (a log event's id, such as 2:41), not \"\(text)\"")
            }
            from = position
        }
        // A browser reconnecting sends the id of the last event it had; a malformed one is
        // ignored (the stream starts again as asked).
        if let text = request.headers[.lastEventID], let position = LogPosition(text) { from = position }
        if let position = from, attempt != 0, position.attempt != attempt {
            throw APIError(
                .badRequest, "bad_request",
                "from \(position) is of attempt \(position.attempt), not of attempt \(attempt)")
        }
        let before = try sequence("before")
        let after = try sequence("after")
        if follow, before != 0 {
            throw APIError(.badRequest, "bad_request", "before reads earlier lines: it does not go with follow=1")
        }
        if follow, after != 0, attempt == 0, from == nil {
            throw APIError(
                .badRequest, "bad_request",
                "after with follow=1 needs the attempt it counts in: give attempt, or from=ATTEMPT:SEQUENCE")
        }
        return LogsRequest(
            child: child, attempt: UInt32(attempt), after: after, before: before, tail: UInt32(tail), since: since,
            limit: UInt32(limit), follow: follow, from: from)
    }

    /// `GET /api/groups/ID/logs?child=PATH`: one page of the child's log.
    func logsPage(_ group: String, _ asked: LogsRequest) async throws(APIError) -> JSONValue {
        let page = try await call {
            try await client.logs(
                LogsQuery(
                    group: group, path: asked.child, attempt: asked.attempt, after: asked.after, before: asked.before,
                    tail: asked.tail, since: asked.since, limit: asked.limit))
        }
        var object = Self.logsSummary(page)
        object["lines"] = .array(page.lines.map { $0.json(attempt: page.attempt, worker: page.worker) })
        return .object(object)
    }

    /// A page's fields but its lines.
    static func logsSummary(_ page: LogsPage) -> [String: JSONValue] {
        [
            "group": .string(page.group), "child": .string(page.path), "attempt": .int(Int64(page.attempt)),
            "latestAttempt": .int(Int64(page.latestAttempt)), "state": .string("\(page.state)"),
            "attemptFinished": .bool(page.attemptFinished), "worker": .string(page.worker),
            "lastSequence": .int(Int64(page.lastSequence)), "cutBytes": .int(Int64(page.cutBytes)),
            "more": .bool(page.more), "error": DashboardJSON.optional(page.error),
        ]
    }

    /// `GET /api/groups/ID/logs?child=PATH&follow=1`: `waiting` (the child has not started),
    /// `attempt` (the lines that follow are of this attempt), `lines` (id `ATTEMPT:SEQUENCE` of
    /// the last one, so a reconnecting browser carries on after it), then `ended`, after which
    /// the stream ends; `error` for a failure. A slow browser holds the follower back (each page
    /// is asked for once the last is written).
    func logEvents(_ request: Request, group: String, _ asked: LogsRequest) -> Response {
        Response(
            status: .ok, headers: Self.sseHeaders,
            body: ResponseBody { writer in
                self.openLogStreams.add(1, ordering: .relaxed)
                defer { self.openLogStreams.subtract(1, ordering: .relaxed) }
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                do {
                    try await request.body.consumeWithCancellationOnInboundClose { _ in
                        try await self.streamLog(group, asked, to: &writer)
                    }
                } catch is CancellationError {
                    return  // the browser went away, or the server stops
                }
                try await writer.finish(nil)
            })
    }

    private func streamLog(_ group: String, _ asked: LogsRequest, to writer: inout any ResponseBodyWriter) async throws
    {
        var lastWrite = ContinuousClock.now
        var attempt = asked.from?.attempt ?? 0
        var worker = ""
        var out = writer
        do {
            try await client.followLogs(
                group, child: asked.child, attempt: asked.attempt, tail: asked.tail, since: asked.since,
                from: asked.from
                    ?? (asked.after > 0 && asked.attempt > 0
                        ? LogPosition(attempt: asked.attempt, sequence: asked.after) : nil),
                idle: {
                    if self.isStopping { throw CancellationError() }
                    guard ContinuousClock.now - lastWrite >= self.keepAliveInterval else { return }
                    try await out.write(ByteBuffer(string: ": keep-alive\n\n"))
                    lastWrite = .now
                }
            ) { event in
                switch event {
                case .waiting(let state):
                    try await out.write(
                        Self.sse("waiting", ["child": .string(asked.child), "state": .string("\(state)")]))
                case .attempt(let number, let name):
                    attempt = number
                    worker = name
                    try await out.write(
                        Self.sse("attempt", ["attempt": .int(Int64(number)), "worker": .string(name)]))
                case .lines(let lines):
                    guard let last = lines.last else { return }
                    let data: JSONValue = [
                        "attempt": .int(Int64(attempt)),
                        "lines": .array(lines.map { $0.json(attempt: attempt, worker: worker) }),
                    ]
                    let id = LogPosition(attempt: attempt, sequence: last.sequence)
                    try await out.write(
                        ByteBuffer(string: "id: \(id)\nevent: lines\ndata: \(data.jsonString(pretty: false))\n\n"))
                case .ended(let page):
                    try await out.write(Self.sse("ended", .object(Self.logsSummary(page))))
                }
                lastWrite = .now
            }
        } catch let error as ClientError {
            let failure = APIError(error)
            try await out.write(Self.sse("error", DashboardJSON.error(failure.code, failure.message)))
        }
        writer = out
    }

    /// An RFC 3339 time, with or without fractional seconds.
    static func rfc3339Date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds],
        ] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}

extension HTTPFields.Element.Name {
    /// `Last-Event-ID`: the id of the last event a reconnecting `EventSource` had.
    static let lastEventID = Self("Last-Event-ID")!
}
