// bench-cluster: Cohort's cluster measured through real processes, against the raw ZeroMQ
// relay measured in the same run (docs/performance.md). See `Options.usage`.
import CohortClient
import Foundation

struct Baseline: Codable {
    var relayP50Micros: Double
    var relayPipelinedPerSecond: Double
}

struct Report: Codable {
    var baseline: Baseline?
    var throughputPerSecond: Double
    /// The coordinator's CPU per child during that run, in microseconds.
    var coordinatorCPUPerChildMicros: Double?
    /// The same throughput with the coordinator's journal off (same run); nil with --no-journal.
    var throughputWithoutJournalPerSecond: Double?
    var roundTrip: Latency
    var chainPerLinkMicros: Double
    var cancel: Latency
    var handoff: Latency
}

/// `bench-zeromq --processes --json`: the two-hop relay's p50 and pipelined rate.
func measureBaseline(_ options: Options) throws -> Baseline {
    let (pid, output) = try BenchCluster.spawn(options.binaries + "/bench-zeromq", ["--processes", "--json"])
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    defer { try? FileManager.default.removeItem(atPath: output) }
    let data = try Data(contentsOf: URL(fileURLWithPath: output))
    guard let report = try JSONSerialization.jsonObject(with: data) as? [String: Any],
        let relay = report["relayRoundTrip"] as? [String: Any], let p50 = relay["p50Micros"] as? Double,
        let pipelined = report["relayPipelined"] as? [String: Any],
        let rate = pipelined["roundTripsPerSecond"] as? Double
    else { throw BenchError("cannot read bench-zeromq's report") }
    return Baseline(relayP50Micros: p50, relayPipelinedPerSecond: rate)
}

func measure(_ options: Options) async throws -> Report {
    let cohort = options.binaries + "/cohort"
    let baseline = options.skipBaseline ? nil : try measureBaseline(options)

    var withoutJournal: Double?
    if !options.noJournal {
        let bare = try await BenchCluster(cohort: cohort, workers: 2, slots: 8, journal: false)
        defer { bare.stop() }
        withoutJournal = try await CohortClient.withClient(ClientConfiguration(coordinator: bare.endpoint)) { client in
            try await Measurements.throughput(client, count: options.noops)
        }
        bare.stop()
    }

    let two = try await BenchCluster(cohort: cohort, workers: 2, slots: 8, journal: !options.noJournal)
    defer { two.stop() }
    let coordinator = two.coordinatorPID
    let (throughput, roundTrip, chain, handoff) = try await CohortClient.withClient(
        ClientConfiguration(coordinator: two.endpoint)
    ) { client in
        (
            try await Measurements.throughputAndCPU(client, count: options.noops, coordinator: coordinator),
            try await Measurements.roundTrips(client, count: options.roundTrips),
            try await Measurements.chain(client, links: options.chain),
            try await Measurements.handoffs(client, children: options.handoffs)
        )
    }
    two.stop()

    let slots = (options.cancelChildren + 3) / 4
    let four = try await BenchCluster(cohort: cohort, workers: 4, slots: slots, journal: !options.noJournal)
    defer { four.stop() }
    let cancel = try await CohortClient.withClient(ClientConfiguration(coordinator: four.endpoint)) { client in
        try await Measurements.cancels(client, children: options.cancelChildren, runs: options.cancelRuns)
    }
    return Report(
        baseline: baseline, throughputPerSecond: throughput.perSecond,
        coordinatorCPUPerChildMicros: throughput.cpuMicrosPerChild, throughputWithoutJournalPerSecond: withoutJournal,
        roundTrip: roundTrip, chainPerLinkMicros: chain * 1e6,
        cancel: cancel, handoff: handoff)
}

func format(_ value: Double, _ decimals: Int = 1) -> String {
    let scale = pow(10, Double(decimals))
    return String((value * scale).rounded() / scale)
}

func printTable(_ report: Report, _ options: Options) {
    let relay = report.baseline?.relayP50Micros
    let pipelined = report.baseline?.relayPipelinedPerSecond
    func ratio(_ value: Double, _ base: Double?, _ suffix: String = "") -> String {
        base.map { "\(format(value / $0, 2))×\(suffix)" } ?? "-"
    }
    func row(_ label: String, _ value: String, _ ratio: String, _ target: String) {
        print(
            label.padding(toLength: 34, withPad: " ", startingAt: 0)
                + value.padding(toLength: 26, withPad: " ", startingAt: 0)
                + ratio.padding(toLength: 22, withPad: " ", startingAt: 0) + target)
    }
    print("bench-cluster: coordinator + 2 workers (cancel: 4 workers); build in release mode for real numbers")
    if let relay, let pipelined {
        print(
            "baseline, bench-zeromq --processes: relay p50 \(format(relay)) µs, pipelined \(format(pipelined, 0)) round trips/s"
        )
    }
    row("measurement", "value", "ratio to the relay", "target")
    row(
        "throughput, \(options.noops) no-ops\(options.noJournal ? ", no journal" : ", journal on")",
        "\(format(report.throughputPerSecond, 0)) procedures/s",
        ratio(report.throughputPerSecond, pipelined, " of pipelined"), "≥ 50000/s and ≥ 0.2×")
    if let cpu = report.coordinatorCPUPerChildMicros {
        row(
            "  coordinator CPU per child", "\(format(cpu, 1)) µs",
            ratio(cpu, pipelined.map { 1e6 / $0 }, " of a pipelined trip"), "≤ 4×")
    }
    if let bare = report.throughputWithoutJournalPerSecond {
        row(
            "  same, journal off", "\(format(bare, 0)) procedures/s",
            "journal costs \(format(100 * (1 - report.throughputPerSecond / bare)))%", "")
    }
    row(
        "submit → finished, p50", "\(format(report.roundTrip.p50Micros)) µs", ratio(report.roundTrip.p50Micros, relay),
        "≤ 1.5×")
    row("submit → finished, p99", "\(format(report.roundTrip.p99Micros)) µs", "", "≤ 1000 µs")
    row(
        "chain of \(options.chain), per link", "\(format(report.chainPerLinkMicros)) µs",
        ratio(report.chainPerLinkMicros, relay), "≤ 1.5×")
    row(
        "cancel \(options.cancelChildren) running, p50 / p99",
        "\(format(report.cancel.p50Micros / 1000, 2)) / \(format(report.cancel.p99Micros / 1000, 2)) ms", "",
        "p99 ≤ 20 ms")
    row(
        "lock handoff, p50", "\(format(report.handoff.p50Micros)) µs", ratio(report.handoff.p50Micros, relay),
        "≤ 200 µs")
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
if options.metricsRuns > 0 {
    do {
        try await MetricsComparison.run(options)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("bench-cluster: \(error)\n".utf8))
        exit(70)
    }
}
if options.matrixRuns > 0 {
    do {
        try await MatrixComparison.run(options)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("bench-cluster: \(error)\n".utf8))
        exit(70)
    }
}
if options.journalRuns > 0 {
    do {
        try await JournalComparison.run(options)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("bench-cluster: \(error)\n".utf8))
        exit(70)
    }
}
if options.growth {
    do {
        exit(try await Growth.run(options))
    } catch {
        FileHandle.standardError.write(Data("bench-cluster: \(error)\n".utf8))
        exit(70)
    }
}
if options.curve {
    do {
        try await CurveComparison.run(options)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("bench-cluster: \(error)\n".utf8))
        exit(70)
    }
}
do {
    let report = try await measure(options)
    if options.json {
        try printJSON(report)
    } else {
        printTable(report, options)
    }
    if let limit = options.cpuLimit {
        guard let cpu = report.coordinatorCPUPerChildMicros, let pipelined = report.baseline?.relayPipelinedPerSecond
        else {
            FileHandle.standardError.write(Data("bench-cluster: --cpu-limit needs the relay baseline\n".utf8))
            exit(64)
        }
        let multiple = cpu / (1e6 / pipelined)
        guard multiple <= limit else {
            FileHandle.standardError.write(
                Data(
                    ("bench-cluster: coordinator CPU per child \(format(cpu)) µs is \(format(multiple, 2))× the relay's "
                        + "time per pipelined round trip, over the limit \(limit)×\n").utf8))
            exit(1)
        }
    }
} catch {
    FileHandle.standardError.write(Data("bench-cluster: \(error)\n".utf8))
    exit(70)
}
