import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension EndToEnd {
    @Suite struct Demo {
        /// The pids of the processes the demo says it started.
        static func startedPids(_ stdout: String) -> [pid_t] {
            stdout.split(separator: "\n")
                .filter { $0.hasPrefix("cohort demo: started ") }
                .compactMap { line -> pid_t? in
                    guard let range = line.range(of: "(pid ") else { return nil }
                    return pid_t(line[range.upperBound...].prefix { $0.isNumber })
                }
        }

        /// The log directory the demo names at its start.
        static func logDirectory(_ stdout: String) -> String? {
            let prefix = "cohort demo: logs in "
            guard let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
            return String(line.dropFirst(prefix.count).prefix { $0 != " " })
        }

        /// After the demo exited: none of the processes it started (or theirs) is running, and
        /// its log directory is gone. Checked before the harness's own stop could hide a leak.
        static func expectNothingLeftBehind(_ demo: Subprocess) {
            let pids = startedPids(demo.stdout)
            for pid in pids { #expect(Cancellation.isGone(pid), "process \(pid) is gone") }
            #expect(Leftovers.pids(tags: [demo.tag]).isEmpty, "no process the demo started survives it")
            let directory = logDirectory(demo.stdout)
            #expect(directory?.contains("cohort-demo-") == true, "the demo names its log directory: \(demo.stdout)")
            if let directory { #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is removed") }
        }

        /// `cohort demo` exits 0 and leaves none of the processes it started behind, nor its logs.
        @Test func demoSucceedsAndLeavesNoProcessBehind() throws {
            let demo = try Subprocess(Binaries.cohort, ["demo"], name: "demo")
            defer { demo.stop() }
            let status = try demo.wait(timeout: .seconds(180))
            #expect(status == 0, "stdout:\n\(demo.stdout)\nstderr:\n\(demo.stderr)")
            #expect(Self.startedPids(demo.stdout).count == 4, "a coordinator and three workers: \(demo.stdout)")
            #expect(demo.stdout.contains("everything behaved as expected"))
            Self.expectNothingLeftBehind(demo)
        }

        /// Ctrl-C (SIGINT) while the demo's group runs: it exits 130, its processes are stopped
        /// and its log directory is removed.
        @Test func anInterruptedDemoStopsItsProcessesAndRemovesItsLogs() throws {
            let demo = try Subprocess(Binaries.cohort, ["demo"], name: "demo")
            defer { demo.stop() }
            _ = try demo.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("cohort demo: submitted ") ? true : nil }
            kill(demo.pid, SIGINT)
            let status = try demo.wait(timeout: .seconds(30))
            #expect(status == 130, "stdout:\n\(demo.stdout)\nstderr:\n\(demo.stderr)")
            #expect(Self.startedPids(demo.stdout).count == 4, "\(demo.stdout)")
            Self.expectNothingLeftBehind(demo)
        }

        /// `cohort demo --keep`: after the demo the cluster keeps running with its dashboard
        /// (which shows the demo's group) until Ctrl-C, which stops every process.
        @Test func keepLeavesTheClusterAndItsDashboardUntilCtrlC() async throws {
            let demo = try Subprocess(Binaries.cohort, ["demo", "--keep"], name: "demo")
            defer { demo.stop() }
            _ = try demo.waitForLine(timeout: .seconds(180)) { $0.contains("press Ctrl-C to stop it") ? true : nil }
            let prefix = "cohort demo: dashboard on "
            let url = try demo.waitForLine(timeout: .seconds(1)) { line in
                line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : nil
            }
            #expect(demo.stdout.contains("everything behaved as expected; the cluster keeps running"))
            let pids = Self.startedPids(demo.stdout)
            #expect(pids.count == 4, "\(demo.stdout)")
            #expect(pids.allSatisfy { kill($0, 0) == 0 }, "the cluster still runs after the demo")
            let (data, _) = try await URLSession.shared.data(from: URL(string: "\(url)api/groups")!)
            let groups = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["groups"] as? [[String: Any]]
            #expect(
                groups?.count == 1, "the dashboard shows the demo's group: \(String(decoding: data, as: UTF8.self))")
            // Its metrics counted the demo's children (11, one cancelled on purpose).
            let metricsPrefix = "cohort demo: metrics on "
            let metrics = try demo.waitForLine(timeout: .seconds(1)) { line in
                line.hasPrefix(metricsPrefix) ? String(line.dropFirst(metricsPrefix.count)) : nil
            }
            let (text, _) = try await URLSession.shared.data(from: URL(string: metrics)!)
            #expect(
                String(decoding: text, as: UTF8.self).contains("cohort_children_finished_total{"),
                "\(String(decoding: text, as: UTF8.self).prefix(2000))")

            kill(demo.pid, SIGINT)
            let status = try demo.wait(timeout: .seconds(30))
            #expect(status == 0, "stdout:\n\(demo.stdout)\nstderr:\n\(demo.stderr)")
            Self.expectNothingLeftBehind(demo)
        }
    }
}
