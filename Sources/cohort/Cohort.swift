import ArgumentParser

@main
struct Cohort: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cohort",
        abstract: "Run group procedures across a cluster.",
        version: "0.1.0"
    )
}
