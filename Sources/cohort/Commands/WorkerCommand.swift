import ArgumentParser

struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "worker", abstract: "(being built)")
    func run() async throws { throw ExitCode(70) }
}
