import Foundation
import Testing

extension EndToEnd {
    /// CURVE clusters (docs/security.md): keys made by `cohort keygen`, a coordinator that
    /// admits only its authorised keys, roles enforced per request.
    @Suite struct Security {
        static let echo = "name: hello\nchildren:\n  - name: a\n    run: echo\n    with: { value: 42 }\n"
        static let sleeper = "name: sleeper\nchildren:\n  - name: nap\n    run: sleep\n    with: { seconds: 60 }\n"

        /// A coordinator with CURVE, worker `w1` with its key, and `keys` for everyone.
        static func cluster(_ keys: Keys) throws -> Cluster {
            let cluster = try Cluster(coordinatorArguments: keys.coordinator)
            do {
                try cluster.addWorker(name: "w1", slots: 4, extra: keys.peer("w1"))
            } catch {
                cluster.stop()
                throw error
            }
            return cluster
        }

        static func write(_ spec: String) throws -> String { try Scratch.write(spec, name: "spec.yaml") }

        /// Coordinator, worker and client all on CURVE run a group to the end; the worker's and
        /// the client's keys both got through, and the result is readable.
        @Test func aCurveClusterRunsAGroupEndToEnd() throws {
            let keys = try Keys([("w1", "worker"), ("alice", "client")])
            let cluster = try Self.cluster(keys)
            defer { cluster.stop() }
            let run = try cluster.cli(["submit", try Self.write(Self.echo), "--wait", "--json"] + keys.peer("alice"))
            #expect(run.status == 0, "\(run)")
            let status = try JSON.object(run.stdout)
            #expect(status.state == "succeeded")
            #expect(status.child("a")?["worker"] as? String == "w1")
            let group = try #require(status["id"] as? String)
            let result = try cluster.cli(["result", group, "a", "--json"] + keys.peer("alice"))
            #expect(result.status == 0, "\(result)")
            #expect(try JSON.object(result.stdout)["value"] as? Int == 42)
        }

        /// A key the coordinator does not list is refused (exit 77, says so): its handshake
        /// succeeds (such keys are admitted for attempt tokens, docs/security.md), but it may do
        /// nothing without a token; a plaintext client cannot talk to a CURVE coordinator and is
        /// told CURVE is required.
        @Test func anUnknownKeyAndAPlaintextPeerAreRefused() throws {
            let keys = try Keys([("w1", "worker")], unauthorized: [("mallory", "client"), ("rogue", "worker")])
            let cluster = try Self.cluster(keys)
            defer { cluster.stop() }
            let spec = try Self.write(Self.echo)

            let stranger = try cluster.cli(["submit", spec, "--wait"] + keys.peer("mallory"))
            #expect(stranger.status == 77, "\(stranger)")
            #expect(stranger.stderr.contains("permission denied"), "\(stranger)")
            #expect(stranger.stderr.contains("not among"), "\(stranger)")

            let plaintext = try cluster.cli(["status", "--connect-timeout", "5"])
            #expect([69, 77].contains(plaintext.status), "\(plaintext)")
            #expect(plaintext.stderr.contains("requires CURVE"), "\(plaintext)")
            #expect(plaintext.stderr.contains("--server-key") && plaintext.stderr.contains("--key"), "\(plaintext)")
            #expect(!plaintext.stderr.contains("protocol error 2"), "no bare libzmq code: \(plaintext)")

            // The wrong coordinator key: the handshake fails at once, and says what to check.
            let wrongServer = try cluster.cli(
                ["status", "--key", "\(keys.directory)/w1.key", "--server-key", "\(keys.directory)/mallory.pub"])
            #expect(wrongServer.status == 69, "\(wrongServer)")
            #expect(wrongServer.stderr.contains("public key is wrong"), "\(wrongServer)")

            // An unknown worker key stops the worker with 77 instead of retrying for ever.
            let rogue = try Subprocess(
                Binaries.cohort, ["worker", "--coordinator", cluster.endpoint, "--name", "rogue"] + keys.peer("rogue"),
                name: "worker rogue")
            defer { rogue.stop() }
            #expect(try rogue.wait(timeout: .seconds(20)) == 77, "\(rogue.stderr)")
            #expect(rogue.stderr.contains("not among"), "\(rogue.stderr)")

        }

        /// Roles: a worker key may not submit; a client key may not register as a worker; both
        /// refusals exit 77 and name the missing permission.
        @Test func rolesLimitWhatAKeyMayDo() throws {
            let keys = try Keys([("w1", "worker"), ("alice", "client")])
            let cluster = try Self.cluster(keys)
            defer { cluster.stop() }

            let submit = try cluster.cli(["submit", try Self.write(Self.echo)] + keys.peer("w1"))
            #expect(submit.status == 77, "\(submit)")
            #expect(submit.stderr.contains("permission \"submit\""), "\(submit)")
            let read = try cluster.cli(["status"] + keys.peer("w1"))
            #expect(read.status == 77, "\(read)")
            #expect(read.stderr.contains("permission \"read\""), "\(read)")

            let impostor = try Subprocess(
                Binaries.cohort,
                ["worker", "--coordinator", cluster.endpoint, "--name", "impostor"] + keys.peer("alice"),
                name: "worker impostor")
            defer { impostor.stop() }
            #expect(try impostor.wait(timeout: .seconds(20)) == 77, "\(impostor.stderr)")
            #expect(impostor.stderr.contains("permission \"register\""), "\(impostor.stderr)")

            let workers = try cluster.cli(["workers", "--json"] + keys.peer("alice"))
            #expect(workers.status == 0, "\(workers)")
            #expect(try JSON.array(workers.stdout).map { $0["name"] as? String } == ["w1"])
        }

        /// A client may cancel its own group but not another client's (77, names cancel-any);
        /// an admin may cancel anyone's.
        @Test func aClientCancelsOnlyItsOwnGroupsAndAnAdminCancelsAny() throws {
            let keys = try Keys([("w1", "worker"), ("alice", "client"), ("bob", "client"), ("root", "admin")])
            let cluster = try Self.cluster(keys)
            defer { cluster.stop() }
            let spec = try Self.write(Self.sleeper)
            func submit(as name: String) throws -> String {
                let result = try cluster.cli(["submit", spec, "--json"] + keys.peer(name))
                guard result.status == 0, let id = try JSON.object(result.stdout)["id"] as? String else {
                    throw TestFailure("submit failed: \(result)")
                }
                return id
            }
            func status(_ group: String) throws -> String? {
                try JSON.object(try cluster.cli(["status", group, "--json"] + keys.peer("alice")).stdout).state
            }
            let first = try submit(as: "alice")
            let second = try submit(as: "alice")

            let foreign = try cluster.cli(["cancel", first] + keys.peer("bob"))
            #expect(foreign.status == 77, "\(foreign)")
            #expect(foreign.stderr.contains("permission \"cancel-any\""), "\(foreign)")
            #expect(try status(first) != "cancelled")

            let own = try cluster.cli(["cancel", first, "--wait"] + keys.peer("alice"))
            #expect(own.status == 0 || own.status == 3, "\(own)")
            let admin = try cluster.cli(["cancel", second, "--wait"] + keys.peer("root"))
            #expect(admin.status == 0 || admin.status == 3, "\(admin)")
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, try status(first) != "cancelled" || status(second) != "cancelled" {
                usleep(20_000)
            }
            #expect(try status(first) == "cancelled")
            #expect(try status(second) == "cancelled")
        }

        /// Draining a worker is an admin's: a client key exits 77 naming `drain`; an admin's
        /// drain marks the worker draining and it gets no new work.
        @Test func onlyAnAdminMayDrainAWorker() throws {
            let keys = try Keys([("w1", "worker"), ("alice", "client"), ("root", "admin")])
            let cluster = try Self.cluster(keys)
            defer { cluster.stop() }
            let refused = try cluster.cli(["drain", "w1"] + keys.peer("alice"))
            #expect(refused.status == 77, "\(refused)")
            #expect(refused.stderr.contains("permission \"drain\""), "\(refused)")
            let unknown = try cluster.cli(["drain", "nobody"] + keys.peer("root"))
            #expect(unknown.status == 64, "\(unknown)")

            let drained = try cluster.cli(["drain", "w1", "--json"] + keys.peer("root"))
            #expect(drained.status == 0, "\(drained)")
            #expect(try JSON.object(drained.stdout)["draining"] as? Bool == true)
            let workers = try JSON.array(try cluster.cli(["workers", "--json"] + keys.peer("alice")).stdout)
            #expect(workers.first?["state"] as? String == "draining")
            let submitted = try cluster.cli(["submit", try Self.write(Self.echo), "--json"] + keys.peer("alice"))
            let group = try #require(try JSON.object(submitted.stdout)["id"] as? String)
            let status = try JSON.object(try cluster.cli(["status", group, "--json"] + keys.peer("alice")).stdout)
            #expect(status.child("a")?["worker"] is NSNull, "a draining worker gets no new work: \(status)")
        }

        /// Removing a key and sending SIGHUP: once the reload is logged, new connections with
        /// that key fail the handshake, and its open sessions end at once: the connected worker
        /// is refused (it stops with 77) and a watching client's watch ends with 77; the other
        /// keys go on working.
        @Test func aKeyRemovedAndSIGHUPSentIsRefusedAfterwards() throws {
            let keys = try Keys([("w1", "worker"), ("alice", "client"), ("bob", "client")])
            let cluster = try Self.cluster(keys)
            defer { cluster.stop() }
            #expect(try cluster.cli(["status"] + keys.peer("alice")).status == 0)
            let watcher = try Subprocess(
                Binaries.cohort,
                ["submit", try Self.write(Self.sleeper), "--watch", "--coordinator", cluster.endpoint]
                    + keys.peer("alice"),
                name: "watcher")
            defer { watcher.stop() }
            // The header follows the watch's snapshot: from then on the coordinator has the watch.
            _ = try watcher.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("watching ") ? true : nil }

            try keys.revoke("alice")
            try keys.revoke("w1")
            kill(cluster.coordinator.pid, SIGHUP)
            try cluster.coordinator.waitForStderr(containing: "authorised keys reloaded")

            let refused = try cluster.cli(["status"] + keys.peer("alice"))
            #expect(refused.status == 77, "\(refused)")
            #expect(refused.stderr.contains("no longer among"), "\(refused)")
            let worker = try #require(cluster.workers.first)
            #expect(try worker.wait(timeout: .seconds(20)) == 77, "\(worker.stderr)")
            #expect(worker.stderr.contains("no longer among"), "\(worker.stderr)")
            #expect(try watcher.wait(timeout: .seconds(20)) == 77, "\(watcher.stdout)\n\(watcher.stderr)")
            #expect(watcher.stderr.contains("no longer among"), "\(watcher.stderr)")
            #expect(try cluster.cli(["status"] + keys.peer("bob")).status == 0)
            #expect(cluster.coordinator.isRunning)
        }

        /// A plaintext coordinator bound beyond loopback warns loudly on stderr at start.
        @Test func aPlaintextCoordinatorOnAllInterfacesWarns() throws {
            let stateDir = Scratch.file("state")
            let coordinator = try Subprocess(
                Binaries.cohort, ["coordinator", "--endpoint", "tcp://0.0.0.0:*", "--state-dir", stateDir],
                name: "coordinator")
            defer {
                coordinator.stop()
                try? FileManager.default.removeItem(atPath: stateDir)
            }
            try coordinator.waitForStderr(containing: "cohort: WARNING")
            #expect(coordinator.stderr.contains("WITHOUT CURVE"))

            let loopback = try Cluster()
            defer { loopback.stop() }
            #expect(!loopback.coordinator.stderr.contains("WITHOUT CURVE"))
        }
    }
}
