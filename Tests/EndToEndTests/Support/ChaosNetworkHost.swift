import Foundation

/// A worker "host" for the chaos test: a network namespace joined to this machine by one veth
/// pair, so its link can be cut (`eth0` down inside the namespace, as `deploy/netns-cluster
/// link` does) and restored while everything else runs on this machine.
///
/// This machine's end of the pair has the address the coordinator binds (10.232.N.1/30, a
/// private range no other test uses; N from the test's pid), so the coordinator, the other
/// workers and the CLI reach it locally and the namespace's worker over the link. Nothing else
/// is changed outside the namespace; deleting the namespace deletes the pair.
/// Made only when ``NetworkNamespaces`` says this machine can.
final class ChaosNetworkHost: @unchecked Sendable {
    // @unchecked: belongs to one test; `worker` is set once before any sharing.
    let namespace: String
    let outerInterface: String
    let address: String
    private let ip: String
    private(set) var worker: Subprocess?
    private(set) var linkDown = false

    /// The coordinator's endpoint (any port) on this machine's end of the link.
    var endpoint: String { "tcp://\(address):*" }

    init() throws {
        guard
            let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first(
                where: FileManager.default.isExecutableFile)
        else { throw TestFailure("no ip command") }
        self.ip = ip
        let pid = getpid()
        namespace = "cohort-chaos-\(pid)"
        outerInterface = "chaos\(pid % 100_000)"
        let subnet = "10.232.\(Int(pid) % 250 + 1)"
        address = "\(subnet).1"
        do {
            try run(["netns", "add", namespace])
            try run(["link", "add", outerInterface, "type", "veth", "peer", "name", "eth0", "netns", namespace])
            try run(["addr", "add", "\(address)/30", "dev", outerInterface])
            try run(["link", "set", outerInterface, "up"])
            try run(["-n", namespace, "link", "set", "lo", "up"])
            try run(["-n", namespace, "addr", "add", "\(subnet).2/30", "dev", "eth0"])
            try run(["-n", namespace, "link", "set", "eth0", "up"])
        } catch {
            tearDown()
            throw error
        }
    }

    @discardableResult
    private func run(_ arguments: [String]) throws -> CommandResult {
        let result = try NetworkNamespaces.cohortRun(ip, arguments, timeout: .seconds(20))
        guard result.status == 0 else { throw TestFailure("ip \(arguments.joined(separator: " ")) failed: \(result)") }
        return result
    }

    /// Starts `cohort worker` in the namespace (ip netns exec execs it: the pid is the
    /// worker's) and waits until it is ready.
    func startWorker(name: String, coordinator: String, slots: Int) throws -> Subprocess {
        let worker = try Subprocess(
            ip,
            [
                "netns", "exec", namespace, Binaries.cohort, "worker", "--coordinator", coordinator, "--name", name,
                "--slots", "\(slots)", "--kill-grace", "2s", "--drain-timeout", "0s",
            ], name: "worker \(name)")
        self.worker = worker
        _ = try worker.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("cohort worker \(name) ready") ? true : nil }
        return worker
    }

    /// Cuts (`false`) or restores (`true`) the namespace's link.
    func setLink(up: Bool) throws {
        try run(["-n", namespace, "link", "set", "eth0", up ? "up" : "down"])
        linkDown = !up
    }

    /// Stops the worker (SIGCONT first, in case it is paused) and everything it started,
    /// then deletes the namespace (and with it the veth pair). Records nothing; returns the
    /// pids of the worker's processes that survived. Idempotent.
    @discardableResult
    func tearDown() -> [pid_t] {
        var survivors: [pid_t] = []
        if let worker {
            kill(worker.pid, SIGCONT)
            worker.stop()
            survivors = Leftovers.pids(tags: [worker.tag])
            Leftovers.sweep(tags: [worker.tag])
        }
        _ = try? NetworkNamespaces.cohortRun(ip, ["netns", "del", namespace], timeout: .seconds(20))
        _ = try? NetworkNamespaces.cohortRun(ip, ["link", "del", outerInterface], timeout: .seconds(20))
        return survivors
    }
}
