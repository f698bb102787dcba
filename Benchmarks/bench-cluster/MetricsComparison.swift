import CohortClient
import Foundation

/// `--metrics-comparison N`: the cost of metrics on no-op throughput, measured in one run
/// (issue 15: less than 5 %). Each run starts a fresh cluster (a coordinator and 2 workers of
/// 8 slots); runs alternate off/on and on/off so that drift (a warming machine, another
/// process) weighs on both sides alike.
enum MetricsComparison {
    static func run(_ options: Options) async throws {
        let cohort = options.binaries + "/cohort"
        var off: [Double] = []
        var on: [Double] = []
        print(
            "bench-cluster --metrics-comparison: \(options.noops) no-op children per run, "
                + "journal \(options.noJournal ? "off" : "on"), \(options.metricsRuns) runs each")
        for index in 0..<options.metricsRuns {
            for metrics in index % 2 == 0 ? [false, true] : [true, false] {
                let cluster = try await BenchCluster(
                    cohort: cohort, workers: 2, slots: 8, journal: !options.noJournal, metrics: metrics)
                defer { cluster.stop() }
                let rate = try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) {
                    client in
                    try await Measurements.throughput(client, count: options.noops)
                }
                cluster.stop()
                if metrics { on.append(rate) } else { off.append(rate) }
                print("  run \(index + 1), metrics \(metrics ? "on " : "off"): \(format(rate, 0)) procedures/s")
            }
        }
        let (medianOff, medianOn) = (median(off), median(on))
        let sumOff = off.reduce(0, +)
        let sumOn = on.reduce(0, +)
        print("median, metrics off: \(format(medianOff, 0)) procedures/s")
        print("median, metrics on:  \(format(medianOn, 0)) procedures/s")
        print(
            "cost of metrics: \(format(100 * (1 - medianOn / medianOff)))% of the median (target < 5%), "
                + "\(format(100 * (1 - sumOn / sumOff)))% of the mean")
        let pairs = zip(off, on).map { 100 * (1 - $1 / $0) }
        print("per run (1 − on/off): " + pairs.map { "\(format($0))%" }.joined(separator: ", "))
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
