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
            let sideways = try netns(["link", "some-id", "w2", "sideways"])
            #expect(sideways.status == 64, "\(sideways)")
            #expect(sideways.stderr.contains("\"sideways\" is neither up nor down"), "\(sideways)")
            #expect(sideways.stderr.contains("netns-cluster link ID HOST down|up"), "then the usage: \(sideways)")
            let host = try netns(["link", "some-id", "east", "down"])
            #expect(host.status == 64 && host.stderr.contains("\"east\" is not a worker host"), "\(host)")
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
    }
}
