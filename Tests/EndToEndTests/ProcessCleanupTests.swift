import Foundation
import Testing

/// The harness itself: `Cluster.stop()` leaves no process behind that a test started,
/// directly or through a worker, although each shell child runs in a process group of its own.
extension EndToEnd {
    @Suite struct ProcessCleanup {
        /// A shell child that writes its pid, and the pid of a `sleep 300` it starts in a new
        /// session (out of reach of the worker's process-group kill), to `pidFile`, then waits.
        /// Both on one line, in one write: two children writing at once never interleave them
        /// (two writes each did, under load, and a child's pid was paired with another's sleep).
        static func escaper(_ name: String, pidFile: String) -> String {
            """
              - name: \(name)
                run: shell
                with: { command: ["sh", "-c", "setsid sleep 300 & echo \\"$$ $!\\" >> \(pidFile); wait"] }

            """
        }

        /// Runs `escapers` children on one worker and waits until each wrote its two pids.
        static func start(escapers: Int) throws -> (Cluster, Subprocess, [pid_t]) {
            let cluster = try Cluster()
            do {
                let worker = try cluster.addWorker(name: "w1", slots: escapers)
                let pidFile = Scratch.file("pids")
                _ = try cluster.submit(
                    "name: escapers\nchildren:\n" + (1...escapers).map { escaper("e\($0)", pidFile: pidFile) }.joined(),
                    name: "escapers.yaml")
                try Failures.waitUntil("every child to write its pids") {
                    Cancellation.pids(in: pidFile).count == 2 * escapers
                }
                return (cluster, worker, Cancellation.pids(in: pidFile))
            } catch {
                cluster.stop()
                throw error
            }
        }

        /// A busy worker's shell children and the processes they started in sessions of their
        /// own carry the worker's tag, and are gone once the cluster is stopped, quickly (the
        /// worker does not wait out a drain).
        @Test func stopKillsEveryProcessAWorkerStartedInAnyProcessGroup() throws {
            let (cluster, worker, pids) = try Self.start(escapers: 3)
            defer { cluster.stop() }
            // A process caught in its exec shows an empty environment for an instant: look
            // again until every one shows its tag (or the deadline says it never will).
            var tagged = Set<pid_t>()
            try Failures.waitUntil("the tag to reach the shell children and theirs") {
                tagged = Set(Leftovers.pids(tags: [worker.tag]))
                return Set(pids).isSubset(of: tagged)
            }
            #expect(
                Set(pids).isSubset(of: tagged), "the tag reaches the shell children and theirs: \(pids) in \(tagged)")
            let stopping = ContinuousClock.now
            cluster.stop()
            #expect(ContinuousClock.now - stopping < .seconds(2 + 3), "kill grace and margin, not a 60 s drain")
            for pid in pids { #expect(Cancellation.isGone(pid), "process \(pid) is gone") }
            #expect(Leftovers.pids(tags: cluster.tags).isEmpty)
        }

        /// A worker killed with SIGKILL takes its shell children with it (they die with their
        /// parent, PR_SET_PDEATHSIG); a process one of them started in a session of its own
        /// (`setsid`) escapes that, and the cluster's stop kills it by pid.
        @Test func aWorkerKilledWithSigkillTakesItsChildrenTheCluster_sStopTheEscapees() throws {
            let (cluster, worker, pids) = try Self.start(escapers: 2)
            defer { cluster.stop() }
            // Each escaper wrote its own pid, then its setsid sleep's.
            let children = stride(from: 0, to: pids.count, by: 2).map { pids[$0] }
            let escapees = stride(from: 1, to: pids.count, by: 2).map { pids[$0] }
            kill(worker.pid, SIGKILL)
            _ = try worker.wait(timeout: .seconds(10))
            try Failures.waitUntil("the worker's children to die with it", timeout: .seconds(10)) {
                children.allSatisfy { Cancellation.isGone($0) }
            }
            #expect(escapees.allSatisfy { !Cancellation.isGone($0) }, "a setsid escapee outlives the worker")
            cluster.stop()
            for pid in escapees { #expect(Cancellation.isGone(pid), "escapee \(pid) is gone") }
            #expect(Leftovers.pids(tags: cluster.tags).isEmpty)
        }

        /// The case: children inside an exclusive category, on a worker killed with
        /// SIGKILL, do not go on running as orphans inside the category while the coordinator
        /// grants it to their next attempt elsewhere.
        @Test func exclusiveChildrenDieWithTheirWorker() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let worker = try cluster.addWorker(name: "w1", slots: 2)
            let pidFile = Scratch.file("fenced-pids")
            let children = (1...2).map { index in
                Cancellation.sleeper("f\(index)", pidFile: pidFile, extra: "\n    exclusive: [fence\(index)]")
            }
            _ = try cluster.submit("name: fenced\nchildren:\n" + children.joined(), name: "fenced.yaml")
            try Failures.waitUntil("both children to start") { Cancellation.pids(in: pidFile).count == 2 }
            let pids = Cancellation.pids(in: pidFile)
            kill(worker.pid, SIGKILL)
            _ = try worker.wait(timeout: .seconds(10))
            try Failures.waitUntil("the children to die with their worker", timeout: .seconds(10)) {
                pids.allSatisfy { Cancellation.isGone($0) }
            }
        }
    }
}
