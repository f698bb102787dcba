import CohortClient
import Hummingbird

import enum CohortSpec.JSONValue

// Server-Sent Events (`text/event-stream`, docs/http.md "Live updates"). Each event is
// `event: NAME`, `data: JSON` (one line) and a blank line; a comment line `: keep-alive` goes
// out when nothing else did for 15 s, so proxies keep the connection.

extension DashboardServer {
    static func sse(_ name: String, _ data: JSONValue) -> ByteBuffer {
        ByteBuffer(string: "event: \(name)\ndata: \(data.jsonString(pretty: false))\n\n")
    }

    static var sseHeaders: HTTPFields {
        [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store"]
    }

    /// `GET /api/groups/ID/events`: the coordinator's watch of the group, as it comes:
    /// `snapshot` (the group as `GET /api/groups/ID` shows it), a `child` per state change,
    /// then `finished`, after which the stream ends. An unknown group: one `error` event.
    ///
    /// The stream ends, and the watch with it, when the browser goes away (Hummingbird does
    /// not cancel a response body on its own), and when ``groupStreamBuffer`` events wait for
    /// a slow reader (the page reconnects and starts again from a fresh snapshot).
    func groupEvents(_ request: Request, _ group: String) -> Response {
        Response(
            status: .ok, headers: Self.sseHeaders,
            body: ResponseBody { writer in
                self.openGroupStreams.add(1, ordering: .relaxed)
                defer { self.openGroupStreams.subtract(1, ordering: .relaxed) }
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                do {
                    try await request.body.consumeWithCancellationOnInboundClose { _ in
                        try await self.streamGroup(group, to: &writer)
                    }
                } catch is CancellationError {
                    return  // the browser went away, or the server stops
                }
                try await writer.finish(nil)
            })
    }

    /// What ``groupEvents(_:_:)`` writes: the watch's events through a buffer of at most
    /// ``groupStreamBuffer``, and `: keep-alive` when nothing else went out for
    /// ``keepAliveInterval``.
    private func streamGroup(_ group: String, to writer: inout any ResponseBodyWriter) async throws {
        let (items, input) = AsyncStream<GroupStreamItem>.makeStream(
            bufferingPolicy: .bufferingOldest(Self.groupStreamBuffer))
        let client = client
        let keepAlive = keepAliveInterval
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                do {
                    for try await event in client.watch(group) {
                        if case .dropped = input.yield(.event(event)) {
                            input.finish()  // too far behind: end; the page reconnects
                            return
                        }
                    }
                } catch let error as ClientError {
                    input.yield(.failed(APIError(error)))
                }
                input.finish()
            }
            tasks.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: keepAlive / 3)
                    input.yield(.tick)
                }
            }
            var lastWrite = ContinuousClock.now
            for await item in items {
                switch item {
                case .tick:
                    guard ContinuousClock.now - lastWrite >= keepAlive else { continue }
                    try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                case .event(.snapshot(let detail)):
                    try await writer.write(Self.sse("snapshot", DashboardJSON.group(detail)))
                case .event(.child(let child, let at)):
                    try await writer.write(
                        Self.sse(
                            "child",
                            [
                                "group": .string(group), "at": DashboardJSON.time(at),
                                "child": DashboardJSON.child(child),
                            ]
                        ))
                case .event(.finished(let state, let reason, let at)):
                    try await writer.write(
                        Self.sse(
                            "finished",
                            [
                                "group": .string(group), "at": DashboardJSON.time(at), "state": .string("\(state)"),
                                "reason": DashboardJSON.optional(reason),
                            ]))
                case .failed(let error):
                    try await writer.write(Self.sse("error", DashboardJSON.error(error.code, error.message)))
                }
                lastWrite = ContinuousClock.now
            }
            tasks.cancelAll()
        }
    }

    /// `GET /api/events`: what changed in the cluster, looked at every `pollInterval`:
    /// `groups` (counts of the unfinished groups by state and the progress of the newest
    /// ``maxUnfinishedDetails``; the list is fetched again), `workers` and `locks` (in full,
    /// as their `GET`s answer). Each is sent at once, then when it changes. Never ends by itself.
    func clusterEvents(_ request: Request) -> Response {
        Response(
            status: .ok, headers: Self.sseHeaders,
            body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                do {
                    try await request.body.consumeWithCancellationOnInboundClose { _ in
                        var last: [String: JSONValue] = [:]
                        var quiet = Duration.zero
                        while !Task.isCancelled && !self.isStopping {
                            var sent = false
                            for (name, value) in await self.clusterState() where last[name] != value {
                                last[name] = value
                                try await writer.write(Self.sse(name, value))
                                sent = true
                            }
                            quiet = sent ? .zero : quiet + self.pollInterval
                            if quiet >= self.keepAliveInterval {
                                try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                                quiet = .zero
                            }
                            try await Task.sleep(for: self.pollInterval)
                        }
                    }
                } catch is CancellationError {
                    return  // the browser went away, or the server stops
                }
                try await writer.finish(nil)
            })
    }

    /// The cluster stream's events: name and data, in a fixed order. Every open stream shares
    /// one look per `pollInterval` (a cache), so more browsers do not ask the coordinator more.
    func clusterState() async -> [(String, JSONValue)] {
        let now = ContinuousClock.now
        if let cached = clusterCache.withLock({ $0 }), now - cached.at < pollInterval { return cached.events }
        var events: [(String, JSONValue)] = []
        var unfinished: [GroupDetail]?
        if let groups = try? await client.status(filter: Self.unfinishedFilter) {
            // Progress of the newest unfinished groups, so the list refreshes as children finish.
            let details = await unfinishedGroups(groups)
            unfinished = details
            var progress: [String: JSONValue] = [:]
            for detail in details { progress[detail.id] = DashboardJSON.progress(detail) }
            events.append(
                (
                    "groups",
                    [
                        "unfinished": .int(Int64(groups.count)), "counts": Self.counts(groups),
                        "running": .object(progress),
                    ]
                )
            )
        }
        if let workers = try? await workersJSON(unfinished: unfinished) { events.append(("workers", workers)) }
        if let locks = try? await locksJSON() { events.append(("locks", locks)) }
        clusterCache.withLock { $0 = ClusterSnapshot(at: now, events: events) }
        return events
    }
}

/// The last ``DashboardServer/clusterState()``, shared by the open cluster streams.
struct ClusterSnapshot: Sendable {
    var at: ContinuousClock.Instant
    var events: [(String, JSONValue)]
}

/// What a group stream writes next: an event of the watch, its failure, or a look at whether
/// a keep-alive is due.
enum GroupStreamItem: Sendable {
    case event(GroupEvent)
    case failed(APIError)
    case tick
}
