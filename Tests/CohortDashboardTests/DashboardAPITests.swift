import CohortClient
import CohortPeerSupport
import CohortSpec
import CohortTestSupport
import CohortWorker
import Foundation
import Glibc
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import CohortDashboard

/// The HTTP API (docs/http.md) against a real in-process coordinator and worker, through
/// Hummingbird's router test client.
@Suite(.timeLimit(.minutes(2)))
struct DashboardAPITests {
    static let adminToken = "admin-token-0123456789"
    static let viewerToken = "viewer-token-0123456789"

    @Test func listsGroupsNewestFirstFilteredAndPaged() async throws {
        try await withDashboard { fixture, client in
            let first = try await fixture.submit(Self.quick("alpha"))
            let second = try await fixture.submit(Self.quick("beta"))
            _ = try await fixture.client.wait(first)
            _ = try await fixture.client.wait(second)
            let running = try await fixture.submit(Self.slow("gamma", seconds: 30))
            try await fixture.waitForChild(running, "slow", state: .running)

            let all = try await client.json("/api/groups")
            #expect(all["total"] as? Int == 3)
            let ids = (all["groups"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(ids == [running, second, first], "newest first")
            let newest = (all["groups"] as? [[String: Any]])?.first
            #expect(newest?["state"] as? String == "running")
            #expect((newest?["progress"] as? [String: Any])?["total"] as? Int == 1)
            #expect((newest?["progress"] as? [String: Any])?["finished"] as? Int == 0)

            let runningOnly = try await client.json("/api/groups?state=running")
            #expect(runningOnly["total"] as? Int == 1)
            #expect(all["more"] as? Bool == false)
            #expect((all["counts"] as? [String: Any])?["running"] as? Int == 1)
            #expect((all["counts"] as? [String: Any])?["pending"] as? Int == 0)
            // The name is the coordinator's glob, as `cohort status --name`: no part matches.
            let byName = try await client.json("/api/groups?name=bet*")
            #expect((byName["groups"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["beta"])
            let byPart = try await client.json("/api/groups?name=bet")
            #expect((byPart["groups"] as? [[String: Any]])?.isEmpty == true)
            let byGlob = try await client.json("/api/groups?name=*a&state=succeeded")
            #expect(byGlob["total"] as? Int == 2)
            let paged = try await client.json("/api/groups?limit=1&offset=1")
            #expect((paged["groups"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [second])
            #expect(paged["more"] as? Bool == true, "a third group is past the page")
            #expect(paged["total"] is NSNull, "unknown without reading every group")
            let last = try await client.json("/api/groups?limit=1&offset=2")
            #expect(last["more"] as? Bool == false)
            #expect(last["total"] as? Int == 3)

            let tooMany = try await client.response("/api/groups?limit=101")
            #expect(tooMany.status == .badRequest)
            let badGlob = try await client.response("/api/groups?name=rel%5B")
            #expect(badGlob.status == .badRequest)

            let bad = try await client.response("/api/groups?state=sleeping")
            #expect(bad.status == .badRequest)
            #expect(String(buffer: bad.body).contains(#"state \"sleeping\" is not one of pending"#))
        }
    }

    @Test func groupShowsChildrenWithDependenciesAndResults() async throws {
        try await withDashboard { fixture, client in
            let spec = """
                name: graph
                children:
                  - { name: a, run: echo, with: { value: 1 } }
                  - { name: b, run: echo, after: [a], with: { value: 2 } }
                  - name: tests
                    after: [b]
                    group:
                      children:
                        - { name: unit, run: echo, with: { value: 3 } }
                """
            let id = try await fixture.submit(spec)
            _ = try await fixture.client.wait(id)
            let group = try await client.json("/api/groups/\(id)")
            #expect(group["state"] as? String == "succeeded")
            let children = try #require(group["children"] as? [[String: Any]])
            let byPath = Dictionary(uniqueKeysWithValues: children.map { ($0["path"] as? String ?? "", $0) })
            #expect(byPath["b"]?["dependsOn"] as? [String] == ["a"])
            #expect(byPath["b"]?["kind"] as? String == "echo")
            #expect(byPath["tests"]?["isGroup"] as? Bool == true)
            #expect(byPath["tests"]?["dependsOn"] as? [String] == ["b"])
            #expect(byPath["tests/unit"]?["dependsOn"] as? [String] == [], "the enclosing group's wait is not repeated")
            #expect(byPath["a"]?["worker"] as? String == "dash-worker")
            #expect(byPath["a"]?["attempt"] as? Int == 1)
            #expect(byPath["a"]?["startedAt"] is String)
            #expect((group["progress"] as? [String: Any])?["finished"] as? Int == 3)

            let result = try await client.json("/api/groups/\(id)/result?child=b")
            #expect(result["state"] as? String == "succeeded")
            #expect((result["output"] as? [String: Any])?["value"] as? Int == 2)

            let missing = try await client.response("/api/groups/no-such-group")
            #expect(missing.status == .notFound)
            #expect(String(buffer: missing.body).contains("\"code\":\"not_found\""))
        }
    }

    @Test func workersShowWhatRunsThereAndLocksTheirHolders() async throws {
        try await withDashboard { fixture, client in
            let spec = """
                name: locked
                children:
                  - { name: hold, run: sleep, exclusive: [repo], with: { seconds: 30 } }
                  - { name: wait, run: sleep, exclusive: [repo], with: { seconds: 30 } }
                """
            let id = try await fixture.submit(spec)
            try await fixture.waitForChild(id, "hold", state: .running)

            let workers = try #require(try await client.json("/api/workers")["workers"] as? [[String: Any]])
            #expect(workers.count == 1)
            let worker = try #require(workers.first)
            #expect(worker["name"] as? String == "dash-worker")
            #expect(worker["slots"] as? Int == 2)
            #expect(worker["state"] as? String == "ready")
            #expect(worker["lastHeardAt"] is String)
            let attempts = try #require(worker["attempts"] as? [[String: Any]])
            #expect(attempts.map { $0["child"] as? String } == ["hold"])
            #expect(attempts.first?["group"] as? String == id)

            let locks = try #require(try await client.json("/api/locks")["locks"] as? [[String: Any]])
            let repo = try #require(locks.first { $0["category"] as? String == "repo" })
            #expect((repo["holder"] as? [String: Any])?["child"] as? String == "hold")
            // How long it has held the category, as `cohort locks` shows it.
            let held = try #require((repo["holder"] as? [String: Any])?["heldSeconds"] as? Double)
            #expect(held >= 0 && held < 60, "held \(held) s")
            #expect((repo["token"] as? Int ?? 0) > 0)
            #expect((repo["waiters"] as? [[String: Any]])?.map { $0["child"] as? String } == ["wait"])
            // An exclusive lock: limit 1, its one holder with its own token (the page shows 1/1).
            #expect(repo["limit"] as? Int == 1)
            let holders = try #require(repo["holders"] as? [[String: Any]])
            #expect(holders.map { $0["child"] as? String } == ["hold"])
            #expect(holders.first?["token"] as? Int == repo["token"] as? Int)
            try await fixture.client.cancel(id)
        }
    }

    @Test func groupEventStreamDeliversAnEventWhenAChildFinishes() async throws {
        try await withDashboard { fixture, client in
            let id = try await fixture.submit(Self.slow("short", seconds: 0.5))
            // The stream ends after the group's `finished` event: the whole body can be read.
            let response = try await client.response("/api/groups/\(id)/events")
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("text/event-stream") == true)
            let events = Self.events(String(buffer: response.body))
            #expect(events.first?.name == "snapshot")
            let finishedChild = events.first { event in
                guard event.name == "child", let child = event.data["child"] as? [String: Any] else { return false }
                return child["path"] as? String == "slow" && child["state"] as? String == "succeeded"
            }
            #expect(finishedChild != nil, "a child event with slow succeeded, in \(events.map(\.name))")
            #expect(events.last?.name == "finished")
            #expect(events.last?.data["state"] as? String == "succeeded")
        }
    }

    @Test func clusterEventStreamSendsGroupsWorkersAndLocks() async throws {
        try await withDashboard { fixture, _ in
            let state = await fixture.server.clusterState()
            #expect(state.map(\.0) == ["groups", "workers", "locks"])
            let id = try await fixture.submit(Self.slow("one", seconds: 30))
            // Looked at again once the last look is older than the poll interval (100 ms here).
            let deadline = ContinuousClock.now + Deadline.event
            var unfinished: JSONValue?
            var progress: JSONValue?
            while ContinuousClock.now < deadline {
                let groups = await fixture.server.clusterState().first?.1
                unfinished = groups?.select("unfinished")
                progress = groups?.select("running")
                if unfinished == .int(1) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(unfinished == .int(1))
            #expect(
                progress?.objectValue?[id] != nil, "the unfinished group's progress: \(String(describing: progress))")
            try await fixture.client.cancel(id)
        }
    }

    @Test func cancelNeedsAnAdminToken() async throws {
        try await withDashboard { fixture, client in
            let id = try await fixture.submit(Self.slow("victim", seconds: 30))
            try await fixture.waitForChild(id, "slow", state: .running)

            let anonymous = try await client.response("/api/groups/\(id)/cancel", method: .post)
            #expect(anonymous.status == .unauthorized)
            #expect(String(buffer: anonymous.body).contains("a token is needed to cancel groups"))
            let wrong = try await client.response("/api/groups/\(id)/cancel", method: .post, token: "not-a-token")
            #expect(wrong.status == .unauthorized)
            #expect(String(buffer: wrong.body).contains("unknown token"))
            let viewer = try await client.response("/api/groups/\(id)/cancel", method: .post, token: Self.viewerToken)
            #expect(viewer.status == .forbidden)
            #expect(String(buffer: viewer.body).contains("token \\\"watcher\\\" (role viewer) may not cancel groups"))
            let drain = try await client.response(
                "/api/workers/dash-worker/drain", method: .post, token: Self.viewerToken)
            #expect(drain.status == .forbidden)
            #expect(try await fixture.client.status(id).state == .running, "nothing was cancelled")

            let admin = try await client.response(
                "/api/groups/\(id)/cancel", method: .post, token: Self.adminToken,
                body: #"{"reason": "stopped by the API test"}"#)
            #expect(admin.status == .accepted)
            let accepted =
                try JSONSerialization.jsonObject(with: Data(String(buffer: admin.body).utf8)) as? [String: Any]
            #expect(
                accepted?["accepted"] as? Bool == true && accepted?["alreadyFinished"] == nil,
                "\(String(describing: accepted))")
            let final = try await fixture.client.wait(id)
            #expect(final.state == .cancelled)
            #expect(final.children.first?.error?.contains("stopped by the API test") == true)
            // Cancelling it again changes nothing, and the answer says how it had ended.
            let again = try await client.response("/api/groups/\(id)/cancel", method: .post, token: Self.adminToken)
            let answer = try JSONSerialization.jsonObject(with: Data(String(buffer: again.body).utf8)) as? [String: Any]
            #expect(answer?["accepted"] as? Bool == false, "\(String(describing: answer))")
            #expect(answer?["alreadyFinished"] as? String == "cancelled", "\(String(describing: answer))")
        }
    }

    @Test func groupStreamSendsKeepAlivesWhileQuiet() async throws {
        try await withDashboard(keepAliveInterval: .milliseconds(300)) { fixture, client in
            let id = try await fixture.submit(Self.slow("quiet", seconds: 2))
            let response = try await client.response("/api/groups/\(id)/events")
            let text = String(buffer: response.body)
            #expect(text.contains("\n: keep-alive\n"), "in \(text)")
            #expect(Self.events(text).last?.name == "finished")
        }
    }

    @Test func groupStreamEndsWhenTheBrowserGoesAway() async throws {
        try await withDashboard(.live) { fixture, client in
            let id = try await fixture.submit(Self.slow("long", seconds: 60))
            let port = try #require(client.port)
            let socket = try await RawHTTPConnection(port: port)
            try await socket.send("GET /api/groups/\(id)/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
            try await socket.read(until: "event: snapshot")
            #expect(fixture.server.openGroupStreams.load(ordering: .relaxed) == 1)
            socket.close()
            // Well before the first keep-alive (15 s), whose failed write would end it anyway.
            let deadline = ContinuousClock.now + .seconds(8)
            while fixture.server.openGroupStreams.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(fixture.server.openGroupStreams.load(ordering: .relaxed) == 0, "the stream ended with its browser")
            try await fixture.client.cancel(id)
        }
    }

    @Test func underCurveReadingNeedsAToken() async throws {
        try await withDashboard(readsNeedToken: true) { _, client in
            let anonymous = try await client.response("/api/groups")
            #expect(anonymous.status == .unauthorized)
            #expect(String(buffer: anonymous.body).contains("reading needs a token"))
            #expect(try await client.response("/api/workers").status == .unauthorized)
            #expect(try await client.response("/api/locks").status == .unauthorized)
            #expect(try await client.response("/api/groups/g-1").status == .unauthorized)
            #expect(try await client.response("/api/events").status == .unauthorized)
            #expect(try await client.response("/api/groups/g-1/events").status == .unauthorized)
            #expect(try await client.response("/api/groups", token: Self.viewerToken).status == .ok)
            let who = try await client.json("/api/whoami")
            #expect((who["may"] as? [String: Any])?["read"] as? Bool == false)
            #expect(who["tokenNeeded"] as? Bool == true)
            // An EventSource cannot send headers: the streams take the token as a parameter.
            let stream = try await client.response("/api/groups/no-such-group/events?token=\(Self.viewerToken)")
            #expect(stream.status == .ok)
            #expect(Self.events(String(buffer: stream.body)).first?.name == "error")
            let wrong = try await client.response("/api/groups/no-such-group/events?token=not-a-token-at-all")
            #expect(wrong.status == .unauthorized)
        }
    }

    @Test func aForeignHostHeaderIsRefused() async throws {
        try await withDashboard(.live) { fixture, client in
            let port = try #require(client.port)
            fixture.server.boundAddress.withLock { $0 = DashboardAddress(host: "127.0.0.1", port: port) }
            #expect(
                try await RawHTTPConnection.status(port: port, host: "evil.example:\(port)") == 421, "DNS rebinding")
            #expect(try await RawHTTPConnection.status(port: port, host: "localhost:\(port)") == 200)
            #expect(try await RawHTTPConnection.status(port: port, host: "127.0.0.1:\(port)") == 200)
            #expect(try await RawHTTPConnection.status(port: port, host: "[::1]:\(port)") == 200)
            #expect(try await RawHTTPConnection.status(port: port, host: "localhost:1") == 421, "another port")
        }
        let exposed = DashboardAddress(host: "10.1.2.3", port: 7401)
        #expect(DashboardServer.hostAllowed("10.1.2.3:7401", bound: exposed))
        #expect(!DashboardServer.hostAllowed("localhost:7401", bound: exposed), "not a loopback bind")
        #expect(!DashboardServer.hostAllowed("evil.example:7401", bound: exposed))
        #expect(!DashboardServer.hostAllowed(nil, bound: exposed))
        #expect(DashboardServer.hostAllowed("build-host:7401", bound: DashboardAddress(host: "0.0.0.0", port: 7401)))
    }

    @Test func whoamiSaysWhatATokenMayDo() async throws {
        try await withDashboard { _, client in
            let anonymous = try await client.json("/api/whoami")
            #expect(anonymous["role"] as? String == "viewer")
            #expect((anonymous["may"] as? [String: Any])?["cancel"] as? Bool == false)
            let admin = try await client.json("/api/whoami", token: Self.adminToken)
            #expect(admin["name"] as? String == "root")
            #expect((admin["may"] as? [String: Any])?["drain"] as? Bool == true)
            let page = try await client.response("/")
            #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(String(buffer: page.body).contains("/assets/app.js"))
            let script = try await client.response("/assets/app.js")
            #expect(script.headers[.contentType]?.hasPrefix("text/javascript") == true)
        }
    }

    // MARK: Support

    static func quick(_ name: String) -> String {
        "name: \(name)\nchildren:\n  - { name: one, run: echo, with: { value: 1 } }\n"
    }

    static func slow(_ name: String, seconds: Double) -> String {
        "name: \(name)\nchildren:\n  - { name: slow, run: sleep, with: { seconds: \(seconds) } }\n"
    }

    /// The events of an SSE body: name and JSON data.
    static func events(_ text: String) -> [(name: String, data: [String: Any])] {
        text.components(separatedBy: "\n\n").compactMap { block in
            var name: String?
            var data: [String: Any] = [:]
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: "),
                    let object = try? JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8))
                        as? [String: Any]
                {
                    data = object
                }
            }
            return name.map { ($0, data) }
        }
    }
}

/// A coordinator, a worker and a dashboard on them, in this process.
struct DashboardFixture: Sendable {
    let client: CohortClient
    let server: DashboardServer

    func submit(_ yaml: String) async throws -> String {
        try await client.submit(specText: yaml, sourceName: "test.yaml").id
    }

    func waitForChild(_ group: String, _ path: String, state: ChildState) async throws {
        let deadline = ContinuousClock.now + Deadline.event
        while ContinuousClock.now < deadline {
            if try await client.status(group).children.first(where: { $0.path == path })?.state == state { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("child \(path) of \(group) did not become \(state) in time")
        throw CancellationError()
    }
}

func withDashboard(
    _ testing: TestingSetup = .router, keepAliveInterval: Duration = .seconds(15), readsNeedToken: Bool = false,
    _ body: @escaping @Sendable (DashboardFixture, any TestClientProtocol) async throws -> Void
) async throws {
    try await withCoordinator { handle in
        var workerConfiguration = WorkerConfiguration(coordinator: handle.endpoint)
        workerConfiguration.name = "dash-worker"
        workerConfiguration.slots = 2
        workerConfiguration.killGrace = .seconds(1)
        workerConfiguration.drainTimeout = .zero
        var quiet = Logger(label: "test.worker")
        quiet.logLevel = .error
        let worker = Worker(configuration: workerConfiguration, logger: quiet)
        let running = Task { try await worker.run() }
        defer { running.cancel() }
        var configuration = ClientConfiguration(coordinator: handle.endpoint)
        configuration.peerName = "dashboard-tests"
        let client = try await CohortClient.connect(configuration, logger: quiet)
        // The worker is ready once the coordinator lists it.
        let deadline = ContinuousClock.now + Deadline.event
        while try await client.workers().first(where: { $0.state == .ready }) == nil {
            guard ContinuousClock.now < deadline else { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(20))
        }
        let tokens = AccessTokens([
            AccessToken(role: .admin, name: "root", secret: DashboardAPITests.adminToken),
            AccessToken(role: .viewer, name: "watcher", secret: DashboardAPITests.viewerToken),
        ])
        let server = DashboardServer(
            client: client, tokens: tokens, pollInterval: .milliseconds(100), keepAliveInterval: keepAliveInterval,
            readsNeedToken: readsNeedToken, logger: quiet)
        let app = Application(router: server.router(), logger: quiet)
        do {
            try await app.test(testing) { testClient in
                try await body(DashboardFixture(client: client, server: server), testClient)
            }
        } catch {
            await client.close()
            throw error
        }
        await client.close()
        running.cancel()
        _ = await running.result
    }
}

extension TestClientProtocol {
    func response(
        _ uri: String, method: HTTPRequest.Method = .get, token: String? = nil, body: String? = nil
    ) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        if body != nil { headers[.contentType] = "application/json" }
        return try await execute(
            uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }

    func json(_ uri: String, token: String? = nil) async throws -> [String: Any] {
        let response = try await self.response(uri, token: token)
        #expect(response.status == .ok, "\(uri): \(String(buffer: response.body))")
        return try #require(
            try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any])
    }
}

/// A plain TCP connection to the test server: it can go away in the middle of a response,
/// as a browser's tab does. Its blocking calls run on a dispatch queue, not on the tasks' own
/// threads (the server needs those).
final class RawHTTPConnection: Sendable {
    private let descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(port: Int) async throws {
        descriptor = try await Self.blocking {
            let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard descriptor >= 0, connected == 0 else {
                Glibc.close(descriptor)
                throw Failure(description: "cannot connect to 127.0.0.1:\(port)")
            }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            return descriptor
        }
    }

    func send(_ text: String) async throws {
        let descriptor = descriptor
        try await Self.blocking {
            let bytes = Array(text.utf8)
            guard Glibc.send(descriptor, bytes, bytes.count, 0) == bytes.count else {
                throw Failure(description: "cannot send the request")
            }
        }
    }

    /// Reads until `marker` has come (10 s at most per read); what came.
    @discardableResult
    func read(until marker: String) async throws -> String {
        let descriptor = descriptor
        return try await Self.blocking {
            var received = ""
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !received.contains(marker) {
                let count = Glibc.recv(descriptor, &buffer, buffer.count, 0)
                guard count > 0 else {
                    throw Failure(description: "the connection ended before \(marker): \(received)")
                }
                received += String(decoding: buffer[0..<count], as: UTF8.self)
            }
            return received
        }
    }

    func close() { Glibc.close(descriptor) }

    /// The status code of `GET /api/whoami` sent with `Host: host`.
    static func status(port: Int, host: String) async throws -> Int {
        let connection = try await RawHTTPConnection(port: port)
        defer { connection.close() }
        try await connection.send("GET /api/whoami HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
        let head = try await connection.read(until: "\r\n")
        return Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }
}
