import CohortClient
import CohortTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import CohortDashboard

/// `GET /api/groups/ID/logs` (docs/http.md): pages of a child's log and, with `follow=1`, its
/// lines as Server-Sent Events, against a real in-process coordinator and worker.
@Suite(.timeLimit(.minutes(2)))
struct DashboardLogsTests {
    /// A group of one shell child `c` running `script`.
    static func shell(_ name: String, _ script: String) -> String {
        let escaped = script.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return """
            name: \(name)
            children:
              - { name: c, run: shell, with: { command: ["sh", "-c", "\(escaped)"] } }
            """
    }

    /// An SSE body's events: name, id and JSON data.
    static func events(_ text: String) -> [(name: String, id: String?, data: [String: Any])] {
        text.components(separatedBy: "\n\n").compactMap { block in
            var name: String?
            var id: String?
            var data: [String: Any] = [:]
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("data: "),
                    let object = try? JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8)) as? [String: Any]
                {
                    data = object
                }
            }
            return name.map { ($0, id, data) }
        }
    }

    static func texts(_ lines: Any?) -> [String] {
        (lines as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
    }

    static func sequences(_ lines: Any?) -> [Int] {
        (lines as? [[String: Any]] ?? []).compactMap { $0["sequence"] as? Int }
    }

    /// A finished child's log, page by page: the tail, lines before a sequence (a big log
    /// read backwards), after one with a limit; a line that is not UTF-8 comes with its bytes.
    @Test func pagesOfAFinishedChildsLog() async throws {
        try await withDashboard { fixture, client in
            let id = try await fixture.submit(
                Self.shell(
                    "paged", "for i in $(seq 1 30); do echo line-$i; done; echo oops >&2; printf '\\377\\376\\n'"))
            _ = try await fixture.client.wait(id)
            let base = "/api/groups/\(id)/logs?child=c"

            let all = try await client.json(base)
            #expect(Self.sequences(all["lines"]) == Array(1...32))
            #expect(Self.texts(all["lines"]).prefix(2) == ["line-1", "line-2"])
            #expect(all["attempt"] as? Int == 1 && all["attemptFinished"] as? Bool == true)
            #expect(all["state"] as? String == "succeeded" && all["worker"] as? String == "dash-worker")
            let lines = try #require(all["lines"] as? [[String: Any]])
            // stdout and stderr are two pipes: their order is the order the worker read them.
            #expect(
                lines.filter { $0["stream"] as? String == "stderr" }.compactMap { $0["text"] as? String } == ["oops"])
            let binary = lines.filter { $0["stream"] as? String == "stdout" && $0["bytes"] != nil }
            #expect(binary.compactMap { $0["bytes"] as? String } == [Data([0xFF, 0xFE]).base64EncodedString()])
            #expect(binary.first?["text"] as? String == "\u{FFFD}\u{FFFD}", "invalid UTF-8 shown as U+FFFD")
            #expect(lines[0]["bytes"] == nil, "valid UTF-8 needs no bytes")

            #expect(Self.sequences(try await client.json(base + "&tail=3")["lines"]) == [30, 31, 32])
            #expect(Self.sequences(try await client.json(base + "&before=10&tail=3")["lines"]) == [7, 8, 9])
            let after = try await client.json(base + "&after=28&limit=2")
            #expect(Self.sequences(after["lines"]) == [29, 30])
            #expect(after["more"] as? Bool == true)
            let bounded = try await client.json(base + "&after=5&before=8")
            #expect(Self.sequences(bounded["lines"]) == [6, 7])
            #expect(bounded["more"] as? Bool == false, "nothing more before 8")
        }
    }

    /// Every wrong parameter is named in a 400; an unknown group or child is a 404.
    @Test func badParametersAreNamed() async throws {
        try await withDashboard { fixture, client in
            let id = try await fixture.submit(Self.shell("bad", "echo one"))
            _ = try await fixture.client.wait(id)
            let base = "/api/groups/\(id)/logs"
            for (query, named) in [
                ("", "child"), ("?child=c&attempt=0", "attempt"), ("?child=c&tail=10001", "tail"),
                ("?child=c&limit=x", "limit"), ("?child=c&since=yesterday", "since"), ("?child=c&after=-1", "after"),
                ("?child=c&follow=yes", "follow"), ("?child=c&follow=1&before=3", "before"),
                ("?child=c&follow=1&from=1-2", "from"), ("?child=c&attempt=2&from=1:2", "from"),
            ] {
                let response = try await client.response(base + query)
                let body = String(buffer: response.body)
                #expect(response.status == .badRequest, "\(query): \(body)")
                #expect(body.contains(named), "\(query): \(body)")
            }
            #expect(try await client.response("/api/groups/no-such/logs?child=c").status == .notFound)
            let child = try await client.response(base + "?child=nope")
            #expect(child.status == .notFound && String(buffer: child.body).contains("nope"))
            let followed = try await client.response(base + "?child=nope&follow=1")
            #expect(followed.status == .notFound, "a follower of no child gets a status, not a stream")
            #expect(try await client.response(base + "?child=c&attempt=2").status == .notFound)
        }
    }

    /// `follow=1`: a line written while the stream is open comes as a `lines` event whose id
    /// is `ATTEMPT:SEQUENCE`; the stream sends keep-alives while quiet and ends with `ended`.
    @Test func aFollowerGetsLinesAsTheyAreWrittenThenEnded() async throws {
        try await withDashboard(keepAliveInterval: .milliseconds(300)) { fixture, client in
            let flag = FileManager.default.temporaryDirectory.appendingPathComponent(
                "cohort-log-flag-\(UUID().uuidString)"
            ).path
            defer { try? FileManager.default.removeItem(atPath: flag) }
            let id = try await fixture.submit(
                Self.shell(
                    "followed", "echo first; while [ ! -e \(flag) ]; do sleep 0.05; done; sleep 1; echo second"))
            try await fixture.waitForChild(id, "c", state: .running)
            async let body = client.response("/api/groups/\(id)/logs?child=c&follow=1")
            // The stream is open before the child goes on: it is quiet for 1 s (a keep-alive
            // is due every 300 ms), then writes its second line.
            let deadline = ContinuousClock.now + Deadline.event
            while fixture.server.openLogStreams.load(ordering: .relaxed) == 0 {
                guard ContinuousClock.now < deadline else { throw CancellationError() }
                try await Task.sleep(for: .milliseconds(20))
            }
            _ = FileManager.default.createFile(atPath: flag, contents: Data())
            let response = try await body
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("text/event-stream") == true)
            let text = String(buffer: response.body)
            #expect(text.contains("\n: keep-alive\n"), "quiet while the child waited: \(text)")
            let events = Self.events(text)
            #expect(events.first?.name == "attempt" && events.first?.data["attempt"] as? Int == 1, "\(text)")
            let lines = events.filter { $0.name == "lines" }
            #expect(lines.flatMap { Self.texts($0.data["lines"]) } == ["first", "second"], "\(text)")
            #expect(lines.last?.id == "1:2")
            #expect(events.last?.name == "ended")
            #expect(events.last?.data["state"] as? String == "succeeded")
        }
    }

    /// A browser reconnecting sends `Last-Event-ID`: the stream carries on after that line,
    /// none repeated; `from` does the same as a parameter.
    @Test func aReconnectingFollowerCarriesOnAfterItsLastLine() async throws {
        try await withDashboard { fixture, client in
            let id = try await fixture.submit(Self.shell("resumed", "for i in 1 2 3 4 5; do echo line-$i; done"))
            _ = try await fixture.client.wait(id)
            var headers: HTTPFields = [:]
            headers[.lastEventID] = "1:3"
            let resumed = try await client.execute(
                uri: "/api/groups/\(id)/logs?child=c&follow=1&tail=1", method: .get, headers: headers, body: nil)
            let events = Self.events(String(buffer: resumed.body))
            #expect(
                events.filter { $0.name == "lines" }.flatMap { Self.texts($0.data["lines"]) } == ["line-4", "line-5"])
            #expect(events.last?.name == "ended")
            let from = try await client.response("/api/groups/\(id)/logs?child=c&follow=1&from=1:4")
            #expect(
                Self.events(String(buffer: from.body)).filter { $0.name == "lines" }.flatMap {
                    Self.texts($0.data["lines"])
                } == ["line-5"])
        }
    }

    /// Under CURVE a log is read with a token only, in the header or (for an EventSource) as
    /// a parameter.
    @Test func underCurveALogNeedsAToken() async throws {
        try await withDashboard(readsNeedToken: true) { _, client in
            #expect(try await client.response("/api/groups/g-1/logs?child=c").status == .unauthorized)
            #expect(try await client.response("/api/groups/g-1/logs?child=c&follow=1").status == .unauthorized)
            let viewer = try await client.response(
                "/api/groups/g-1/logs?child=c", token: DashboardAPITests.viewerToken)
            #expect(viewer.status == .notFound, "read, and the group is unknown")
            let stream = try await client.response(
                "/api/groups/g-1/logs?child=c&follow=1&token=\(DashboardAPITests.viewerToken)")
            #expect(stream.status == .notFound)
        }
    }
}
