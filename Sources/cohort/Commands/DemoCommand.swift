import ArgumentParser
import CohortClient
import Foundation
import Logging

/// `cohort demo`: a coordinator and three workers on this machine run an example group.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Start a coordinator and three workers on this machine and run an example group.",
        discussion: """
            The demo starts a coordinator on a free port of 127.0.0.1 and three workers \
            (labelled alpha, beta and gamma) as child processes, submits a group that shows \
            fan-out, result injection across workers, an exclusive section with fencing \
            tokens and the cancellation of one child, shows it live, checks the outcome, and \
            stops every process it started (also on failure or Ctrl-C). The processes' logs \
            go to a temporary directory (printed at the start) that is removed when the demo \
            ends; when it fails, the last lines of each log are printed first.

            The coordinator serves its dashboard and its metrics on free ports (the dashboard's \
            URL is printed at the start). With --keep the cluster keeps running after the demo, \
            with the coordinator's endpoint and the dashboard's and metrics' URLs printed, until \
            Ctrl-C (or SIGTERM) stops every process.

            Exit status 0 when everything behaved as expected, 1 otherwise.

            Examples:
              cohort demo
              cohort demo --keep    # the cluster stays up until Ctrl-C
              cohort demo --print-spec > demo.yaml     # the group it runs, to try by hand
            """
    )

    @Flag(name: .customLong("print-spec"), help: "Print the demo's group spec and exit.")
    var printSpec = false

    @Flag(
        name: .long,
        help: "Keep the demo cluster (and its dashboard) running after the demo, until Ctrl-C.")
    var keep = false

    @OptionGroup var log: LogOptions

    func run() async throws {
        if printSpec {
            Console.out(DemoSpec.text)
            return
        }
        let logger = log.bootstrap("cohort.demo")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-demo-\(getpid())").path
        let cluster = DemoCluster(executable: DemoCluster.ownExecutable, logDirectory: directory)
        defer { cluster.removeLogs() }  // after the processes are stopped, on every path out
        Console.out("cohort demo: logs in \(directory) (removed at the end)")
        let work = Task { try await Self.runDemo(cluster: cluster, logger: logger) }
        // With --keep, the cluster runs on after the demo until a signal ends this task.
        let keeper = Task {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        }
        let trap = SignalTrap { number, _ in
            Console.err("cohort demo: \(SignalTrap.name(number)); stopping the demo's processes")
            work.cancel()
            keeper.cancel()
        }
        let result = await work.result
        if keep, !work.isCancelled, !keeper.isCancelled {
            Self.sayKept(result, cluster: cluster)
            await keeper.value
        }
        keeper.cancel()
        await cluster.stop { Console.out("cohort demo: \($0)") }
        trap.cancel()
        switch result {
        case .success(true):
            Console.out("cohort demo: everything behaved as expected")
        case .success(false):
            Console.err(cluster.logTails())
            Console.error("the demo did not behave as expected (the logs' last lines are above)")
            throw ExitCode(ExitStatus.groupFailed)
        case .failure(let error) where error is CancellationError || (error as? ClientError)?.code == .cancelled:
            throw ExitCode(130)
        case .failure(let error as ClientError):
            Console.err(cluster.logTails())
            Console.error("\(error.description) (the logs' last lines are above)")
            throw ExitCode(error.exitCode)
        case .failure(let error):
            Console.err(cluster.logTails())
            Console.error("\(error) (the logs' last lines are above)")
            throw ExitCode(ExitStatus.software)
        }
    }

    /// What `--keep` prints once the demo is over: where the cluster is, and how to end it.
    static func sayKept(_ result: Result<Bool, any Error>, cluster: DemoCluster) {
        let outcome =
            switch result {
            case .success(true): "everything behaved as expected"
            case .success(false): "the demo did not behave as expected"
            case .failure(let error): "the demo failed: \(error)"
            }
        Console.out("cohort demo: \(outcome); the cluster keeps running (--keep)")
        if let endpoint = cluster.endpoint {
            Console.out("cohort demo: coordinator on \(endpoint) (e.g. cohort status --coordinator \(endpoint))")
        }
        if let url = cluster.dashboardURL { Console.out("cohort demo: dashboard on \(url)") }
        if let url = cluster.metricsURL { Console.out("cohort demo: metrics on \(url)") }
        Console.out("cohort demo: press Ctrl-C to stop it")
    }

    /// Starts the cluster, runs the group, shows it, checks it. `true` if all went as expected.
    static func runDemo(cluster: DemoCluster, logger: Logger) async throws -> Bool {
        let endpoint = try await cluster.start { Console.out("cohort demo: \($0)") }
        return try await CohortClient.withClient(ClientConfiguration(coordinator: endpoint), logger: logger) { client in
            let receipt = try await client.submit(specText: DemoSpec.text, sourceName: DemoSpec.sourceName)
            for warning in receipt.warnings { Console.err("cohort: warning: \(warning)") }
            Console.out("cohort demo: submitted \(receipt.name) as \(receipt.id) (cohort demo --print-spec shows it)\n")
            let final = try await withThrowingTaskGroup(of: GroupDetail?.self) { tasks in
                tasks.addTask {
                    try await GroupFollower.follow(client, group: receipt.id, style: GroupFollower.style(json: false))
                }
                tasks.addTask {
                    try await cancelSlowChild(client, group: receipt.id)
                    return nil
                }
                var final: GroupDetail?
                for try await result in tasks {
                    if let result { final = result }
                }
                return final!
            }
            let report = try await DemoReport.make(final: final, client: client)
            Console.out("\nOutcome: \(final.name) (\(final.id)) \(final.state.word)")
            for line in report.lines { Console.out(line) }
            return report.passed
        }
    }

    /// Cancels the demo's slow child a second after it started running, as
    /// `cohort cancel GROUP --child slow` would.
    static func cancelSlowChild(_ client: CohortClient, group: String) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let detail = try await client.status(group)
            if detail.state.isFinished { return }
            if let slow = detail.children.first(where: { $0.path == DemoSpec.cancelled }) {
                if slow.state.isFinished { return }
                if slow.state == .running {
                    try await Task.sleep(for: .seconds(1))
                    try await client.cancel(group, child: DemoSpec.cancelled, reason: "cancelled by the demo")
                    return
                }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
