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
    func groupEvents(_ group: String) -> Response {
        let client = client
        return Response(
            status: .ok, headers: Self.sseHeaders,
            body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                do {
                    for try await event in client.watch(group) {
                        switch event {
                        case .snapshot(let detail):
                            try await writer.write(Self.sse("snapshot", DashboardJSON.group(detail)))
                        case .child(let child, let at):
                            try await writer.write(
                                Self.sse(
                                    "child",
                                    [
                                        "group": .string(group), "at": DashboardJSON.time(at),
                                        "child": DashboardJSON.child(child),
                                    ]))
                        case .finished(let state, let reason, let at):
                            try await writer.write(
                                Self.sse(
                                    "finished",
                                    [
                                        "group": .string(group), "at": DashboardJSON.time(at),
                                        "state": .string("\(state)"), "reason": DashboardJSON.optional(reason),
                                    ]))
                        }
                    }
                } catch let error as ClientError {
                    let api = APIError(error)
                    try await writer.write(Self.sse("error", DashboardJSON.error(api.code, api.message)))
                }
                try await writer.finish(nil)
            })
    }

    /// `GET /api/events`: what changed in the cluster, looked at every `pollInterval`:
    /// `groups` (counts by state; the list is fetched again), `workers` and `locks` (in full,
    /// as their `GET`s answer). Each is sent at once, then when it changes. Never ends by itself.
    func clusterEvents() -> Response {
        Response(
            status: .ok, headers: Self.sseHeaders,
            body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
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
                    if quiet >= .seconds(15) {
                        try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                        quiet = .zero
                    }
                    try await Task.sleep(for: self.pollInterval)
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
        if let groups = try? await client.status() {
            var counts: [String: JSONValue] = [:]
            for state in GroupState.allCases { counts["\(state)"] = .int(0) }
            for group in groups { counts["\(group.state)"] = .int((counts["\(group.state)"]?.int64Value ?? 0) + 1) }
            // Progress of unfinished groups, so the list refreshes as children finish.
            let details = await unfinishedGroups(groups)
            unfinished = details
            var progress: [String: JSONValue] = [:]
            for detail in details { progress[detail.id] = DashboardJSON.progress(detail) }
            events.append(
                (
                    "groups",
                    ["total": .int(Int64(groups.count)), "counts": .object(counts), "running": .object(progress)]
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
