import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The dashboard of a CURVE coordinator (docs/http.md, "How it works"): its client gets in with
/// the admin key the coordinator authorised in memory, also after a SIGHUP reload.
@Suite(.timeLimit(.minutes(2)))
struct DashboardCurveTests {
    @Test func aCurveCoordinatorsDashboardReadsWithItsInMemoryKeyAcrossReloads() async throws {
        let keys = try Keys([("w1", "worker")])
        let cluster = try Cluster(coordinatorArguments: keys.coordinator + ["--http", "127.0.0.1:0"])
        defer { cluster.stop() }
        try cluster.addWorker(name: "w1", slots: 2, extra: keys.peer("w1"))
        let prefix = "cohort coordinator dashboard on "
        let url = try cluster.coordinator.waitForLine(timeout: .seconds(20)) { line in
            line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : nil
        }
        #expect(try await Self.workerNames(url) == ["w1"])
        #expect(
            try !FileManager.default.contentsOfDirectory(atPath: keys.authorized).contains { $0.contains("dashboard") })

        kill(cluster.coordinator.pid, SIGHUP)
        try cluster.coordinator.waitForStderr(containing: "authorised keys reloaded")
        #expect(try await Self.workerNames(url) == ["w1"], "the in-memory key survives a reload")
    }

    static func workerNames(_ url: String) async throws -> [String] {
        let (data, response) = try await URLSession.shared.data(from: URL(string: "\(url)api/workers")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return (object?["workers"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
    }
}
