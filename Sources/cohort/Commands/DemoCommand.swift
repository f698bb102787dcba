import ArgumentParser

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "demo", abstract: "(being built)")
    func run() async throws { throw ExitCode(70) }
}
