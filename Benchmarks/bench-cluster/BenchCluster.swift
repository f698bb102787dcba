import CohortClient
import Foundation

/// A coordinator and workers as `cohort` processes on 127.0.0.1, for one measurement.
final class BenchCluster {
    /// The coordinator's endpoint; with `standby`, the leader's and the standby's, comma-separated.
    let endpoint: String
    private var pids: [pid_t] = []
    /// The coordinator's own journal directory (nil without a journal), removed by ``stop()``.
    private var stateDir: String?
    /// The coordinators' captured output, removed by ``stop()``.
    private var coordinatorOutputs: [String] = []
    /// The dashboard's URL (`http://127.0.0.1:PORT/`) when started with `dashboard`.
    private(set) var dashboardURL: String?

    /// The journal's state directory (nil without a journal or in PostgreSQL).
    var stateDirectory: String? { stateDir }

    /// Starts the coordinator (with a journal in a temporary state directory of its own, or
    /// none) and `workers` workers of `slots` slots, and waits until every worker is connected.
    /// `keys` makes it a CURVE cluster. With `metrics`, every process serves Prometheus metrics
    /// on a free port (and records them); without, none does (`--metrics off`).
    /// `journalURL` keeps the journal in that PostgreSQL database instead (`--journal URL`).
    /// `standby` (with `journalURL`) starts two `--standby` coordinators on it, as in the HA
    /// set-up: the first leads (renewing its lease while it serves), the second stands by, and
    /// the workers and ``endpoint`` list both.
    init(
        cohort: String, workers: Int, slots: Int, journal: Bool = true, keys: BenchKeys? = nil, metrics: Bool = false,
        journalURL: String? = nil, standby: Bool = false, dashboard: Bool = false
    ) async throws {
        let metricsArguments = ["--metrics", metrics ? "127.0.0.1:0" : "off"]
        // The dashboard on a free port when asked for, else none (its default port is fixed).
        // A standby logs `leading:` at notice: the line that says the first coordinator leads.
        var arguments =
            ["coordinator", "--endpoint", "tcp://127.0.0.1:*", "--log-level", standby ? "notice" : "error"]
            + (keys?.coordinator ?? []) + metricsArguments + ["--http", dashboard ? "127.0.0.1:0" : "off"]
        if let journalURL {
            arguments += ["--journal", journalURL] + (standby ? ["--standby"] : [])
        } else if journal {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "bench-cluster-\(UUID().uuidString)"
            ).path
            stateDir = directory
            arguments += ["--state-dir", directory]
        } else {
            arguments += ["--no-journal"]
        }
        let deadline = ContinuousClock.now + .seconds(20)
        var endpoints: [String] = []
        for _ in 0..<(standby ? 2 : 1) {
            let (coordinator, output) = try Self.spawn(cohort, capturingErrors: standby, arguments)
            pids.append(coordinator)
            coordinatorOutputs.append(output)
            let prefix = "cohort coordinator listening on "
            // The first of two standbys must lead before the second starts, so that it is the leader.
            let leading = standby && endpoints.isEmpty
            var found: String?
            while ContinuousClock.now < deadline {
                let lines = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n")
                found = lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
                if found != nil, !leading || lines.contains(where: { $0.contains("leading:") }) { break }
                found = nil
                try await Task.sleep(for: .milliseconds(10))
            }
            guard let found else {
                Self.stop(pids)
                pids = []
                throw BenchError(leading ? "the coordinator did not lead" : "the coordinator did not start")
            }
            endpoints.append(found)
            if dashboard, dashboardURL == nil {
                dashboardURL = try await Self.waitForLine(
                    "cohort coordinator dashboard on ", in: output, until: deadline)
            }
        }
        endpoint = endpoints.joined(separator: ",")
        for index in 1...workers {
            let (worker, _) = try Self.spawn(
                cohort, capturingOutput: false,
                [
                    "worker", "--coordinator", endpoint, "--name", "bench-\(index)", "--slots", "\(slots)",
                    "--log-level", "error",
                ]
                    + (keys?.worker ?? []) + metricsArguments)
            pids.append(worker)
        }
        let endpoint = endpoint
        try await CohortClient.withClient(keys?.client(endpoint) ?? ClientConfiguration(coordinator: endpoint)) {
            client in
            while try await client.workers().filter({ $0.state == .ready }).count < workers {
                guard ContinuousClock.now < deadline + .seconds(20) else {
                    throw BenchError("the workers did not connect")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// The coordinator's process id.
    var coordinatorPID: pid_t { pids.first ?? 0 }

    /// Stops every process (SIGTERM, SIGKILL after 5 s).
    func stop() {
        Self.stop(pids.reversed())
        pids = []
        for path in [stateDir].compactMap({ $0 }) + coordinatorOutputs {
            try? FileManager.default.removeItem(atPath: path)
        }
        stateDir = nil
        coordinatorOutputs = []
    }

    /// Stops every process and leaves the journal's state directory for the caller (who
    /// removes it).
    func stopKeepingState() {
        stateDir = nil
        stop()
    }

    deinit { stop() }

    /// The rest of the first line of `file` that starts with `prefix`, waited for until `deadline`.
    static func waitForLine(_ prefix: String, in file: String, until deadline: ContinuousClock.Instant) async throws
        -> String
    {
        while ContinuousClock.now < deadline {
            let lines = ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n")
            if let line = lines.first(where: { $0.hasPrefix(prefix) }) { return String(line.dropFirst(prefix.count)) }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw BenchError("no line \"\(prefix)…\" in the output in time")
    }

    static func stop(_ pids: [pid_t]) {
        for pid in pids { kill(pid, SIGTERM) }
        let deadline = ContinuousClock.now + .seconds(5)
        var remaining = Set(pids)
        while !remaining.isEmpty, ContinuousClock.now < deadline {
            for pid in remaining where waitpid(pid, nil, WNOHANG) != 0 { remaining.remove(pid) }
            usleep(5_000)
        }
        for pid in remaining {
            kill(pid, SIGKILL)
            waitpid(pid, nil, 0)
        }
    }

    /// Starts a process with stdout in a temporary file (the caller removes it), or in
    /// /dev/null when not `capturingOutput`; returns its pid and where stdout went. Stderr goes
    /// to the same file with `capturingErrors`, else to /dev/null.
    static func spawn(
        _ executable: String, capturingOutput: Bool = true, capturingErrors: Bool = false, _ arguments: [String]
    ) throws -> (pid_t, String) {
        let output =
            capturingOutput
            ? FileManager.default.temporaryDirectory.appendingPathComponent("bench-cluster-\(UUID().uuidString).out")
                .path
            : "/dev/null"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if capturingOutput, capturingErrors {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchError("cannot start \(executable): \(String(cString: strerror(rc)))") }
        return (pid, output)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
