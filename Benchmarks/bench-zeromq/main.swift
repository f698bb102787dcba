// bench-zeromq: raw libzmq baselines over loopback TCP that Cohort's cluster
// benchmarks divide by (docs/performance.md). See `Options.usage`.
import Foundation
import ZeroMQ

struct Report: Codable {
    var libzmq: String
    var mode: String
    var payloadBytes: Int
    var routerDealerRoundTrip: Latency
    var relayRoundTrip: Latency
    var relayPipelined: Throughput
    /// relay p50 / ROUTER-DEALER p50, measured in the same run.
    var relayToRoundTripP50Ratio: Double
}

func run(_ options: Options) throws {
    if let role = options.role {
        try runChild(role: role, connect: options.connect)
    }
    let context = try Context(defaultLinger: .zero)
    let harness: any Harness = options.processes ? ProcessHarness() : ThreadHarness(context: context)
    let payload = [UInt8](repeating: 0x5A, count: options.payloadBytes)

    func client(_ endpoint: String) throws -> Socket {
        let dealer = try context.socket(.dealer)
        try dealer.set(.sendHighWaterMark, to: 0)
        try dealer.set(.receiveHighWaterMark, to: 0)
        try dealer.connect(endpoint)
        return dealer
    }

    let echo = try client(harness.startEcho())
    let direct = try Measure.roundTrips(echo, payload: payload, warmUp: options.warmUp, count: options.roundTrips)
    echo.close()

    let relayClient = try client(harness.startRelay())
    let relayed = try Measure.roundTrips(
        relayClient, payload: payload, warmUp: options.warmUp, count: options.roundTrips)
    _ = try Measure.pipelined(
        relayClient, payload: payload, total: options.pipelinedMessages / 10, window: options.window)
    let pipelined = try Measure.pipelined(
        relayClient, payload: payload, total: options.pipelinedMessages, window: options.window)
    relayClient.close()
    harness.stop()

    let version = ZeroMQ.version
    let report = Report(
        libzmq: "\(version.major).\(version.minor).\(version.patch)",
        mode: options.processes ? "processes" : "threads",
        payloadBytes: options.payloadBytes,
        routerDealerRoundTrip: direct,
        relayRoundTrip: relayed,
        relayPipelined: pipelined,
        relayToRoundTripP50Ratio: relayed.p50Micros / direct.p50Micros
    )
    if options.json {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
    } else {
        printTable(report, options)
    }
}

func printTable(_ report: Report, _ options: Options) {
    func column(_ value: Double) -> String { String(format: "%10.1f", value) }
    func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
    print("bench-zeromq: libzmq \(report.libzmq), tcp://127.0.0.1, \(report.mode), payload \(report.payloadBytes) B")
    print(pad("benchmark", 38) + pad("count", 9) + "    p50 µs    p99 µs   mean µs    max µs      per second")
    for (name, latency) in [
        ("ROUTER/DEALER round trip", report.routerDealerRoundTrip),
        ("relay round trip (2 hops each way)", report.relayRoundTrip),
    ] {
        print(
            pad(name, 38) + pad("\(latency.count)", 9)
                + column(latency.p50Micros) + column(latency.p99Micros) + column(latency.meanMicros)
                + column(latency.maxMicros)
                + String(format: "%16.0f", 1e6 / latency.meanMicros))
    }
    let pipelined = report.relayPipelined
    print(
        pad("relay pipelined (window \(pipelined.window))", 38) + pad("\(pipelined.messages)", 9)
            + String(repeating: " ", count: 40) + String(format: "%16.0f", pipelined.roundTripsPerSecond))
    print(String(format: "relay p50 / ROUTER-DEALER p50 = %.2f", report.relayToRoundTripP50Ratio))
}

do {
    try run(Options(arguments: Array(CommandLine.arguments.dropFirst())))
} catch let error as UsageError {
    if let message = error.message { FileHandle.standardError.write(Data("bench-zeromq: \(message)\n".utf8)) }
    FileHandle.standardError.write(Data((Options.usage + "\n").utf8))
    exit(error.message == nil ? 0 : 64)
} catch {
    FileHandle.standardError.write(Data("bench-zeromq: \(error)\n".utf8))
    exit(1)
}
