import CohortCore
import Foundation
import Testing

/// Issue 12, "A chaos test in the project": real `cohort` processes for a bounded time
/// (`COHORT_CHAOS_SECONDS`, default 75; `scripts/chaos --minutes N` runs longer), driven by a
/// seeded generator (`COHORT_CHAOS_SEED` replays a run; the seed is printed first and named in
/// every failure).
///
/// A stream of random groups (``ChaosWorkload``: exclusive categories at group and child
/// level, `after`, `inject`, `retry`, shell children that sleep a little) runs on three
/// workers on loopback and, where network namespaces can be made, a fourth in a namespace of
/// its own (``ChaosNetworkHost``). At random moments a worker is killed with SIGKILL and
/// replaced, a worker is paused with SIGSTOP until the coordinator declares it lost and then
/// resumed, the namespace's link is cut until its worker is lost and then restored, the
/// coordinator is killed with SIGKILL and restarted on the same endpoint and state directory,
/// and groups are cancelled. Every exclusive child writes to a fenced resource with its
/// fencing token. Then, after the faults stop:
/// - every accepted group finishes (within a bounded wait), none is lost;
/// - every child has exactly one outcome, and a child that succeeded completed that attempt;
/// - per category, a holder that kept its lease never entered with a token smaller than one
///   that entered before it (grants in time order, across coordinator restarts);
/// - no two holders of one category that kept their leases overlapped; a holder that lost its
///   lease may overlap the next one, but the fence rejected each of its writes made after the
///   next holder's first write (overlaps after fencing: 0);
/// - no child of a cancelled group started after `cohort cancel` returned;
/// - no process of the test survives it (``Cluster/stop()``).
/// It prints a summary line: groups, acquisitions, faults, overlaps, fence rejections.
extension EndToEnd {
    @Suite struct Chaos {
        static var seconds: Int {
            ProcessInfo.processInfo.environment["COHORT_CHAOS_SECONDS"].flatMap(Int.init) ?? 75
        }

        static var seed: UInt64 {
            if let given = ProcessInfo.processInfo.environment["COHORT_CHAOS_SEED"], let seed = UInt64(given) {
                return seed
            }
            return UInt64.random(in: 0...UInt64.max)
        }

        /// Descendants of an exclusive group ask for other categories too (issue 12 item 2's
        /// deadlock shapes); `COHORT_CHAOS_NESTED_LOCKS=0` leaves them out.
        static var nestedLocks: Bool { ProcessInfo.processInfo.environment["COHORT_CHAOS_NESTED_LOCKS"] != "0" }

        @Test func theClusterKeepsItsPromisesUnderChaos() throws {
            let seed = Self.seed
            ChaosRun.say("chaos: seed \(seed), \(Self.seconds) s (replay: COHORT_CHAOS_SEED=\(seed))")
            let run = try ChaosRun(seed: seed, seconds: Self.seconds, nestedLocks: Self.nestedLocks)
            defer { run.stop() }
            try run.start()
            // A failure of the chaos itself (say, a worker never declared lost) still lets the
            // groups settle and the checks run on what happened.
            do { try run.unleash() } catch { run.fail("the chaos stopped early: \(error)") }
            run.restore()
            do { try run.settle() } catch { run.fail("waiting for the groups failed: \(error)") }
            run.check()
        }
    }
}

/// One chaos run: its cluster, what it did, and the checks.
final class ChaosRun {
    typealias Fault = ChaosRecords.Fault

    let seed: UInt64
    let seconds: Int
    let nestedLocks: Bool
    private var random: SplitMix64
    private let directory = Scratch.file("chaos")
    private var script = ""
    private var host: ChaosNetworkHost?
    private var hostUnavailable: String?
    private var cluster: Cluster?
    /// Workers on loopback, alive, by name.
    private var loopback: [(name: String, process: Subprocess)] = []
    private var nextWorker = 1
    /// A worker stopped with SIGSTOP (resumed in ``stop()`` if the run ends early).
    private var paused: pid_t?

    /// Accepted groups by id, and their order.
    private var plans: [String: ChaosWorkload.PlannedGroup] = [:]
    private var accepted: [String] = []
    /// Submissions whose answer was lost (the group may or may not have been accepted).
    private var unanswered: [String: ChaosWorkload.PlannedGroup] = [:]
    private var faults: [Fault] = []
    private var restarts: [Int64] = []
    /// Cancels that were answered: group, boot ticks and realtime µs when `cohort cancel` returned.
    private var cancels: [(group: String, ticks: Int64, time: Int64)] = []
    private var finals: [String: [String: Any]] = [:]
    private var lost: [String: String] = [:]
    /// Groups still unfinished when the wait ended.
    private var unfinished: [String] = []
    private var failures: [String] = []

    init(seed: UInt64, seconds: Int, nestedLocks: Bool) throws {
        self.seed = seed
        self.seconds = seconds
        self.nestedLocks = nestedLocks
        random = SplitMix64(seed: seed)
    }

    /// Prints a line at once (stdout is a file or a pipe under `swift test`), so a long run
    /// shows its progress.
    static func say(_ line: String) {
        print(line)
        fflush(nil)  // every output stream: stdout itself is a global Swift 6 will not touch
    }

    func fail(_ message: String) {
        failures.append(message)
        Issue.record("chaos seed \(seed): \(message)")
    }

    private var now: Int64 { ChaosClock.microseconds() }

    private func randomPause(_ low: Double, _ high: Double) {
        usleep(UInt32((low + random.unit() * (high - low)) * 1_000_000))
    }

    // MARK: - Setup and teardown

    func start() throws {
        script = try ChaosWorkload.install(in: directory)
        if let reason = NetworkNamespaces.unavailableReason {
            hostUnavailable = reason
        } else {
            do { host = try ChaosNetworkHost() } catch { hostUnavailable = "\(error)" }
        }
        if let hostUnavailable { ChaosRun.say("chaos: no partitions (\(hostUnavailable))") }
        // A short restart grace: attempts whose worker does not report after a restart run again soon.
        let config = try Scratch.write("restartGrace: 3s\n", name: "chaos-coordinator.yaml")
        let cluster = try Cluster(
            coordinatorArguments: ["--config", config], heartbeat: EndToEnd.Failures.heartbeat,
            liveness: EndToEnd.Failures.liveness, endpoint: host?.endpoint ?? "tcp://127.0.0.1:*")
        self.cluster = cluster
        for _ in 1...3 { try addLoopbackWorker() }
        if let host { _ = try host.startWorker(name: "n1", coordinator: cluster.endpoint, slots: 3) }
    }

    private func addLoopbackWorker() throws {
        guard let cluster else { return }
        let name = "w\(nextWorker)"
        nextWorker += 1
        loopback.append((name, try cluster.addWorker(name: name, slots: 3)))
    }

    /// Resumes a paused worker and restores the link, if a failure left them so.
    func restore() {
        if let paused { kill(paused, SIGCONT) }
        paused = nil
        if let host, host.linkDown { try? host.setLink(up: true) }
    }

    /// Resumes a paused worker, restores the link, stops every process (the cluster records
    /// any survivor), deletes the namespace. Idempotent.
    func stop() {
        restore()
        cluster?.stop()
        if let host {
            let survivors = host.tearDown()
            if !survivors.isEmpty { fail("processes started by the namespace's worker survived it: \(survivors)") }
        }
        host = nil
    }

    // MARK: - The chaos

    enum Action: CaseIterable { case killWorker, pauseWorker, partition, restartCoordinator }

    private var counts: [Action: Int] = [:]

    func unleash() throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var bag: [Action] = []
        var submitted = 0
        while ContinuousClock.now < deadline {
            let roll = random.unit()
            if roll < 0.55 {
                submitted += 1
                try submit(number: submitted)
            } else if roll < 0.67 {
                try cancelOne()
            } else {
                // Faults come from a shuffled bag of every kind, so a short run has each.
                if bag.isEmpty {
                    bag = Action.allCases.filter { $0 != .partition || host != nil }
                    bag.shuffle(using: &random)
                }
                let action = bag.removeLast()
                try perform(action)
                counts[action, default: 0] += 1
            }
            randomPause(0.2, 1.2)
        }
        ChaosRun.say("chaos: faults stop after \(seconds) s; \(accepted.count) groups accepted")
    }

    private func submit(number: Int) throws {
        guard let cluster else { return }
        let list = try cluster.cli(["status", "--json"])
        if list.status == 0, let groups = try? JSON.array(list.stdout),
            groups.filter({ !Self.isFinished($0.state) }).count >= 12
        {
            return  // enough in flight
        }
        let name = "g\(number)"
        let plan = ChaosWorkload.group(
            name, directory: directory, script: script, nestedLocks: nestedLocks, random: &random)
        let file = try Scratch.write(plan.spec, name: "\(name).yaml")
        let result = try cluster.cli(["submit", file, "--id", name, "--json"])
        if result.status == 0, let id = try? JSON.object(result.stdout)["id"] as? String {
            plans[id] = plan
            accepted.append(id)
        } else if result.status == 65 {
            fail("the generated spec \(name) was refused: \(result)\n\(plan.spec)")
        } else {
            unanswered[name] = plan
        }
    }

    private func cancelOne() throws {
        guard let cluster, !accepted.isEmpty else { return }
        let list = try cluster.cli(["status", "--json"])
        guard list.status == 0, let groups = try? JSON.array(list.stdout) else { return }
        let running = groups.compactMap { $0["id"] as? String }.filter { id in
            plans[id] != nil && !Self.isFinished(groups.first { $0["id"] as? String == id }?.state)
        }
        guard !running.isEmpty else { return }
        let group = running[Int(random.next() % UInt64(running.count))]
        let result = try cluster.cli(["cancel", group, "--json"])
        let ticks = ChaosClock.bootTicks()
        let time = now
        guard result.status == 0 else {
            fail("cohort cancel \(group) failed: \(result)")
            return
        }
        if (try? JSON.object(result.stdout)["alreadyFinished"]) is String { return }
        cancels.append((group, ticks, time))
    }

    private func perform(_ action: Action) throws {
        guard let cluster else { return }
        switch action {
        case .killWorker:
            let index = Int(random.next() % UInt64(loopback.count))
            let (name, process) = loopback.remove(at: index)
            kill(process.pid, SIGKILL)
            faults.append(Fault(kind: .kill, worker: name, start: now, end: Int64.max))
            _ = try process.wait(timeout: .seconds(10))
            try addLoopbackWorker()
            ChaosRun.say("chaos: killed \(name), replaced by w\(nextWorker - 1)")
        case .pauseWorker:
            var candidates = loopback
            if let host, let worker = host.worker { candidates.append(("n1", worker)) }
            // Mostly a worker that runs a lock holder, so a holder outlives its lease.
            let holding = random.unit() < 0.7 ? try holdersWorkers() : []
            let preferred = candidates.filter { holding.contains($0.name) }
            let pool = preferred.isEmpty ? candidates : preferred
            let (name, process) = pool[Int(random.next() % UInt64(pool.count))]
            guard let session = try EndToEnd.Failures.session(of: name, in: cluster) else { return }
            kill(process.pid, SIGSTOP)
            paused = process.pid
            let start = now
            try EndToEnd.Failures.waitUntil("the coordinator to declare the paused \(name) lost") {
                try EndToEnd.Failures.session(of: name, in: cluster) != session
            }
            randomPause(0, 1.5)
            kill(process.pid, SIGCONT)
            paused = nil
            faults.append(Fault(kind: .pause, worker: name, start: start, end: now))
            ChaosRun.say("chaos: paused \(name) for \(Double(now - start) / 1e6) s")
        case .partition:
            guard let host else { return }
            guard let session = try EndToEnd.Failures.session(of: "n1", in: cluster) else { return }
            try host.setLink(up: false)
            let start = now
            try EndToEnd.Failures.waitUntil("the coordinator to declare the cut-off n1 lost") {
                try EndToEnd.Failures.session(of: "n1", in: cluster) != session
            }
            randomPause(0, 1.5)
            try host.setLink(up: true)
            faults.append(Fault(kind: .partition, worker: "n1", start: start, end: now))
            ChaosRun.say("chaos: cut n1 off for \(Double(now - start) / 1e6) s")
        case .restartCoordinator:
            restarts.append(now)
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            ChaosRun.say("chaos: coordinator killed and restarted")
        }
    }

    /// The names of the workers that run a lock's holder now (`cohort locks --json`; a
    /// session id is turned into its worker's name).
    private func holdersWorkers() throws -> Set<String> {
        guard let cluster else { return [] }
        let locks = try cluster.cli(["locks", "--json"])
        guard locks.status == 0, let table = try? JSON.array(locks.stdout) else { return [] }
        let sessions = try EndToEnd.Failures.workers(cluster).reduce(into: [String: String]()) { names, worker in
            if let id = worker["id"] as? String, let name = worker["name"] as? String { names[id] = name }
        }
        return Set(
            table.compactMap { ($0["holder"] as? [String: Any])?["worker"] as? String }.map { sessions[$0] ?? $0 })
    }

    // MARK: - After the faults

    static func isFinished(_ state: String?) -> Bool { ["succeeded", "failed", "cancelled"].contains(state ?? "") }

    /// Waits (at most 3 minutes) until every accepted group has finished; a group the
    /// coordinator no longer knows is lost.
    func settle() throws {
        guard let cluster else { return }
        // A submission whose answer was lost counts if the coordinator has the group.
        for (name, plan) in unanswered.sorted(by: { $0.key < $1.key }) {
            let result = try cluster.cli(["status", name, "--json"])
            if result.status == 0 {
                plans[name] = plan
                accepted.append(name)
            }
        }
        var pending = Set(accepted)
        let deadline = ContinuousClock.now + .seconds(180)
        while !pending.isEmpty, ContinuousClock.now < deadline {
            let list = try cluster.cli(["status", "--json"])
            let groups = list.status == 0 ? (try? JSON.array(list.stdout)) ?? [] : []
            let known = Set(groups.compactMap { $0["id"] as? String })
            for id in pending.sorted() {
                if list.status == 0, !known.contains(id) {
                    lost[id] = "not listed by cohort status"
                    pending.remove(id)
                    continue
                }
                guard Self.isFinished(groups.first(where: { $0["id"] as? String == id })?.state) else { continue }
                finals[id] = try cluster.status(id)
                pending.remove(id)
            }
            if !pending.isEmpty { usleep(200_000) }
        }
        for id in pending.sorted() {
            unfinished.append(id)
            let last = (try? cluster.status(id)).map(Self.describe) ?? "no status"
            fail(
                "group \(id) did not finish within 3 minutes after the faults stopped; last status: \(last)\n"
                    + (plans[id]?.spec ?? ""))
        }
        for (id, reason) in lost.sorted(by: { $0.key < $1.key }) {
            fail("group \(id) was accepted and then lost (\(reason)):\n\(plans[id]?.spec ?? "")")
        }
    }

    /// A group's status in one line: its state, then each child's state and why it waits.
    static func describe(_ status: [String: Any]) -> String {
        let children = status.children.map { child in
            let path = child["path"] as? String ?? "?"
            let reason = (child["waitingReason"] as? String).map { " (\($0))" } ?? ""
            return "\(path) \(child.state ?? "?") attempt \(child["attempt"] as? Int ?? 0)\(reason)"
        }
        return "\(status.state ?? "?"): " + children.joined(separator: "; ")
    }

    // MARK: - Checks

    func check() {
        let end = now
        let records = ChaosRecords(directory: directory, faults: faults, end: end)
        var latest: [String: [String: Int]] = [:]
        for (id, status) in finals {
            for child in status.children {
                if let path = child["path"] as? String, let attempt = child["attempt"] as? Int {
                    latest[id, default: [:]][path] = attempt
                }
            }
        }

        // One outcome per child, and a success is a completed attempt.
        for id in accepted {
            guard let status = finals[id], let plan = plans[id] else { continue }
            let paths = status.children.compactMap { $0["path"] as? String }
            if paths.sorted() != plan.children.map(\.path).sorted() {
                fail("group \(id): children \(paths.sorted()), planned \(plan.children.map(\.path).sorted())")
            }
            for child in status.children {
                let path = child["path"] as? String ?? "?"
                if !Self.isFinished(child.state) {
                    fail("group \(id) finished \(status.state ?? "?") with child \(path) \(child.state ?? "?")")
                }
                guard child.state == "succeeded", plan.children.first(where: { $0.path == path })?.shell == true,
                    let attempt = child["attempt"] as? Int
                else { continue }
                let completed = records.done[id]?[path] ?? []
                if !completed.contains(attempt) {
                    fail("group \(id): \(path) succeeded on attempt \(attempt), but completed attempts \(completed)")
                }
            }
        }
        if !records.missingTokens.isEmpty {
            fail("children ran without the fencing token of a category they hold: \(records.missingTokens)")
        }

        let slack: Int64 = 3_000_000
        let faults = self.faults
        let lostLease = { (interval: ChaosRecords.Interval) in
            ChaosRecords.lostLease(interval, faults: faults, latestAttempt: latest, slack: slack)
        }

        // Tokens in grant order, across restarts.
        let order = records.tokenOrderViolations(lost: lostLease)
        if !order.isEmpty {
            fail(
                "\(order.count) holder(s) entered with a token smaller than an earlier one:\n"
                    + order.joined(separator: "\n"))
        }
        let fenceRule = records.fenceViolations()
        if !fenceRule.isEmpty { fail("the fence broke its own rule:\n" + fenceRule.joined(separator: "\n")) }

        // Overlaps.
        let overlaps = records.overlaps(lost: lostLease)
        let unexcused = overlaps.filter { !$0.olderLost && !$0.newerLost }
        let afterFencing = overlaps.filter { $0.staleAccepted > 0 }
        if !unexcused.isEmpty {
            fail(
                "\(unexcused.count) overlap(s) between holders that kept their leases:\n"
                    + unexcused.map(\.description).joined(separator: "\n"))
        }
        if !afterFencing.isEmpty {
            fail(
                "\(afterFencing.count) overlap(s) where the fence accepted a stale holder's write after the next holder's:\n"
                    + afterFencing.map(\.description).joined(separator: "\n"))
        }

        // No child of a cancelled group started after its cancel returned.
        for cancel in cancels {
            let late = records.starts.filter { $0.group == cancel.group && $0.startTicks > cancel.ticks }
            if !late.isEmpty {
                let described = late.map {
                    "\($0.child)#\($0.attempt) on \($0.worker) pid \($0.pid), \(Double($0.time - cancel.time) / 1000) ms after"
                }
                fail(
                    "group \(cancel.group): \(late.count) child(ren) started after cohort cancel returned: \(described)"
                )
            }
        }

        // The summary.
        let finished = finals.count
        let byState = Dictionary(grouping: finals.values) { $0.state ?? "?" }.mapValues(\.count)
        let acquisitions = Set(records.intervals.map { "\($0.category) \($0.token)" }).count
        let rejections = records.fenceWrites.filter { !$0.accepted }.count
        let children = finals.values.reduce(0) { $0 + $1.children.count }
        let summary =
            "chaos summary (seed \(seed), \(seconds) s): groups submitted \(accepted.count), finished \(finished) "
            + "(succeeded \(byState["succeeded"] ?? 0), failed \(byState["failed"] ?? 0), "
            + "cancelled \(byState["cancelled"] ?? 0)), unfinished \(unfinished.count), lost \(lost.count); "
            + "children \(children), process starts \(records.starts.count); acquisitions \(acquisitions); "
            + "worker kills \(counts[.killWorker] ?? 0), pauses \(counts[.pauseWorker] ?? 0), "
            + "partitions \(counts[.partition] ?? 0)\(host == nil && hostUnavailable != nil ? " (unavailable)" : ""), "
            + "coordinator restarts \(restarts.count), cancels \(cancels.count); "
            + "overlaps before fencing \(overlaps.count) (between holders that kept their leases \(unexcused.count)), "
            + "after fencing \(afterFencing.count); fence writes \(records.fenceWrites.count), "
            + "rejections \(rejections); failed checks \(failures.count)"
        ChaosRun.say(summary)
        for overlap in overlaps { ChaosRun.say("chaos: overlap: \(overlap)") }
    }
}
