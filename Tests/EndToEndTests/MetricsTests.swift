import CohortTestSupport
import Foundation
import Testing

extension EndToEnd {
    /// `--metrics` on real `cohort coordinator` and `cohort worker` processes: `GET /metrics`
    /// over HTTP follows what the cluster does (docs/operations.md, "Metrics").
    @Suite struct Metrics {
        static let mixed = """
            name: mixed
            children:
              - { name: ok, run: shell, with: { command: ["true"] } }
              - { name: bad, run: shell, with: { command: ["false"] } }
            """

        /// The port of a `cohort ROLE metrics on http://127.0.0.1:PORT/metrics` line.
        static func metricsPort(_ process: Subprocess, role: String) throws -> Int {
            let prefix = "cohort \(role) metrics on http://127.0.0.1:"
            return try process.waitForLine(timeout: .seconds(20)) { line in
                guard line.hasPrefix(prefix), line.hasSuffix("/metrics") else { return nil }
                return Int(line.dropFirst(prefix.count).dropLast("/metrics".count))
            }
        }

        /// The value of one series in `text` (`name{labels} value`).
        static func value(_ text: String, _ series: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap {
                Double($0.dropFirst(series.count + 1))
            }
        }

        /// Waits until the metrics at `port` satisfy `condition`; returns the last text.
        static func waitForMetrics(port: Int, _ condition: (String) -> Bool) throws -> String {
            var last = ""
            _ = try eventuallyBlocking(.seconds(20)) {
                last = try httpGet(port: port, path: "/metrics").body
                return condition(last)
            }
            return last
        }

        @Test func aGroupIsCountedOnTheCoordinatorAndItsWorker() throws {
            let cluster = try Cluster(coordinatorArguments: ["--metrics", "127.0.0.1:0"])
            defer { cluster.stop() }
            let coordinatorPort = try Self.metricsPort(cluster.coordinator, role: "coordinator")
            let worker = try cluster.addWorker(name: "w1", slots: 4, extra: ["--metrics", "127.0.0.1:0"])
            let workerPort = try Self.metricsPort(worker, role: "worker")

            let (status, _) = try cluster.submitAndWait(Self.mixed)
            #expect(status == 1, "a group with a failed child exits 1")

            let coordinator = try Self.waitForMetrics(port: coordinatorPort) { text in
                Self.value(text, #"cohort_children_finished_total{kind="shell",outcome="failed"}"#) == 1
                    && Self.value(text, #"cohort_children_finished_total{kind="shell",outcome="succeeded"}"#) == 1
                    && Self.value(text, #"cohort_workers{state="ready"}"#) == 1
            }
            #expect(Self.value(coordinator, #"cohort_children_finished_total{kind="shell",outcome="failed"}"#) == 1)
            #expect(Self.value(coordinator, #"cohort_groups_finished_total{outcome="failed"}"#) == 1)
            #expect(Self.value(coordinator, "cohort_attempt_run_seconds_count") == 2)
            #expect(Self.value(coordinator, "cohort_slots") == 4)
            #expect((Self.value(coordinator, "cohort_journal_commit_seconds_count") ?? 0) >= 1)

            let metrics = try Self.waitForMetrics(port: workerPort) { text in
                (Self.value(text, "cohort_worker_processes_started_total") ?? 0) >= 2
                    && Self.value(text, #"cohort_worker_attempts_finished_total{outcome="failed"}"#) == 1
            }
            #expect((Self.value(metrics, "cohort_worker_processes_started_total") ?? 0) >= 2)
            #expect(Self.value(metrics, #"cohort_worker_attempts_finished_total{outcome="succeeded"}"#) == 1)
            #expect(Self.value(metrics, #"cohort_worker_attempts_finished_total{outcome="failed"}"#) == 1)
            #expect(Self.value(metrics, "cohort_worker_slots") == 4)
            #expect(Self.value(metrics, "cohort_worker_connected") == 1)
        }

        /// `--metrics off` beats the environment's address: nothing listens there and no
        /// metrics line is printed.
        @Test func offServesNothing() throws {
            let port = try freeTCPPort()
            let cluster = try Cluster(coordinatorArguments: ["--metrics", "off"])
            defer { cluster.stop() }
            let worker = try cluster.addWorker(name: "w1", extra: ["--metrics", "off"])
            #expect(!cluster.coordinator.stdout.contains("metrics on"))
            #expect(!worker.stdout.contains("metrics on"))

            let environment = ["COHORT_COORDINATOR_METRICS": "127.0.0.1:\(port)"]
            let off = try Subprocess(
                Binaries.cohort,
                ["coordinator", "--endpoint", "tcp://127.0.0.1:*", "--no-journal", "--metrics", "off"],
                name: "coordinator", environment: environment)
            defer { off.stop() }
            _ = try off.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("cohort coordinator listening on ") }
            #expect(throws: HTTPGetError.self) { try httpGet(port: port, path: "/metrics") }
            #expect(!off.stdout.contains("metrics on"))
        }

        @Test(arguments: [
            ["coordinator", "--metrics", "9470"], ["coordinator", "--metrics", "127.0.0.1:http"],
            ["worker", "--metrics", "localhost"], ["worker", "--metrics", "127.0.0.1:99999"],
        ])
        func aBadAddressIsAClearError(arguments: [String]) throws {
            let result = try cohort(arguments + (arguments[0] == "coordinator" ? ["--no-journal"] : []))
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("invalid metrics address \"\(arguments[2])\""), "\(result)")
            #expect(result.stderr.contains("HOST:PORT"), "\(result)")
        }

        @Test func aBadAddressInTheEnvironmentIsAClearError() throws {
            let result = try cohort(
                ["coordinator", "--no-journal"], environment: ["COHORT_COORDINATOR_METRICS": "nowhere"])
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("invalid metrics address \"nowhere\""), "\(result)")
        }

        /// With nothing configured and the default port taken (here by the test itself), the
        /// coordinator serves its metrics on a free port instead and says so.
        @Test func aTakenDefaultPortFallsBackToAFreeOne() throws {
            guard let listener = try? listeningSocket(port: 9470) else {
                // Another process holds 9470 now: the fallback is taken either way, but this
                // test only asserts while it holds the port itself.
                return
            }
            defer { close(listener) }
            let coordinator = try Subprocess(
                Binaries.cohort, ["coordinator", "--endpoint", "tcp://127.0.0.1:*", "--no-journal"],
                name: "coordinator")
            defer { coordinator.stop() }
            let port = try Self.metricsPort(coordinator, role: "coordinator")
            #expect(port != 9470)
            #expect(coordinator.stderr.contains("metrics port 9470 is in use; serving metrics on a free port instead"))
            #expect(try httpGet(port: port, path: "/metrics").body.contains("cohort_slots"))
        }

        /// A port that was asked for and is taken stops the process with an error naming it.
        @Test func aBusyPortIsAnErrorNamingIt() throws {
            let first = try Cluster(coordinatorArguments: ["--metrics", "127.0.0.1:0"])
            defer { first.stop() }
            let port = try Self.metricsPort(first.coordinator, role: "coordinator")
            let result = try cohort([
                "coordinator", "--endpoint", "tcp://127.0.0.1:*", "--no-journal", "--metrics", "127.0.0.1:\(port)",
            ])
            #expect(result.status == 69, "\(result)")
            #expect(
                result.stderr.contains("cannot serve metrics on 127.0.0.1:\(port): port \(port) is in use"), "\(result)"
            )
            #expect(!result.stdout.contains("listening on"), "\(result)")
        }
    }
}

/// A socket listening on 127.0.0.1:`port` (the caller closes it); throws if the port is taken.
func listeningSocket(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    guard bound, listen(fd, 1) == 0 else {
        close(fd)
        throw TestFailure("port \(port) is taken")
    }
    return fd
}
