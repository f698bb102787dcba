import ArgumentParser

@main
struct Cohort: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cohort",
        abstract: "Run group procedures across a cluster.",
        discussion: """
            A coordinator accepts groups of procedures and splits their children across \
            workers, with cluster-wide mutual exclusion, result injection between children \
            and cancellation that reaches every worker.

            Try it on this machine:
              cohort demo

            Or by hand:
              cohort coordinator &                       # tcp://127.0.0.1:7400
              cohort worker --slots 4 --labels linux &
              cohort submit examples/release.yaml --watch

            Client commands find the coordinator with --coordinator or COHORT_COORDINATOR.
            """,
        version: "0.1.0",
        subcommands: [
            CoordinatorCommand.self, WorkerCommand.self, SubmitCommand.self, StatusCommand.self,
            ResultCommand.self, LogsCommand.self, CancelCommand.self, AddCommand.self, RerunCommand.self,
            WorkersCommand.self,
            LocksCommand.self, DrainCommand.self, UndrainCommand.self,
            KeygenCommand.self, PruneCommand.self,
            DemoCommand.self,
        ]
    )
}
