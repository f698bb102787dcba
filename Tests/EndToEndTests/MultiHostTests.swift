import Foundation
import Testing

/// Whether this machine can make network namespaces (root, `ip`, and `ip netns add` works),
/// checked once; the reason when it cannot.
enum NetworkNamespaces {
    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "needs root to make network namespaces (CI runs as root)" }
        guard
            let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first(
                where: FileManager.default.isExecutableFile)
        else { return "needs the ip command (iproute2)" }
        let probe = "cohort-probe-\(getpid())"
        guard let added = try? cohortRun(ip, ["netns", "add", probe]), added.status == 0 else {
            return "this machine cannot make network namespaces (ip netns add failed)"
        }
        _ = try? cohortRun(ip, ["netns", "del", probe])
        return nil
    }()

    static var available: Bool { unavailableReason == nil }

    /// Runs `executable` to completion.
    /// `tag`: the `COHORT_E2E_TAG` it runs with, for processes meant to outlive it (those
    /// `netns-cluster up` starts), which the caller sweeps; nil for one of its own.
    static func cohortRun(
        _ executable: String, _ arguments: [String], timeout: Duration = .seconds(30), tag: String? = nil
    ) throws -> CommandResult {
        let start = ContinuousClock.now
        let process = try Subprocess(executable, arguments, tag: tag)
        defer { process.stop() }
        let status = try process.wait(timeout: timeout)
        return CommandResult(
            status: status, stdout: process.stdout, stderr: process.stderr, elapsed: ContinuousClock.now - start)
    }
}

extension EndToEnd {
    /// A coordinator and three worker hosts in network namespaces (`deploy/netns-cluster`).
    @Suite struct MultiHost {
        static let script = Binaries.repositoryRoot + "/deploy/netns-cluster"
        static let endpoint = "tcp://10.231.0.1:7400"

        let id = "cohort-\(getpid())"
        /// Carried by every process the script starts (they outlive its `up`): none may survive
        /// its `down`.
        let tag = Leftovers.newTag()

        func netns(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> CommandResult {
            try NetworkNamespaces.cohortRun(Self.script, arguments, timeout: timeout, tag: tag)
        }

        /// `netns-cluster down`, then checks that nothing the script started survived it (and
        /// kills, by pid, whatever did).
        func down() {
            _ = try? netns(["down", id])
            let survivors = Leftovers.pids(tags: [tag])
            #expect(survivors.isEmpty, "processes started by netns-cluster survived its down: \(survivors)")
            Leftovers.sweep(tags: [tag])
        }

        /// `cohort ARGUMENTS` run in the coordinator's namespace, against it.
        func cli(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> CommandResult {
            try netns(
                ["exec", id, "coordinator", "--", Binaries.cohort] + arguments + ["--coordinator", Self.endpoint],
                timeout: timeout)
        }

        func status(_ group: String) throws -> [String: Any] {
            let result = try cli(["status", group, "--json"])
            guard result.status == 0 else { throw TestFailure("status failed: \(result)") }
            return try JSON.object(result.stdout)
        }

        func workers() throws -> [[String: Any]] {
            let result = try cli(["workers", "--json"])
            guard result.status == 0 else { throw TestFailure("workers failed: \(result)") }
            return try JSON.array(result.stdout)
        }

        func connectedSession(of name: String) throws -> String? {
            try workers().first { $0["name"] as? String == name && $0["state"] as? String == "ready" }?["id"] as? String
        }

        /// The script's usage (no root needed): `--help` prints it and exits 0; a bad argument
        /// exits 64 naming it, then the usage.
        @Test func theScriptTeachesItsUsageAndNamesABadArgument() throws {
            let help = try netns(["--help"])
            #expect(help.status == 0, "\(help)")
            #expect(help.stdout.contains("netns-cluster up N"), "\(help)")
            #expect(help.stdout.contains("`--coordinators K` (2 or 3)"), "the whole header: \(help)")
            let sideways = try netns(["link", "some-id", "w2", "sideways"])
            #expect(sideways.status == 64, "\(sideways)")
            #expect(sideways.stderr.contains("\"sideways\" is neither up nor down"), "\(sideways)")
            #expect(sideways.stderr.contains("netns-cluster link ID HOST down|up"), "then the usage: \(sideways)")
            let host = try netns(["link", "some-id", "east", "down"])
            #expect(host.status == 64 && host.stderr.contains("\"east\" is not a worker host"), "\(host)")
            let four = try netns(["up", "1", "--coordinators", "4"])
            #expect(four.status == 64 && four.stderr.contains("--coordinators takes 1, 2 or 3, not \"4\""), "\(four)")
        }

        /// 300 children spread over three hosts; one host's link is cut mid-run: its work is
        /// re-run on the other two and the group succeeds; once the link is back, that worker
        /// rejoins with a new session.
        @Test(.enabled(if: NetworkNamespaces.available, "\(NetworkNamespaces.unavailableReason ?? "")"))
        func aHostCutOffMidRunHasItsWorkRerunElsewhereAndRejoins() throws {
            let up = try netns([
                "up", "3", "--id", id, "--cohort", Binaries.cohort, "--heartbeat", "200ms", "--liveness", "5",
                "--slots", "4",
            ])
            defer { down() }
            try #require(up.status == 0, "netns-cluster up failed: \(up)")
            let cutSession = try #require(try connectedSession(of: "host-2"))

            var spec = "name: spread\nchildren:\n"
            for index in 1...300 {
                spec +=
                    "  - name: c\(index)\n    run: shell\n    retry: 3\n    with: { command: [\"sleep\", \"0.2\"] }\n"
            }
            let file = try Scratch.write(spec, name: "spread.yaml")
            let submitted = try cli(["submit", file, "--json"])
            try #require(submitted.status == 0, "\(submitted)")
            let group = try #require(try JSON.object(submitted.stdout)["id"] as? String)

            // Cut host-2 off once every host has finished some children and host-2 runs some.
            try Failures.waitUntil("every host to have run children, host-2 running some", timeout: .seconds(60)) {
                let children = try status(group).children
                let done = Set(children.filter { $0.state == "succeeded" }.compactMap { $0["worker"] as? String })
                let running = children.contains { $0.state == "running" && $0["worker"] as? String == "host-2" }
                return done == ["host-1", "host-2", "host-3"] && running
            }
            let cut = try netns(["link", id, "w2", "down"])
            try #require(cut.status == 0, "\(cut)")
            var restored = false
            defer { if !restored { _ = try? netns(["link", id, "w2", "up"]) } }
            try Failures.waitUntil("the coordinator to declare host-2 lost", timeout: .seconds(20)) {
                try connectedSession(of: "host-2") == nil
            }
            let back = try netns(["link", id, "w2", "up"])
            try #require(back.status == 0, "\(back)")
            restored = true

            var final: [String: Any] = [:]
            try Failures.waitUntil("the group to finish", timeout: .seconds(90)) {
                final = try status(group)
                return final.state == "succeeded" || final.state == "failed" || final.state == "cancelled"
            }
            #expect(final.state == "succeeded", "\(final["reason"] ?? "")")
            let children = final.children
            #expect(children.count == 300)
            var perHost: [String: Int] = [:]
            for child in children { perHost[child["worker"] as? String ?? "?", default: 0] += 1 }
            #expect(Set(perHost.keys) == ["host-1", "host-2", "host-3"], "each host ran some: \(perHost)")
            // What host-2 ran when it was cut off ran again on another host.
            let rerun = children.filter { ($0["attempt"] as? Int ?? 0) >= 2 }
            #expect(!rerun.isEmpty, "some children ran again")
            #expect(rerun.contains { $0["worker"] as? String != "host-2" }, "re-run on the other hosts")

            // host-2 comes back on its own, with a new session, and takes work again.
            var rejoined: String?
            try Failures.waitUntil("host-2 to rejoin", timeout: .seconds(60)) {
                rejoined = try connectedSession(of: "host-2")
                return rejoined != nil
            }
            #expect(rejoined != cutSession, "a new session: \(rejoined ?? "-") after \(cutSession)")
        }

        /// A child's log followed from another host: `cohort logs -f` in the coordinator's
        /// namespace shows the lines a child writes on a worker host, each within 200 ms
        /// (median; none past 1 s on a loaded machine), and exits with the child's outcome.
        @Test(.enabled(if: NetworkNamespaces.available, "\(NetworkNamespaces.unavailableReason ?? "")"))
        func aLogIsFollowedFromAnotherHostAsItIsWritten() throws {
            let up = try netns(["up", "1", "--id", id, "--cohort", Binaries.cohort, "--heartbeat", "200ms"])
            defer { down() }
            try #require(up.status == 0, "netns-cluster up failed: \(up)")
            let flag = Scratch.file("go")
            let script =
                "echo on $COHORT_WORKER_HOST; while [ ! -e \(flag) ]; do sleep 0.01; done; "
                + "for i in 1 2 3 4 5 6 7; do echo tick-$i $(date +%s%N); sleep 0.3; done"
            let file = try Scratch.write(
                """
                name: far
                children:
                  - { name: c, run: shell, with: { command: ["sh", "-c", "\(script)"] } }
                """, name: "far.yaml")
            let submitted = try cli(["submit", file, "--json"])
            try #require(submitted.status == 0, "\(submitted)")
            let group = try #require(try JSON.object(submitted.stdout)["id"] as? String)
            let follower = try Subprocess(
                Self.script,
                [
                    "exec", id, "coordinator", "--", Binaries.cohort, "logs", group, "c", "-f", "--coordinator",
                    Self.endpoint,
                ],
                name: "follower")
            defer { follower.stop() }
            let host = try follower.waitForLine(timeout: .seconds(30)) { line in
                line.hasPrefix("on ") ? String(line.dropFirst(3)) : nil
            }
            #expect(host.hasSuffix("w1"), "written in the worker host's namespace: \(host)")
            _ = FileManager.default.createFile(atPath: flag, contents: Data())
            var latencies: [Double] = []
            for tick in 1...7 {
                let written = try follower.waitForLine(timeout: .seconds(10)) { line -> Int64? in
                    let parts = line.split(separator: " ")
                    return parts.count == 2 && parts[0] == "tick-\(tick)" ? Int64(parts[1]) : nil
                }
                var now = timespec()
                clock_gettime(CLOCK_REALTIME, &now)
                let seen = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
                latencies.append(Double(seen - written) / 1e6)
            }
            #expect(try follower.wait(timeout: .seconds(20)) == 0, "\(follower.stderr)")
            let sorted = latencies.sorted()
            print("log latency from another host, ms: \(latencies.map { Int($0) })")
            #expect(sorted[sorted.count / 2] <= 200, "median over 200 ms: \(latencies)")
            #expect(sorted.last ?? 0 <= 1000, "a line took over 1 s: \(latencies)")
        }

        /// Where the script keeps a cluster's logs and pids.
        var state: String {
            (ProcessInfo.processInfo.environment["COHORT_NETNS_STATE"] ?? "/run/cohort-netns") + "/\(id)"
        }

        /// The log of `host`'s process (`c1`, `c2`, `w1`, ...).
        func log(_ host: String) -> String {
            (try? String(contentsOfFile: "\(state)/\(host).log", encoding: .utf8)) ?? ""
        }

        /// `cohort ARGUMENTS` run on host `hub` of a cluster with standby coordinators.
        func hubCLI(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> CommandResult {
            try netns(["exec", id, "hub", "--", Binaries.cohort] + arguments, timeout: timeout)
        }

        /// `sql` run by psql on host `db`, in the cluster's journal; its output, trimmed.
        func journal(_ sql: String) throws -> String {
            let result = try netns([
                "exec", id, "db", "--", "psql", "-h", "10.231.0.9", "-U", "cohort", "-d", "cohort", "-XAtq", "-v",
                "ON_ERROR_STOP=1", "-c", sql,
            ])
            guard result.status == 0 else { throw TestFailure("psql failed: \(result)") }
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// Two coordinator hosts with standby coordinators on one PostgreSQL journal (on a host
        /// of its own), two worker hosts, a client on the hub waiting on a group of 20
        /// exclusive children, every endpoint given, the leader's first. The leader's host is
        /// cut off (its link down) once 6 children completed: it can reach neither the workers
        /// nor the database, so it stops leading within a lease and a third of the cut (by its
        /// own clock, or as a journal write goes unanswered) while the standby leads within the
        /// lease plus a second of it; the client's wait carries on and the
        /// group succeeds: every child completed, no attempt twice (only the child running at
        /// the cut may have run again, its result lost with the old leader), each child's
        /// success journaled once, no two holders of `db` overlapped, tokens after the cut
        /// above those before. Once the link is back, the old leader has finished no group and
        /// stands by: the lease stays the new leader's, and a client given the old leader
        /// first is sent to the new one and its group accepted.
        @Test(.enabled(if: NetworkNamespaces.available, "\(NetworkNamespaces.unavailableReason ?? "")"))
        func aLeaderHostCutOffLosesTheLeadAndRejoinsAsStandby() throws {
            typealias Standby = EndToEnd.StandbyCoordinators
            let up = try netns([
                "up", "2", "--id", id, "--cohort", Binaries.cohort, "--coordinators", "2", "--lease",
                "\(Standby.lease.components.seconds)s", "--restart-grace", "3s", "--heartbeat", "200ms", "--liveness",
                "5", "--slots", "2",
            ])
            defer { down() }
            try #require(up.status == 0, "netns-cluster up failed: \(up)")
            let (leader, standby) = ("tcp://10.231.0.2:7400", "tcp://10.231.0.3:7400")
            let list = "\(leader),\(standby)"
            #expect(log("c1").contains("leading: this coordinator holds"), "c1 leads")
            #expect(!log("c2").contains("leading: this coordinator holds"), "c2 stands by")

            let completions = Scratch.file("completions.log")
            let spec = try Scratch.write(
                Standby.exclusiveGroup("ha-cut", count: 20, log: completions), name: "ha-cut.yaml")
            let client = try Subprocess(
                Self.script,
                ["exec", id, "hub", "--", Binaries.cohort, "submit", spec, "--wait", "--json", "--coordinator", list],
                name: "client", tag: tag)
            defer { client.stop() }
            try Failures.waitUntil("6 children to complete", timeout: .seconds(60)) {
                Standby.Completion.read(completions).count >= 6
            }
            let cut = try netns(["link", id, "c1", "down"])
            let cutAt = ContinuousClock.now
            let cutAtWall = Date().timeIntervalSince1970
            try #require(cut.status == 0, "\(cut)")
            var restored = false
            defer { if !restored { _ = try? netns(["link", id, "c1", "up"]) } }

            // While cut off: c2 leads and serves, and c1, which can reach no one, stops leading:
            // by its own clock when its renewal fails ("stepping down"), or when a journal write
            // of its committer goes unanswered for the lease; either way it then logs "serving
            // as a standby again". Both logs watched at once, each event's time taken when first
            // seen.
            var servingAt: ContinuousClock.Instant?
            var stoppedAt: ContinuousClock.Instant?
            let watching = ContinuousClock.now + .seconds(10)
            while servingAt == nil || stoppedAt == nil {
                guard ContinuousClock.now < watching else {
                    throw TestFailure(
                        "within 10 s of the cut, c2 \(servingAt == nil ? "did not lead" : "led"), c1 "
                            + "\(stoppedAt == nil ? "did not stop leading" : "stopped leading"):\nc1:\n\(log("c1"))\n"
                            + "c2:\n\(log("c2"))")
                }
                if servingAt == nil, log("c2").contains("journal loaded for leading") { servingAt = .now }
                if stoppedAt == nil, log("c1").contains("serving as a standby again") { stoppedAt = .now }
                usleep(2_000)
            }
            try Standby.checkFailover(
                from: cutAt, to: (servingAt!, Standby.lastLoad(in: log("c2"))), after: "cutting the leader's host off")
            // It renews every lease/3 and waits at most a lease for an answer (a write too): it
            // stops within a lease and a third of the cut (a second of slack for a loaded machine).
            let stopped = cutAt.duration(to: stoppedAt!)
            let how = log("c1").contains("stepping down") ? "its renewal failed" : "a journal write went unanswered"
            print("the cut-off leader stopped leading \(stopped) after the cut, \(how) (lease \(Standby.lease))")
            #expect(
                stopped <= Standby.lease + Standby.lease / 3 + .seconds(1),
                "the cut-off leader stopped leading \(stopped) after the cut:\n\(log("c1"))")

            #expect(try client.wait(timeout: .seconds(60)) == 0, "the client: \(client.stdout)\n\(client.stderr)")
            let final = try JSON.object(client.stdout)
            #expect(final.state == "succeeded", "\(final)")
            let group = try #require(final["id"] as? String)

            let completed = Standby.Completion.read(completions)
            #expect(Set(completed.map(\.child)) == Set((1...20).map { "c\($0)" }), "every child completed")
            let attempts = completed.map { "\($0.child)#\($0.attempt)" }
            #expect(Set(attempts).count == attempts.count, "no attempt completed twice: \(attempts)")
            // Only the child holding `db` at the cut may have completed twice: a result sent to
            // the cut-off leader is lost with it, and the new leader runs it again after
            // restartGrace (docs/operations.md, "Failover timings").
            let twice = Dictionary(grouping: completed, by: \.child).filter { $0.value.count > 1 }
            #expect(twice.count <= 1 && completed.count <= 21, "completed more than once: \(attempts)")
            let byStart = completed.sorted { $0.start < $1.start }
            for (earlier, later) in zip(byStart, byStart.dropFirst()) {
                #expect(earlier.end <= later.start, "holders of db overlapped: \(earlier) and \(later)")
            }
            let before = completed.filter { $0.end < cutAtWall }
            let after = completed.filter { $0.start > cutAtWall }
            #expect(!before.isEmpty && !after.isEmpty)
            let highestBefore = before.map(\.token).max() ?? 0
            #expect(after.allSatisfy { $0.token > highestBefore }, "tokens after the failover: \(after)")
            #expect(
                try journal(
                    "SELECT state || ' ' || (SELECT count(*) FROM attempts WHERE group_id = '\(group)' "
                        + "AND state = 'succeeded') FROM groups WHERE id = '\(group)'") == "succeeded 20",
                "the journal has the group succeeded, each child's success once")

            // The old leader's link comes back: it reaches the database again and stands by.
            let back = try netns(["link", id, "c1", "up"])
            try #require(back.status == 0, "\(back)")
            restored = true
            try Failures.waitUntil("the old leader to stand by again", timeout: .seconds(20)) {
                log("c1").contains("role=standby")
            }
            let old = log("c1")
            #expect(!old.contains("group finished"), "the old leader finished the group: \(old)")
            #expect(try journal("SELECT epoch || ' ' || holder FROM lease") == "2 \(standby)", "the lease is c2's")

            let redirected = try hubCLI(["workers", "--coordinator", leader, "--log-level", "debug"])
            #expect(redirected.status == 0, "\(redirected)")
            #expect(redirected.stderr.contains("trying the coordinator at \(standby)"), "\(redirected.stderr)")
            let late = try hubCLI([
                "submit", try Scratch.write("name: after\nchildren:\n  - { name: a, run: echo }\n", name: "after.yaml"),
                "--wait", "--json", "--coordinator", list,
            ])
            #expect(late.status == 0, "a group submitted with the old leader first: \(late)")
            #expect(try JSON.object(late.stdout).state == "succeeded", "\(late.stdout)")
            #expect(
                log("c1").components(separatedBy: "leading: this coordinator holds").count == 2,
                "the old leader led once, before the cut: \(log("c1"))")
        }
    }
}
