import CohortClient
import CohortMetrics
import CoreMetrics
import Foundation
import Metrics
import Prometheus

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
    struct Sample: Codable {
        var rate: Double
        /// Nanoseconds of the busiest thread (the coordinator's loop) per child.
        var loopPerChild: Double
        /// Nanoseconds of every thread of the coordinator per child.
        var processPerChild: Double
    }

    static let rounds = 3

    /// `--json`: every run's samples, for scripts/bench-report (docs/performance.md).
    struct Report: Codable {
        var noops: Int
        var rounds: Int
        var journal: Bool
        var off: [Sample]
        var on: [Sample]
        /// What the metrics do on the loop's thread for one child, timed alone (median of 5).
        var instrumentationNanosPerChild: Double
    }

    static func run(_ options: Options) async throws {
        let cohort = options.binaries + "/cohort"
        var off: [Sample] = []
        var on: [Sample] = []
        // With --json only the report is printed, at the end.
        let print: (String) -> Void = options.json ? { _ in } : { Swift.print($0) }
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
        let alone = median((0..<5).map { _ in instrumentationPerChild() })
        if options.json {
            let report = Report(
                noops: options.noops, rounds: rounds, journal: !options.noJournal, off: off, on: on,
                instrumentationNanosPerChild: alone)
            try printJSON(report)
            return
        }
        print(
            "instrumentation alone, what the coordinator's metrics do on the loop's thread for one no-op child "
                + "(8 message counts, 3 observations; thread CPU time, median of 5): \(format(alone, 0)) ns per child")
        print("medians (target: cost < 5 %):")
        report("throughput (procedures/s)", \.rate, higherIsBetter: true)
        report("loop CPU per child (ns)", \.loopPerChild, higherIsBetter: false)
        report("process CPU per child (ns)", \.processPerChild, higherIsBetter: false)
    }

    /// What the coordinator's metrics do for one no-op child, on the loop's thread, timed
    /// alone, the way `CoordinatorMetrics` does it: messages counted by family (dispatch out,
    /// start and result in, the client's submit, watch events and replies: batched in a real
    /// run, so an upper bound) and the dispatch in plain integers, the observations appended
    /// and drained (the child's count by kind, the two latencies kept for the histograms), the
    /// counters flushed now and then, the histograms recorded on another thread (not timed: it
    /// is not the loop's). Nanoseconds of the loop's thread per child.
    static func instrumentationPerChild() -> Double {
        let registry = PrometheusCollectorRegistry()
        let tally = Tally(factory: CohortPrometheus.makeFactory(registry: registry))
        let count = 2_000_000
        let kind = CommandLine.arguments.isEmpty ? "shell" : "echo"
        let start = threadCPUNanoseconds()
        for index in 0..<count {
            tally.child(index, kind: kind)
            if index % 64 == 63 { tally.drain() }
            if index % 16384 == 16383 { tally.flush() }
        }
        tally.flush()
        let elapsed = threadCPUNanoseconds() - start
        // Keep the work observable.
        if registry.emitToString().isEmpty { print("") }
        return Double(elapsed) / Double(count)
    }

    /// The calling thread's CPU time (not the wall clock: on a busy machine the thread waits
    /// for a core, which is not the instrumentation's cost).
    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The counting of ``instrumentationPerChild()``, shaped like `CoordinatorMetrics`.
    final class Tally {
        enum Observation {
            case finished(String)
            case started(Int64)
            case ran(Int64)
        }
        struct Key: Hashable {
            var kind: String
            var succeeded: Bool
        }
        let received: CoreMetrics.Counter
        let sent: CoreMetrics.Counter
        let dispatched: CoreMetrics.Counter
        let startDelay: CoreMetrics.Timer
        let runTime: CoreMetrics.Timer
        var finished: [Key: CoreMetrics.Counter] = [:]
        let factory: any MetricsFactory
        var pendingIn = [Int](repeating: 0, count: 5)
        var pendingOut = [Int](repeating: 0, count: 5)
        var pendingDispatched = 0
        var pendingFinished: [Key: Int] = [:]
        var observations: [Observation] = []
        var pendingStarts: [Int64] = []
        var pendingRuns: [Int64] = []
        let recorder = DispatchQueue(label: "bench.metrics")

        init(factory: any MetricsFactory) {
            self.factory = factory
            received = CoreMetrics.Counter(
                label: "cohort_messages_received_total", dimensions: [("family", "worker_message")], factory: factory)
            sent = CoreMetrics.Counter(
                label: "cohort_messages_sent_total", dimensions: [("family", "coordinator_to_worker")],
                factory: factory)
            dispatched = CoreMetrics.Counter(
                label: "cohort_attempts_dispatched_total", dimensions: [], factory: factory)
            startDelay = CoreMetrics.Timer(
                label: "cohort_attempt_start_delay_seconds", dimensions: [], factory: factory)
            runTime = CoreMetrics.Timer(label: "cohort_attempt_run_seconds", dimensions: [], factory: factory)
        }

        @inline(never)
        func child(_ index: Int, kind: String) {
            pendingOut[4] &+= 1  // dispatch
            pendingIn[3] &+= 1  // started
            pendingIn[3] &+= 1  // results
            pendingIn[1] &+= 1  // the client's submit, per child at most
            pendingOut[2] &+= 1  // replies and watch events
            pendingOut[2] &+= 1
            pendingOut[2] &+= 1
            pendingDispatched &+= 1
            observations.append(.started(Int64(index & 4095) * 1000))
            observations.append(.ran(Int64(index & 1023) * 10_000))
            observations.append(.finished(kind))
        }

        func drain() {
            for observation in observations {
                switch observation {
                case .started(let nanoseconds): pendingStarts.append(nanoseconds)
                case .ran(let nanoseconds): pendingRuns.append(nanoseconds)
                case .finished(let kind): pendingFinished[Key(kind: kind, succeeded: true), default: 0] &+= 1
                }
            }
            observations.removeAll(keepingCapacity: true)
        }

        func flush() {
            received.increment(by: pendingIn.reduce(0, +))
            sent.increment(by: pendingOut.reduce(0, +))
            for index in 0..<5 {
                pendingIn[index] = 0
                pendingOut[index] = 0
            }
            dispatched.increment(by: pendingDispatched)
            pendingDispatched = 0
            for (key, count) in pendingFinished {
                if finished[key] == nil {
                    finished[key] = CoreMetrics.Counter(
                        label: "cohort_children_finished_total", dimensions: [("kind", key.kind)], factory: factory)
                }
                finished[key]?.increment(by: count)
            }
            pendingFinished.removeAll(keepingCapacity: true)
            let (starts, runs, startDelay, runTime) = (pendingStarts, pendingRuns, startDelay, runTime)
            pendingStarts = []
            pendingRuns = []
            recorder.async {
                for nanoseconds in starts { startDelay.recordNanoseconds(nanoseconds) }
                for nanoseconds in runs { runTime.recordNanoseconds(nanoseconds) }
            }
        }
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
