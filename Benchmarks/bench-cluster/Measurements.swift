import CohortClient
import Foundation

/// Prints `report` as JSON on stdout (`--json`, for scripts/bench-report): sorted keys, indented.
func printJSON(_ report: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    Swift.print(String(decoding: try encoder.encode(report), as: UTF8.self))
}

/// Latency samples summarised.
struct Latency: Codable {
    var count: Int
    var p50Micros: Double
    var p99Micros: Double
    var maxMicros: Double

    init(_ samples: [Duration]) {
        let micros = samples.map { Double($0.components.seconds) * 1e6 + Double($0.components.attoseconds) / 1e12 }
            .sorted()
        count = micros.count
        func percentile(_ p: Double) -> Double {
            micros.isEmpty ? 0 : micros[min(micros.count - 1, Int((Double(micros.count) * p).rounded(.up)) - 1)]
        }
        p50Micros = percentile(0.50)
        p99Micros = percentile(0.99)
        maxMicros = micros.last ?? 0
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// The measurements, each through a real cluster with the Swift client.
enum Measurements {
    /// Submits `spec` and waits for the group's finished event; returns the elapsed time and the final status.
    static func run(_ client: CohortClient, _ spec: String) async throws -> (Duration, GroupDetail) {
        let start = ContinuousClock.now
        let receipt = try await client.submit(specText: spec, sourceName: "bench.yaml")
        for try await event in client.watch(receipt.id) {
            if case .finished = event { break }
        }
        let elapsed = ContinuousClock.now - start
        return (elapsed, try await client.status(receipt.id))
    }

    static func echoChildren(_ count: Int, name: String, mode: String = "parallel", exclusive: String? = nil) -> String
    {
        var spec = "name: \(name)\nmode: \(mode)\nchildren:\n"
        let lock = exclusive.map { ", exclusive: [\($0)]" } ?? ""
        for index in 0..<count { spec += "  - { name: c\(index), run: echo\(lock) }\n" }
        return spec
    }

    /// `count` no-op children in one group: procedures per second, submit to finished.
    static func throughput(_ client: CohortClient, count: Int) async throws -> Double {
        try await throughputAndCPU(client, count: count, coordinator: nil).perSecond
    }

    /// As ``throughput(_:count:)``, and the CPU (user + system) process `coordinator` spent
    /// per child during the run, in microseconds (nil without a pid).
    static func throughputAndCPU(_ client: CohortClient, count: Int, coordinator: pid_t?) async throws -> (
        perSecond: Double, cpuMicrosPerChild: Double?
    ) {
        _ = try await run(client, echoChildren(min(count, 500), name: "warm-up"))
        let spec = echoChildren(count, name: "throughput")
        let before = try coordinator.map(Growth.processCPU)
        let (elapsed, final) = try await run(client, spec)
        let after = try coordinator.map(Growth.processCPU)
        guard final.state == .succeeded else { throw BenchError("throughput group \(final.state)") }
        let cpu = before.flatMap { start in after.map { ($0 - start) * 1e6 / Double(count) } }
        return (Double(count) / elapsed.seconds, cpu)
    }

    /// A one-child group, submit to its finished event, `count` times.
    static func roundTrips(_ client: CohortClient, count: Int) async throws -> Latency {
        let spec = echoChildren(1, name: "round-trip")
        for _ in 0..<min(50, count) { _ = try await run(client, spec) }
        var samples: [Duration] = []
        for _ in 0..<count { samples.append(try await run(client, spec).0) }
        return Latency(samples)
    }

    /// A sequence of `links` children: seconds per link.
    static func chain(_ client: CohortClient, links: Int) async throws -> Double {
        let (elapsed, final) = try await run(client, echoChildren(links, name: "chain", mode: "sequence"))
        guard final.state == .succeeded else { throw BenchError("chain group \(final.state)") }
        return elapsed.seconds / Double(links)
    }

    /// `children` sharing one category: the gap between one child's end and the next one's
    /// start (coordinator timestamps), p50 and p99.
    static func handoffs(_ client: CohortClient, children: Int) async throws -> Latency {
        let (_, final) = try await run(client, echoChildren(children, name: "handoff", exclusive: "bench-lock"))
        guard final.state == .succeeded else { throw BenchError("handoff group \(final.state)") }
        let ordered = final.children.compactMap { child -> (WireTimestamp, WireTimestamp)? in
            guard let start = child.startedAt, let end = child.finishedAt else { return nil }
            return (start, end)
        }.sorted { $0.0 < $1.0 }
        let gaps = zip(ordered, ordered.dropFirst()).map { previous, next in
            Duration.nanoseconds(max(0, next.0.nanosecondsSinceEpoch - previous.1.nanosecondsSinceEpoch))
        }
        return Latency(gaps)
    }

    /// `children` running `sleep` children; cancel to the group's finished event, `runs` times.
    static func cancels(_ client: CohortClient, children: Int, runs: Int) async throws -> Latency {
        var spec = "name: cancel\nchildren:\n"
        for index in 0..<children { spec += "  - { name: s\(index), run: sleep, with: { seconds: 3600 } }\n" }
        var samples: [Duration] = []
        for _ in 0..<runs {
            let receipt = try await client.submit(specText: spec, sourceName: "cancel.yaml")
            var running = Set<String>()
            var events = client.watch(receipt.id).makeAsyncIterator()
            while running.count < children, let event = try await events.next() {
                switch event {
                case .snapshot(let detail):
                    running = Set(detail.children.filter { $0.state == .running }.map(\.path))
                case .child(let child, _):
                    if child.state == .running { running.insert(child.path) } else { running.remove(child.path) }
                case .finished:
                    throw BenchError("the cancel group finished before it was cancelled")
                }
            }
            let start = ContinuousClock.now
            try await client.cancel(receipt.id)
            while let event = try await events.next() {
                if case .finished = event { break }
            }
            samples.append(ContinuousClock.now - start)
        }
        return Latency(samples)
    }
}
