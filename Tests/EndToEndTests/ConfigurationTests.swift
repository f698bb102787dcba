import Foundation
import Testing

extension EndToEnd {
    @Suite struct Configuration {
        /// The shipped config files load as they are (every key documented there is known).
        @Test func shippedConfigFilesLoad() throws {
            let root = Binaries.repositoryRoot
            let stateDir = Scratch.file("state")
            let coordinator = try Subprocess(
                Binaries.cohort,
                [
                    "coordinator", "--config", "\(root)/config/coordinator.yaml", "--endpoint", "tcp://127.0.0.1:*",
                    "--state-dir", stateDir,
                ],
                name: "coordinator")
            defer {
                coordinator.stop()
                try? FileManager.default.removeItem(atPath: stateDir)
            }
            let endpoint = try coordinator.waitForLine(timeout: .seconds(20)) { line in
                line.hasPrefix("cohort coordinator listening on ") ? String(line.dropFirst(32)) : nil
            }
            let worker = try Subprocess(
                Binaries.cohort,
                [
                    "worker", "--config", "\(root)/config/worker.yaml", "--coordinator", endpoint, "--name",
                    "configured",
                ],
                name: "worker")
            defer { worker.stop() }
            _ = try worker.waitForLine(timeout: .seconds(20)) {
                $0.hasPrefix("cohort worker configured ready") ? true : nil
            }
        }

        /// A key the file does not know is an error naming it (with a suggestion), before anything starts.
        @Test(arguments: [
            ("coordinator", "endpont: tcp://127.0.0.1:7400\n", "\"endpont\""),
            ("coordinator", "specLimits:\n  maxNode: 5\n", "\"specLimits.maxNode\""),
            ("worker", "slot: 4\n", "\"slot\""),
        ])
        func unknownKeyIsAnErrorNamingIt(command: String, yaml: String, named: String) throws {
            let file = try Scratch.write(yaml, name: "\(command).yaml")
            let result = try cohort([command, "--config", file], timeout: .seconds(20))
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("unknown key \(named)"), "\(result.stderr)")
            #expect(result.stderr.contains(file))
        }

        /// Defaults < file < environment < flags: the worker's slots and labels as the
        /// coordinator sees them.
        @Test func flagsOverrideEnvironmentOverridesFile() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let file = try Scratch.write("slots: 2\nlabels: [from-file]\nname: from-file\n", name: "worker.yaml")
            let worker = try Subprocess(
                Binaries.cohort,
                ["worker", "--config", file, "--coordinator", cluster.endpoint, "--labels", "from-flag"],
                name: "worker", environment: ["COHORT_WORKER_SLOTS": "3", "COHORT_WORKER_NAME": "from-env"])
            defer { worker.stop() }
            _ = try worker.waitForLine(timeout: .seconds(20)) {
                $0.hasPrefix("cohort worker from-env ready") ? true : nil
            }
            let workers = try JSON.array(try cluster.cli(["workers", "--json"]).stdout)
            let seen = try #require(workers.first)
            #expect(seen["name"] as? String == "from-env")
            #expect(seen["slots"] as? Int == 3)
            #expect(seen["labels"] as? [String] == ["from-flag"])
        }
    }
}
