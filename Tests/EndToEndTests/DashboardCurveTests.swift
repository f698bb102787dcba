import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The dashboard of a CURVE coordinator (docs/http.md, "How it works"): its client gets in with
/// the admin key the coordinator authorised in memory, also after a SIGHUP reload; reading
/// needs a token (docs/security.md).
@Suite(.timeLimit(.minutes(2)))
struct DashboardCurveTests {
    static let viewerToken = "curve-viewer-0123456789"

    @Test func aCurveCoordinatorsDashboardReadsWithItsInMemoryKeyAcrossReloads() async throws {
        let keys = try Keys([("w1", "worker")])
        let tokens = try Scratch.write("viewer watcher \(Self.viewerToken)\n", name: "http-tokens")
        let cluster = try Cluster(
            coordinatorArguments: keys.coordinator + ["--http", "127.0.0.1:0", "--http-tokens", tokens])
        defer { cluster.stop() }
        try cluster.addWorker(name: "w1", slots: 2, extra: keys.peer("w1"))
        let prefix = "cohort coordinator dashboard on "
        let url = try cluster.coordinator.waitForLine(timeout: .seconds(20)) { line in
            line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : nil
        }
        #expect(try await Self.workerNames(url) == ["w1"])
        let anonymous = try await URLSession.shared.data(from: URL(string: "\(url)api/workers")!)
        #expect((anonymous.1 as? HTTPURLResponse)?.statusCode == 401, "under CURVE, reading needs a token")
        #expect(
            try !FileManager.default.contentsOfDirectory(atPath: keys.authorized).contains { $0.contains("dashboard") })

        kill(cluster.coordinator.pid, SIGHUP)
        try cluster.coordinator.waitForStderr(containing: "authorised keys reloaded")
        #expect(try await Self.workerNames(url) == ["w1"], "the in-memory key survives a reload")
    }

    static func workerNames(_ url: String) async throws -> [String] {
        var request = URLRequest(url: URL(string: "\(url)api/workers")!)
        request.setValue("Bearer \(viewerToken)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return (object?["workers"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
    }
}

/// Where the dashboard may listen (docs/http.md, "Settings").
@Suite(.timeLimit(.minutes(2)))
struct DashboardSettingsTests {
    /// An address given on purpose (here through the environment) that is taken stops the
    /// coordinator with exit 69 and the reason; only the default address is let go with a warning.
    @Test func aTakenAddressGivenOnPurposeStopsTheCoordinator() throws {
        let first = try Cluster(coordinatorArguments: ["--http", "127.0.0.1:0"])
        defer { first.stop() }
        let prefix = "cohort coordinator dashboard on http://"
        let address = try first.coordinator.waitForLine(timeout: .seconds(20)) { line in
            line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count).dropLast()) : nil
        }
        let second = try Subprocess(
            Binaries.cohort, ["coordinator", "--endpoint", "tcp://127.0.0.1:*", "--no-journal"], name: "second",
            environment: ["COHORT_COORDINATOR_HTTP": address])
        defer { second.stop() }
        let status = try second.wait(timeout: .seconds(20))
        #expect(status == 69, "stderr:\n\(second.stderr)")
        #expect(second.stderr.contains("cannot serve the dashboard on \(address)"), "\(second.stderr)")
    }

    /// A dashboard other machines could reach needs tokens: refused at start (exit 64).
    @Test func anExposedDashboardWithoutTokensIsRefused() throws {
        let result = try cohort([
            "coordinator", "--endpoint", "tcp://127.0.0.1:*", "--no-journal", "--http", "0.0.0.0:0",
        ])
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("could be reached from other machines, and it has no tokens"), "\(result)")
        let bad = try cohort(["coordinator", "--no-journal", "--http", "localhost"])
        #expect(bad.status == 64, "\(bad)")
        #expect(bad.stderr.contains("expected ADDRESS:PORT"), "\(bad)")
    }
}
