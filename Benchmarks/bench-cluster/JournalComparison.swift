import CohortClient
import Foundation

/// `--journal-comparison N --postgres URL [--postgres-standby URL2]`: the coordinator's journal
/// in SQLite (under a state directory, synchronous FULL, the default) against the same in
/// PostgreSQL (`--journal URL`, e.g. a server on loopback), and with `--postgres-standby` against
/// the HA set-up too (two `--standby` coordinators on URL2, a database of its own: the leader
/// renews its lease while it serves, the standby tries for it beside it; workers and the client
/// are given both), in the same run: the clusters side by side (coordinators and 2 workers
/// each), measured in turn (the order rotated every run), N runs each of no-op throughput
/// (`--noops` children, submit to finished) and of submit → finished latency (`--round-trips`
/// one-child groups, p50 and p99). The report gives each run, the medians and the ratios
/// against SQLite.
enum JournalComparison {
    /// One run of one cluster.
    struct Sample: Codable {
        var rate: Double
        var p50Micros: Double
        var p99Micros: Double
    }

    /// `--json`: every run's samples per cluster (`sqlite`, `postgres`, `postgres-standby`), for
    /// scripts/bench-report (docs/performance.md).
    struct Report: Codable {
        var noops: Int
        var roundTrips: Int
        var runs: Int
        var samples: [String: [Sample]]
    }

    static func run(_ options: Options) async throws {
        guard let url = options.postgres else {
            throw BenchError("--journal-comparison needs --postgres postgres://USER@HOST:PORT/DATABASE")
        }
        if let standbyURL = options.postgresStandby, standbyURL == url {
            throw BenchError("--postgres-standby needs a database of its own, not the one of --postgres")
        }
        let cohort = options.binaries + "/cohort"
        // With --json only the report is printed, at the end.
        let print: (String) -> Void = options.json ? { _ in } : { Swift.print($0) }
        let standbyText = options.postgresStandby.map { " and two --standby coordinators on \(redacted($0))" } ?? ""
        print(
            "bench-cluster --journal-comparison: SQLite (state dir, synchronous full) against PostgreSQL "
                + "(\(redacted(url)))\(standbyText), \(options.noops) no-ops and \(options.roundTrips) round trips "
                + "per run, \(options.journalRuns) runs each, the order rotated every run")
        var clusters: [(name: String, cluster: BenchCluster)] = []
        defer { for (_, cluster) in clusters { cluster.stop() } }
        clusters.append(("sqlite", try await BenchCluster(cohort: cohort, workers: 2, slots: 8, journal: true)))
        clusters.append(
            ("postgres", try await BenchCluster(cohort: cohort, workers: 2, slots: 8, journal: true, journalURL: url)))
        if let standbyURL = options.postgresStandby {
            clusters.append(
                (
                    "postgres-standby",
                    try await BenchCluster(
                        cohort: cohort, workers: 2, slots: 8, journal: true, journalURL: standbyURL, standby: true)
                ))
        }
        var samples: [String: [Sample]] = [:]
        for index in 0..<options.journalRuns {
            let order = clusters[(index % clusters.count)...] + clusters[..<(index % clusters.count)]
            for (name, cluster) in order {
                let sample = try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) {
                    client in
                    let rate = try await Measurements.throughput(client, count: options.noops)
                    let latency = try await Measurements.roundTrips(client, count: options.roundTrips)
                    return Sample(rate: rate, p50Micros: latency.p50Micros, p99Micros: latency.p99Micros)
                }
                samples[name, default: []].append(sample)
                print(
                    "  run \(index + 1), \(name): \(format(sample.rate, 0)) procedures/s, submit → finished p50 "
                        + "\(format(sample.p50Micros)) µs, p99 \(format(sample.p99Micros)) µs")
            }
        }
        if options.json {
            let report = Report(
                noops: options.noops, roundTrips: options.roundTrips, runs: options.journalRuns, samples: samples)
            try printJSON(report)
            return
        }
        func medians(_ name: String) -> (rate: Double, p50: Double, p99: Double) {
            let list = samples[name] ?? []
            return (
                MetricsComparison.median(list.map(\.rate)), MetricsComparison.median(list.map(\.p50Micros)),
                MetricsComparison.median(list.map(\.p99Micros))
            )
        }
        let titles = ["sqlite": "SQLite", "postgres": "PostgreSQL", "postgres-standby": "PostgreSQL standby leader"]
        let s = medians("sqlite")
        print(
            "medians: "
                + clusters.map { name, _ in
                    let m = medians(name)
                    return "\(titles[name] ?? name) \(format(m.rate, 0)) procedures/s, p50 \(format(m.p50)) µs, "
                        + "p99 \(format(m.p99)) µs"
                }.joined(separator: "; "))
        for (name, _) in clusters.dropFirst() {
            let m = medians(name)
            print(
                "\(titles[name] ?? name)/SQLite: throughput \(format(m.rate / s.rate, 3)), p50 latency "
                    + "\(format(m.p50 / s.p50, 3)), p99 latency \(format(m.p99 / s.p99, 3))")
        }
    }

    static func redacted(_ url: String) -> String {
        url.replacingOccurrences(of: #"(://[^:@/]*):[^@/]*@"#, with: "$1@", options: .regularExpression)
    }
}
