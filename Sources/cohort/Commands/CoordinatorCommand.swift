import ArgumentParser

struct CoordinatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "coordinator", abstract: "(being built)")
    func run() async throws { throw ExitCode(70) }
}
