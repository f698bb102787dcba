import CohortClient
import Foundation

/// `--metrics-comparison N`: the cost of metrics on no-op throughput, measured in one run
/// (issue 15: less than 5 %). Each run starts a fresh cluster (a coordinator and 2 workers of
/// 8 slots) and runs `--noops` no-op children 3 times; runs alternate off/on and on/off so
/// that drift (a warming machine, another process) weighs on both sides alike.
///
/// Besides the rate, it reads the coordinator's CPU time from /proc (nanoseconds on the CPU,
/// per thread, from `schedstat`): its busiest thread's (the loop's) and the whole process's
/// per child. On a
/// busy machine the rate swings with other processes; the CPU time per child is what the
/// metrics add to the coordinator's work, and barely moves with the machine's load.
enum MetricsComparison {
    struct Sample {
        var rate: Double
        /// Nanoseconds of the busiest thread (the coordinator's loop) per child.
        var loopPerChild: Double
        /// Nanoseconds of every thread of the coordinator per child.
        var processPerChild: Double
    }

    static let rounds = 3

    static func run(_ options: Options) async throws {
        let cohort = options.binaries + "/cohort"
        var off: [Sample] = []
        var on: [Sample] = []
        print(
            "bench-cluster --metrics-comparison: \(rounds) × \(options.noops) no-op children per run, "
                + "journal \(options.noJournal ? "off" : "on"), \(options.metricsRuns) runs each")
        for index in 0..<options.metricsRuns {
            for metrics in index % 2 == 0 ? [false, true] : [true, false] {
                let cluster = try await BenchCluster(
                    cohort: cohort, workers: 2, slots: 8, journal: !options.noJournal, metrics: metrics)
                defer { cluster.stop() }
                let sample = try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) {
                    client in
                    // Warm-up (and the first connection) before the clock starts.
                    _ = try await Measurements.throughput(client, count: min(options.noops, 2000))
                    let before = CPUTime(pid: cluster.coordinatorPID)
                    var rates: [Double] = []
                    for _ in 0..<rounds {
                        rates.append(try await Measurements.throughput(client, count: options.noops))
                    }
                    let after = CPUTime(pid: cluster.coordinatorPID)
                    // Each round also runs a 500-child warm-up group.
                    let children = Double(rounds * (options.noops + min(options.noops, 500)))
                    return Sample(
                        rate: rates.reduce(0, +) / Double(rates.count),
                        loopPerChild: Double(after.busiest(since: before)) / children,
                        processPerChild: Double(after.process(since: before)) / children)
                }
                cluster.stop()
                if metrics { on.append(sample) } else { off.append(sample) }
                print(
                    "  run \(index + 1), metrics \(metrics ? "on " : "off"): \(format(sample.rate, 0)) procedures/s, "
                        + "loop \(format(sample.loopPerChild / 1000, 2)) µs/child, "
                        + "process \(format(sample.processPerChild / 1000, 2)) µs/child")
            }
        }
        func report(_ what: String, _ value: (Sample) -> Double, higherIsBetter: Bool) {
            let (medianOff, medianOn) = (median(off.map(value)), median(on.map(value)))
            let cost = higherIsBetter ? 1 - medianOn / medianOff : medianOn / medianOff - 1
            print(
                what.padding(toLength: 30, withPad: " ", startingAt: 0)
                    + "off \(format(medianOff, 2))  on \(format(medianOn, 2))"
                    + "  cost \(format(100 * cost))%")
        }
        print("medians (target: cost < 5 %):")
        report("throughput (procedures/s)", \.rate, higherIsBetter: true)
        report("loop CPU per child (ns)", \.loopPerChild, higherIsBetter: false)
        report("process CPU per child (ns)", \.processPerChild, higherIsBetter: false)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}

/// A process's time on the CPU so far, in nanoseconds, per thread, from
/// /proc/PID/task/*/schedstat (threads that ended are not counted; the coordinator's live as
/// long as it does).
struct CPUTime {
    var threads: [String: UInt64] = [:]

    init(pid: pid_t) {
        let tasks = "/proc/\(pid)/task"
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            guard let stat = try? String(contentsOfFile: "\(tasks)/\(tid)/schedstat", encoding: .utf8),
                let first = stat.split(separator: " ").first, let nanoseconds = UInt64(first)
            else { continue }
            threads[tid] = nanoseconds
        }
    }

    /// Every thread's CPU time since `earlier`.
    func process(since earlier: CPUTime) -> UInt64 {
        threads.reduce(0) { $0 + ($1.value - min(earlier.threads[$1.key] ?? 0, $1.value)) }
    }

    /// The busiest thread's CPU time since `earlier`: under a no-op load, the coordinator's
    /// loop thread (its name is not visible in /proc).
    func busiest(since earlier: CPUTime) -> UInt64 {
        threads.map { $0.value - min(earlier.threads[$0.key] ?? 0, $0.value) }.max() ?? 0
    }
}
