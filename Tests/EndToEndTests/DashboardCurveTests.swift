
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
        let result = try cohort(["coordinator", "--endpoint", "tcp://127.0.0.1:*", "--no-journal", "--http", "0.0.0.0:0"])
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("could be reached from other machines, and it has no tokens"), "\(result)")
        let bad = try cohort(["coordinator", "--no-journal", "--http", "localhost"])
        #expect(bad.status == 64, "\(bad)")
        #expect(bad.stderr.contains("expected ADDRESS:PORT"), "\(bad)")
    }
}
