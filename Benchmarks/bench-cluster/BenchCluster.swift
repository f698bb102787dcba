import CohortClient
import Foundation

/// A coordinator and workers as `cohort` processes on 127.0.0.1, for one measurement.
final class BenchCluster {
    let endpoint: String
    private var pids: [pid_t] = []
    /// The coordinator's own journal directory (nil without a journal), removed by ``stop()``.
    private var stateDir: String?
    /// The coordinator's captured stdout, removed by ``stop()``.
    private var coordinatorOutput: String?

    /// Starts the coordinator (with a journal in a temporary state directory of its own, or
    /// none) and `workers` workers of `slots` slots, and waits until every worker is connected.
    /// `keys` makes it a CURVE cluster. With `metrics`, every process serves Prometheus metrics
    /// on a free port (and records them); without, none does (`--metrics off`).
    /// `journalURL` keeps the journal in that PostgreSQL database instead (`--journal URL`).
    init(
        cohort: String, workers: Int, slots: Int, journal: Bool = true, keys: BenchKeys? = nil, metrics: Bool = false,
        journalURL: String? = nil
    ) async throws {
        let metricsArguments = ["--metrics", metrics ? "127.0.0.1:0" : "off"]
        var arguments =
            ["coordinator", "--endpoint", "tcp://127.0.0.1:*", "--log-level", "error"] + (keys?.coordinator ?? [])
            + metricsArguments
        if let journalURL {
            arguments += ["--journal", journalURL]
        } else if journal {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "bench-cluster-\(UUID().uuidString)"
            ).path
            stateDir = directory
            arguments += ["--state-dir", directory]
        } else {
            arguments += ["--no-journal"]
        }
        let (coordinator, output) = try Self.spawn(cohort, arguments)
        pids.append(coordinator)
        coordinatorOutput = output
        let prefix = "cohort coordinator listening on "
        var found: String?
        let deadline = ContinuousClock.now + .seconds(20)
        while found == nil, ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            found = text.split(separator: "\n").first { $0.hasPrefix(prefix) }.map {
                String($0.dropFirst(prefix.count))
            }
            if found == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        guard let found else {
            Self.stop([coordinator])
            throw BenchError("the coordinator did not start")
        }
        endpoint = found
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
        let endpoint = found
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
        for path in [stateDir, coordinatorOutput].compactMap({ $0 }) {
            try? FileManager.default.removeItem(atPath: path)
        }
        stateDir = nil
        coordinatorOutput = nil
    }

    deinit { stop() }

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
    /// /dev/null when not `capturingOutput`; returns its pid and where stdout went.
    static func spawn(_ executable: String, capturingOutput: Bool = true, _ arguments: [String]) throws -> (
        pid_t, String
    ) {
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
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
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
