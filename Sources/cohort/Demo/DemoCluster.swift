import Foundation
import Synchronization

/// The coordinator and three workers `cohort demo` starts as child processes of itself, on a
/// free port of 127.0.0.1, with their output in log files.
///
/// ``stop()`` stops every process it started (workers first, then the coordinator): SIGTERM,
/// then SIGKILL after a grace period, by pid. It is safe to call at any time, more than once.
final class DemoCluster: Sendable {
    /// Each worker's name and label.
    static let workers = [("demo-alpha", "alpha"), ("demo-beta", "beta"), ("demo-gamma", "gamma")]

    /// Where the processes' logs go.
    let logDirectory: String
    private let executable: String
    private let started = Mutex<[ChildProcess]>([])
    private let addresses = Mutex<(endpoint: String?, dashboard: String?, metrics: String?)>((nil, nil, nil))

    /// The coordinator's endpoint, once ``start(say:)`` has read it.
    var endpoint: String? { addresses.withLock { $0.endpoint } }
    /// The coordinator's dashboard (`http://127.0.0.1:PORT/`), once ``start(say:)`` has read it.
    var dashboardURL: String? { addresses.withLock { $0.dashboard } }
    /// The coordinator's Prometheus metrics (`http://127.0.0.1:PORT/metrics`), once read.
    var metricsURL: String? { addresses.withLock { $0.metrics } }

    init(executable: String, logDirectory: String) {
        self.executable = executable
        self.logDirectory = logDirectory
    }

    /// The coordinator's journal, a directory of its own so demos never share one (removed by ``stop(grace:say:)``).
    var stateDirectory: String { logDirectory + "/state" }

    /// Every pid started so far, coordinator first.
    var pids: [pid_t] { started.withLock { $0.map(\.pid) } }

    /// Starts the coordinator, reads its endpoint, then starts the workers and waits until each
    /// says it is ready. `say` reports progress.
    /// - Returns: the coordinator's endpoint.
    /// - Throws: ``SpawnError`` when a process cannot start or is not ready in time.
    func start(say: (String) -> Void) async throws -> String {
        try FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
        let coordinator = try spawn(
            "coordinator",
            [
                "coordinator", "--endpoint", "tcp://127.0.0.1:*", "--state-dir", stateDirectory, "--log-level", "info",
                "--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
            ], log: "coordinator.log")
        // `listening on ENDPOINT` and `dashboard on URL`, in either order: one pass reads both
        // (and `metrics on URL`, printed before them both).
        let prefix = "cohort coordinator listening on "
        let dashboardPrefix = "cohort coordinator dashboard on "
        let metricsPrefix = "cohort coordinator metrics on "
        let seen = LinesSeen()
        let (endpoint, url) = try await coordinator.firstLine(within: .seconds(20)) { line -> (String, String)? in
            seen.lines.withLock { lines in
                if line.hasPrefix(prefix) {
                    lines.endpoint = String(line.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
                } else if line.hasPrefix(dashboardPrefix) {
                    lines.dashboard = String(line.dropFirst(dashboardPrefix.count)).trimmingCharacters(in: .whitespaces)
                } else if line.hasPrefix(metricsPrefix) {
                    lines.metrics = String(line.dropFirst(metricsPrefix.count)).trimmingCharacters(in: .whitespaces)
                }
                guard let endpoint = lines.endpoint, let dashboard = lines.dashboard else { return nil }
                return (endpoint, dashboard)
            }
        }
        let metrics = seen.lines.withLock { $0.metrics }
        addresses.withLock { $0 = (endpoint, url, metrics) }
        say("started coordinator (pid \(coordinator.pid)) listening on \(endpoint), dashboard on \(url)")

        var workers: [(ChildProcess, String, String)] = []
        for (name, label) in Self.workers {
            let worker = try spawn(
                "worker \(name)",
                [
                    "worker", "--coordinator", endpoint, "--name", name, "--labels", label, "--slots", "2",
                    "--kill-grace", "2s", "--drain-timeout", "0s", "--log-level", "info",
                ],
                log: "\(name).log")
            workers.append((worker, name, label))
        }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for (worker, name, _) in workers {
                tasks.addTask {
                    _ = try await worker.firstLine(within: .seconds(20)) { line in
                        line.hasPrefix("cohort worker \(name) ready") ? true : nil
                    }
                }
            }
            try await tasks.waitForAll()
        }
        for (worker, name, label) in workers {
            say("started worker \(name) (pid \(worker.pid)) with label \(label), 2 slots")
        }
        return endpoint
    }

    private func spawn(_ name: String, _ arguments: [String], log: String) throws -> ChildProcess {
        let process = try ChildProcess.spawn(
            name: name, executable: executable, arguments: arguments, logFile: "\(logDirectory)/\(log)")
        started.withLock { $0.append(process) }
        return process
    }

    /// Stops every process started: workers first (so they finish talking to the coordinator),
    /// then the coordinator. SIGTERM, then SIGKILL after `grace`. The workers run with
    /// `--drain-timeout 0s`: SIGTERM cancels their running children at once (SIGTERM, SIGKILL
    /// after the 2 s kill grace) and they exit, rather than drain for a minute, be killed and
    /// leave those children running.
    func stop(grace: Duration = .seconds(5), say: (String) -> Void) async {
        let processes = started.withLock { $0 }
        guard let coordinator = processes.first else { return }
        let workers = processes.dropFirst()
        await withTaskGroup(of: Void.self) { tasks in
            for worker in workers {
                tasks.addTask { await worker.stop(grace: grace) }
            }
        }
        await coordinator.stop(grace: grace)
        try? FileManager.default.removeItem(atPath: stateDirectory)
        let statuses = processes.map { "\($0.name) (pid \($0.pid)) exit \($0.reap().map(String.init) ?? "?")" }
        say("stopped " + statuses.joined(separator: ", "))
    }

    /// The last `count` lines of each process's log, headed by the log's name (for a failed
    /// demo, whose logs are removed when it ends).
    func logTails(_ count: Int = 15) -> String {
        let logs = ((try? FileManager.default.contentsOfDirectory(atPath: logDirectory)) ?? [])
            .filter { $0.hasSuffix(".log") }.sorted()
        return logs.map { log in
            let text = (try? String(contentsOfFile: "\(logDirectory)/\(log)", encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast(
                text.hasSuffix("\n") ? 1 : 0)
            return "--- \(log), last \(min(count, lines.count)) of \(lines.count) lines\n"
                + lines.suffix(count).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Removes the log directory (with the state directory in it). Call once the processes
    /// are stopped.
    func removeLogs() {
        try? FileManager.default.removeItem(atPath: logDirectory)
    }

    /// This executable's path, to start the coordinator and workers with.
    static var ownExecutable: String {
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        if let path = Bundle.main.executablePath { return path }
        return CommandLine.arguments[0]
    }
}

/// What the coordinator's first lines said, read in one pass.
private final class LinesSeen: Sendable {
    let lines = Mutex<(endpoint: String?, dashboard: String?, metrics: String?)>((nil, nil, nil))
}
