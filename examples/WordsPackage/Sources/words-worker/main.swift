import CohortWorker
import Foundation
import Logging
import ServiceLifecycle
import WordWorker

var registry = ProcedureRegistry()  // shell, sleep, echo, fail
registry.registerWordKinds()
var configuration = WorkerConfiguration(coordinator: CommandLine.arguments.dropFirst().first ?? "tcp://127.0.0.1:7400")
configuration.name = "words"
let worker = Worker(configuration: configuration, registry: registry) { ready in
    FileHandle.standardOutput.write(Data("\(ready)\n".utf8))  // `cohort worker words ready (session …)`
}
// SIGTERM or SIGINT drains the worker (running attempts finish); a second stops it at once.
try await ServiceGroup(cohortServices: [worker], logger: Logger(label: "words-worker")).run()
