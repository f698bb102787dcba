import CohortClient
import Foundation

/// `--journal-comparison N --postgres URL`: the coordinator's journal in SQLite (under a state
/// directory, synchronous FULL, the default) against the same in PostgreSQL (`--journal URL`,
/// e.g. a server on loopback), in the same run: two clusters side by side (a coordinator and
/// 2 workers each), measured alternately, N runs each of no-op throughput (`--noops`
/// children, submit to finished) and of submit → finished latency (`--round-trips` one-child
/// groups, p50 and p99). The report gives each run, the medians and PostgreSQL/SQLite.
enum JournalComparison {
    static func run(_ options: Options) async throws {
        guard let url = options.postgres else {
            throw BenchError("--journal-comparison needs --postgres postgres://USER@HOST:PORT/DATABASE")
        }
        let cohort = options.binaries + "/cohort"
        print(
            "bench-cluster --journal-comparison: SQLite (state dir, synchronous full) against PostgreSQL "
                + "(\(redacted(url))), \(options.noops) no-ops and \(options.roundTrips) round trips per run, "
                + "\(options.journalRuns) runs each, alternating")
        let sqlite = try await BenchCluster(cohort: cohort, workers: 2, slots: 8, journal: true)
        defer { sqlite.stop() }
        let postgres = try await BenchCluster(cohort: cohort, workers: 2, slots: 8, journal: true, journalURL: url)
        defer { postgres.stop() }
        struct Sample {
            var rate: Double
            var latency: Latency
        }
        var samples: [String: [Sample]] = ["sqlite": [], "postgres": []]
        for index in 0..<options.journalRuns {
            for name in index % 2 == 0 ? ["sqlite", "postgres"] : ["postgres", "sqlite"] {
                let cluster = name == "sqlite" ? sqlite : postgres
                let sample = try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) {
                    client in
                    Sample(
                        rate: try await Measurements.throughput(client, count: options.noops),
                        latency: try await Measurements.roundTrips(client, count: options.roundTrips))
                }
                samples[name, default: []].append(sample)
                print(
                    "  run \(index + 1), \(name): \(format(sample.rate, 0)) procedures/s, submit → finished p50 "
                        + "\(format(sample.latency.p50Micros)) µs, p99 \(format(sample.latency.p99Micros)) µs")
            }
        }
        func medians(_ name: String) -> (rate: Double, p50: Double, p99: Double) {
            let list = samples[name] ?? []
            return (
                MetricsComparison.median(list.map(\.rate)), MetricsComparison.median(list.map(\.latency.p50Micros)),
                MetricsComparison.median(list.map(\.latency.p99Micros))
            )
        }
        let (s, p) = (medians("sqlite"), medians("postgres"))
        print(
            "medians: SQLite \(format(s.rate, 0)) procedures/s, p50 \(format(s.p50)) µs, p99 \(format(s.p99)) µs; "
                + "PostgreSQL \(format(p.rate, 0)) procedures/s, p50 \(format(p.p50)) µs, p99 \(format(p.p99)) µs")
        print(
            "PostgreSQL/SQLite: throughput \(format(p.rate / s.rate, 3)), p50 latency \(format(p.p50 / s.p50, 3)), "
                + "p99 latency \(format(p.p99 / s.p99, 3))")
    }

    static func redacted(_ url: String) -> String {
        url.replacingOccurrences(of: #"(://[^:@/]*):[^@/]*@"#, with: "$1@", options: .regularExpression)
    }
}
