// A worker binary with kinds of its own, built on the CohortWorker Swift API.
//
//   swift build --product custom-worker
//   .build/debug/custom-worker --coordinator tcp://127.0.0.1:7400 --slots 2 --labels linux,text --name words-1
//
// In a CURVE cluster, give it a worker key (`cohort keygen --role worker`) and the
// coordinator's public key, as to `cohort worker`:
//   .build/debug/custom-worker --key keys/words-1.key --server-key keys/coordinator.pub …
// (or COHORT_KEY_FILE and COHORT_SERVER_KEY in the environment).
//
// Besides the built-ins (shell, sleep, echo, fail) it offers:
//   wordcount   input {text}            → output {words, characters, lines}
//   print-report input {title, pages, secondsPerPage?}
//               → runs a local GroupProcedure whose `print` child is MutuallyExclusive on
//               "printer": the category is granted by the coordinator's cluster-wide lock
//               table, so two print-report children never print at once, on any worker.
//               Each page takes secondsPerPage (default 0). Output {title, pages,
//               fencingToken, printedFrom, printedUntil} (seconds since 1970: while it held
//               the printer).
//
//   gate        input {healthy, reason?}
//               → healthy: adds a `promote` child (echo) to its own group with
//               context.addChildren, then succeeds {added: true}; not healthy: cancels its
//               whole group with context.cancelGroup(reason:) (the group ends "cancelled by
//               child PATH (attempt N): REASON") and waits to be cancelled itself.
//
// It runs in a ServiceGroup: the first SIGTERM or SIGINT drains it (no new work, running
// attempts finish, then it exits 0), a second stops it at once (what still runs is handed back
// to the coordinator, which runs it elsewhere), exit 0 too.
//
// A spec that uses them:
//   children:
//     - { name: count, run: wordcount, with: { text: "the quick brown fox" } }
//     - { name: report, run: print-report, with: { title: "Q3", pages: 3 } }
import CohortWorker
import Foundation
import Logging
import ServiceLifecycle
import ZeroMQ

struct Text: Codable, Sendable {
    var text: String
}

struct Counts: Codable, Sendable {
    var words: Int
    var characters: Int
    var lines: Int
}

struct Report: Codable, Sendable {
    var title: String
    var pages: Int
    var secondsPerPage: Double?
}

struct Gate: Codable, Sendable {
    var healthy: Bool
    var reason: String?
}

struct GateResult: Codable, Sendable {
    var added: Bool
}

struct Printed: Codable, Sendable {
    var title: String
    var pages: Int
    var fencingToken: UInt64
    var printedFrom: Double
    var printedUntil: Double
}

// The kinds, with their types: a client that imports them builds children from them
// (`try ChildSpec("count", wordcount, Text(text: "…"))`) and reads typed results.
let wordcount = Kind<Text, Counts>("wordcount")
let printReport = Kind<Report, Printed>("print-report")
let gate = Kind<Gate, GateResult>("gate")

/// Prints a report page by page; its condition makes it hold the cluster-wide `printer` lock.
final class PrintProcedure: Procedure, @unchecked Sendable {
    // @unchecked Sendable: `report` is immutable; `printed` is written before `finish()` and
    // read after the procedure finished; the rest is the engine's own state.
    let report: Report
    private(set) var printed: (from: Double, until: Double) = (0, 0)

    init(_ report: Report) {
        self.report = report
        super.init()
        name = "print \(report.title)"
        addCondition(MutuallyExclusive(category: "printer"))
    }

    override func execute() {
        // The coordinator's fencing token: a printer that remembers the largest token it
        // has seen can refuse a stale holder.
        let token = fencingTokens["printer"] ?? 0
        log.info("printing \(report.pages) pages of \(report.title) with fencing token \(token)")
        let from = Date().timeIntervalSince1970
        let duration = Double(report.pages) * (report.secondsPerPage ?? 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + duration) { [self] in
            printed = (from, Date().timeIntervalSince1970)
            finish()
        }
    }
}

var registry = ProcedureRegistry()

registry.register(wordcount) { input in
    Counts(
        words: input.text.split(whereSeparator: \.isWhitespace).count,
        characters: input.text.count,
        lines: input.text.isEmpty ? 0 : input.text.split(separator: "\n", omittingEmptySubsequences: false).count)
}

registry.register(printReport) { input, context in
    guard input.pages > 0 else { throw ProcedureInputError(field: "with.pages", message: "must be at least 1") }
    let layout = BlockProcedure { context.logger.info("laying out \(input.title)") }
    let print = PrintProcedure(input)
    print.addDependency(layout)
    // Procedures run on the attempt's own queue: their locks go to the coordinator, tied
    // to this attempt, and they are cancelled if the attempt is.
    try await context.run(GroupProcedure(children: [layout, print]))
    return Printed(
        title: input.title, pages: input.pages, fencingToken: print.fencingTokens["printer"] ?? 0,
        printedFrom: print.printed.from, printedUntil: print.printed.until)
}

// A child that decides what its group does next (docs/worker.md, "An attempt's own group").
registry.register(gate) { input, context in
    if input.healthy {
        try context.addChildren([ChildSpec("promote", run: "echo", with: ["promoted": true])])
        return GateResult(added: true)
    }
    try context.cancelGroup(reason: input.reason ?? "unhealthy")
    // The cancel reaches this attempt too: wait for it (a kind stops when it is cancelled).
    while !context.isCancelled { try await Task.sleep(for: .milliseconds(20)) }
    throw CancellationError()
}

// MARK: Command line: --coordinator URL --slots N --labels a,b --name NAME --kill-grace SECONDS --key FILE --server-key FILE

let usage = """
    usage: custom-worker [--coordinator tcp://HOST:PORT] [--slots N] [--labels a,b] [--name NAME] [--kill-grace SECONDS]
                         [--key FILE --server-key FILE-OR-KEY]
    The coordinator defaults to $COHORT_COORDINATOR, then tcp://127.0.0.1:7400.
    --key and --server-key (default $COHORT_KEY_FILE and $COHORT_SERVER_KEY) turn CURVE on: this
    worker's secret key file from `cohort keygen --role worker`, and the coordinator's .pub file.
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("custom-worker: \(message)\n\(usage)\n".utf8))
    exit(64)
}

var configuration = WorkerConfiguration()
if let coordinator = ProcessInfo.processInfo.environment["COHORT_COORDINATOR"], !coordinator.isEmpty {
    configuration.coordinator = coordinator
}
var keyFile: String?
var serverKey: String?
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    if flag == "--help" || flag == "-h" {
        print(usage)
        exit(0)
    }
    guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
    switch flag {
    case "--coordinator": configuration.coordinator = value
    case "--slots":
        guard let slots = Int(value) else { fail("--slots takes a number, not \(value)") }
        configuration.slots = slots
    case "--labels": configuration.labels = value.split(separator: ",").map(String.init)
    case "--name": configuration.name = value
    case "--kill-grace":
        guard let seconds = Double(value) else { fail("--kill-grace takes seconds, not \(value)") }
        configuration.killGrace = .seconds(seconds)
    case "--key": keyFile = value
    case "--server-key": serverKey = value
    default: fail("unknown option \(flag)")
    }
}
do {
    // The same key files, read by the same code, as `cohort worker --key … --server-key …`.
    configuration.curve = try CurveClientKeys.load(key: keyFile, serverKey: serverKey)
    try configuration.validate()
} catch {
    fail("\(error)")
}

// Scripts (and the end-to-end tests) wait for the line `cohort worker NAME ready (session ID)`.
let worker = Worker(configuration: configuration, registry: registry) { ready in
    FileHandle.standardOutput.write(Data("\(ready)\n".utf8))
}
do {
    try await ServiceGroup(cohortServices: [worker], logger: Logger(label: "custom-worker")).run()
} catch {
    FileHandle.standardError.write(Data("custom-worker: \(error)\n".utf8))
    exit(69)
}
