import Foundation
import Testing

/// A coordinator on a free port of 127.0.0.1 and its workers, as real `cohort` processes.
///
/// Every test makes its own and stops it in a `defer` (by pid), so nothing outlives a test,
/// even one that fails: ``stop()`` also kills, by pid, whatever a process of the cluster
/// started and left running (a killed worker's shell children), found by the tag each
/// process's environment carries (``Leftovers``), and records an issue if any survives.
final class Cluster: @unchecked Sendable {
    // @unchecked: a cluster belongs to one test; `workers` is appended to before any sharing.
    private(set) var coordinator: Subprocess
    let endpoint: String
    private(set) var workers: [Subprocess] = []
    /// Every coordinator started (a restart adds one), stopped with the cluster.
    private var coordinators: [Subprocess] = []
    /// The coordinator's extra environment (`COHORT_COORDINATOR_HEARTBEAT_INTERVAL`, …).
    let coordinatorEnvironment: [String: String]
    /// The coordinator's extra arguments, given again on a restart.
    let coordinatorArguments: [String]
    /// The coordinator's own state directory (its journal), kept across restarts and removed
    /// by ``stop()``: parallel tests never share one.
    let stateDir = Scratch.file("state")

    /// Starts the coordinator and waits for its `listening on` line.
    /// - Parameters:
    ///   - arguments: added to `cohort coordinator` (e.g. `--config FILE`).
    ///   - heartbeat: the coordinator's heartbeat interval (its WELCOME gives it to the
    ///     workers), e.g. `200ms` to detect losses fast; nil for the default.
    ///   - liveness: silent intervals before a peer is lost; nil for the default (3).
    ///   - endpoint: where it binds; a fixed port lets a test restart it on the same endpoint.
    init(
        coordinatorArguments arguments: [String] = [], heartbeat: String? = nil, liveness: Int? = nil,
        endpoint: String = "tcp://127.0.0.1:*"
    ) throws {
        var environment: [String: String] = [:]
        if let heartbeat { environment["COHORT_COORDINATOR_HEARTBEAT_INTERVAL"] = heartbeat }
        if let liveness { environment["COHORT_COORDINATOR_HEARTBEAT_LIVENESS"] = "\(liveness)" }
        coordinatorEnvironment = environment
        // Metrics and dashboard off unless the test asks for them: parallel tests need no HTTP
        // servers (`--metrics 127.0.0.1:0`, `--http 127.0.0.1:0`).
        let metrics = arguments.contains("--metrics") ? [] : ["--metrics", "off"]
        let http = arguments.contains("--http") ? [] : ["--http", "off"]
        coordinatorArguments = arguments + http + ["--state-dir", stateDir] + metrics
        (coordinator, self.endpoint) = try Self.startCoordinator(
            endpoint: endpoint, arguments: coordinatorArguments, environment: environment)
        coordinators = [coordinator]
    }

    private static func startCoordinator(
        endpoint: String, arguments: [String], environment: [String: String]
    ) throws -> (Subprocess, String) {
        let coordinator = try Subprocess(
            Binaries.cohort, ["coordinator", "--endpoint", endpoint] + arguments, name: "coordinator",
            environment: environment)
        let prefix = "cohort coordinator listening on "
        do {
            let bound = try coordinator.waitForLine(timeout: .seconds(20)) { line in
                line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : nil
            }
            return (coordinator, bound)
        } catch {
            coordinator.stop()
            throw error
        }
    }

    /// Kills the coordinator with SIGKILL (no goodbye, no checkpoint) and waits for it to die.
    func killCoordinator() throws {
        kill(coordinator.pid, SIGKILL)
        _ = try coordinator.wait(timeout: .seconds(10))
    }

    /// Starts a new coordinator on the same endpoint and state directory (the old one must
    /// have exited).
    func restartCoordinator() throws {
        let (restarted, _) = try Self.startCoordinator(
            endpoint: endpoint, arguments: coordinatorArguments, environment: coordinatorEnvironment)
        coordinator = restarted
        coordinators.append(restarted)
    }

    /// Starts a `cohort worker` and waits until it is ready. `--drain-timeout 0s` (unless
    /// `extra` says otherwise): SIGTERM cancels its children at once (SIGTERM, SIGKILL after
    /// the 2 s kill grace) instead of waiting for them, so a busy worker stops quickly.
    @discardableResult
    func addWorker(
        name: String, labels: [String] = [], slots: Int = 4, extra: [String] = [], environment: [String: String] = [:]
    ) throws -> Subprocess {
        var arguments = [
            "worker", "--coordinator", endpoint, "--name", name, "--slots", "\(slots)", "--kill-grace", "2s",
            "--drain-timeout", "0s",
        ]
        if !labels.isEmpty { arguments += ["--labels", labels.joined(separator: ",")] }
        if !extra.contains("--metrics") { arguments += ["--metrics", "off"] }
        return try startWorker(Binaries.cohort, arguments + extra, name: name, environment: environment)
    }

    /// Starts the `custom-worker` example and waits until it is ready.
    @discardableResult
    func addCustomWorker(
        name: String, labels: [String] = [], slots: Int = 2, extra: [String] = [], environment: [String: String] = [:]
    ) throws -> Subprocess {
        var arguments = ["--coordinator", endpoint, "--name", name, "--slots", "\(slots)"]
        if !labels.isEmpty { arguments += ["--labels", labels.joined(separator: ",")] }
        return try startWorker(Binaries.customWorker, arguments + extra, name: name, environment: environment)
    }

    private func startWorker(
        _ executable: String, _ arguments: [String], name: String, environment: [String: String] = [:]
    ) throws -> Subprocess {
        let worker = try Subprocess(executable, arguments, name: "worker \(name)", environment: environment)
        workers.append(worker)
        _ = try worker.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("cohort worker \(name) ready") ? true : nil }
        return worker
    }

    /// Starts `count` workers named `w1`… with `labels(i)`.
    func addWorkers(_ count: Int, slots: Int = 4, labels: (Int) -> [String] = { _ in [] }) throws {
        for index in 1...count {
            try addWorker(name: "w\(index)", labels: labels(index), slots: slots)
        }
    }

    /// Stops the workers, then the coordinator, each by pid (SIGTERM, SIGKILL after a grace),
    /// with whatever they started; records an issue if a process they started survives.
    /// Idempotent.
    func stop() {
        for worker in workers { worker.stop() }
        for coordinator in coordinators { coordinator.stop() }
        try? FileManager.default.removeItem(atPath: stateDir)
        let survivors = Leftovers.pids(tags: tags)
        if !survivors.isEmpty {
            Issue.record("processes started by the cluster survived its stop: \(survivors)")
            Leftovers.sweep(tags: tags)
        }
    }

    /// The `COHORT_E2E_TAG` values of every process this cluster started.
    var tags: Set<String> { Set((coordinators + workers).map(\.tag)) }

    /// Every pid this cluster started.
    var pids: [pid_t] { coordinators.map(\.pid) + workers.map(\.pid) }

    // MARK: - Talking to it through the CLI

    /// Runs `cohort <arguments> --coordinator ENDPOINT`.
    func cli(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> CommandResult {
        try cohort(arguments + ["--coordinator", endpoint], timeout: timeout)
    }

    /// Submits `spec` (YAML text) and returns the group id.
    func submit(_ spec: String, name: String = "spec.yaml") throws -> String {
        let file = try Scratch.write(spec, name: name)
        let result = try cli(["submit", file, "--json"])
        guard result.status == 0, let id = try JSON.object(result.stdout)["id"] as? String else {
            throw TestFailure("submit failed: \(result)")
        }
        return id
    }

    /// Submits `spec` with `--wait --json` and returns the exit status and the final status object.
    func submitAndWait(_ spec: String, name: String = "spec.yaml", timeout: Duration = .seconds(120)) throws -> (
        Int32, [String: Any]
    ) {
        let file = try Scratch.write(spec, name: name)
        let result = try cli(["submit", file, "--wait", "--json"], timeout: timeout)
        guard [0, 1, 3].contains(result.status) else { throw TestFailure("submit --wait failed: \(result)") }
        return (result.status, try JSON.object(result.stdout))
    }

    /// `cohort status GROUP --json`.
    func status(_ group: String) throws -> [String: Any] {
        let result = try cli(["status", group, "--json"])
        guard result.status == 0 else { throw TestFailure("status failed: \(result)") }
        return try JSON.object(result.stdout)
    }

    /// Polls `status GROUP` until `condition` holds, at most `timeout`.
    @discardableResult
    func waitForStatus(_ group: String, timeout: Duration = .seconds(60), _ condition: ([String: Any]) -> Bool) throws
        -> [String: Any]
    {
        let deadline = ContinuousClock.now + timeout
        var last: [String: Any] = [:]
        while ContinuousClock.now < deadline {
            last = try status(group)
            if condition(last) { return last }
            usleep(50_000)
        }
        throw TestFailure("status of \(group) did not reach the expected condition within \(timeout); last: \(last)")
    }
}

/// Reading the CLI's JSON output.
enum JSON {
    static func value(_ text: String) throws -> Any {
        guard let data = text.trimmingCharacters(in: .whitespacesAndNewlines).data(using: .utf8) else {
            throw TestFailure("not UTF-8")
        }
        do {
            return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw TestFailure("not JSON: \(error)\n\(text)")
        }
    }

    static func object(_ text: String) throws -> [String: Any] {
        guard let object = try value(text) as? [String: Any] else { throw TestFailure("not a JSON object:\n\(text)") }
        return object
    }

    static func array(_ text: String) throws -> [[String: Any]] {
        guard let array = try value(text) as? [[String: Any]] else { throw TestFailure("not a JSON array:\n\(text)") }
        return array
    }
}

extension Dictionary where Key == String, Value == Any {
    /// The `children` of a status object.
    var children: [[String: Any]] { self["children"] as? [[String: Any]] ?? [] }

    /// A child of a status object by path.
    func child(_ path: String) -> [String: Any]? { children.first { $0["path"] as? String == path } }

    var state: String? { self["state"] as? String }
}

/// The suite every end-to-end test belongs to: serialized, so timing checks are not disturbed
/// by other clusters starting on the same two cores.
@Suite(.serialized) struct EndToEnd {}
