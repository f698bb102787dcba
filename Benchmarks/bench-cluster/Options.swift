import Foundation

/// bench-cluster's command line.
struct Options {
    var json = false
    var noops = 10_000
    var roundTrips = 300
    var chain = 200
    var cancelChildren = 100
    var cancelRuns = 10
    var handoffs = 200
    var skipBaseline = false
    /// Run the coordinator without its journal (and skip the journal's cost comparison).
    var noJournal = false
    /// Compare a plaintext and a CURVE cluster instead of the usual measurements.
    var curve = false
    /// Compare no-op throughput with metrics off and on (this many runs of each, alternating)
    /// instead of the usual measurements; 0: not.
    var metricsRuns = 0
    /// Compare `--noops` children written as a matrix with the same written as a list (this
    /// many runs of each, alternating) instead of the usual measurements; 0: not.
    var matrixRuns = 0
    /// Compare the journal in SQLite and in PostgreSQL (this many runs of each, alternating)
    /// instead of the usual measurements; 0: not.
    var journalRuns = 0
    /// The PostgreSQL database of `--journal-comparison`.
    var postgres: String?
    /// A second PostgreSQL database for `--journal-comparison`'s third cluster, two
    /// `--standby` coordinators (nil: that cluster is not measured).
    var postgresStandby: String?
    /// Measure each path at two sizes instead of the usual measurements (`Growth`).
    var growth = false
    var growthSizes = (2_500, 10_000)
    var growthLimit = 1.3
    /// Fail (exit 1) when the coordinator's CPU per no-op child exceeds this many times the
    /// relay's time per pipelined round trip, measured in the same run; nil: no gate.
    var cpuLimit: Double?
    /// Directory holding `cohort` and `bench-zeromq` (default: this executable's).
    var binaries: String = Options.ownDirectory

    static let usage = """
        usage: bench-cluster [--json] [--noops N] [--round-trips N] [--chain N] [--cancel N] [--cancel-runs N]
                             [--handoffs N] [--no-baseline] [--no-journal] [--curve] [--metrics-comparison N]
                             [--matrix-comparison N] [--journal-comparison N --postgres URL [--postgres-standby URL2]]
                             [--growth [--growth-sizes SMALL,LARGE] [--growth-limit X]] [--cpu-limit X]
                             [--binaries DIR]
        Starts real `cohort` processes on 127.0.0.1 (a coordinator and 2 workers; 4 for the cancel
        measurement) and measures, in one run, against the raw ZeroMQ relay of `bench-zeromq --processes`:
          throughput   N no-op (echo) children in one group, submit to finished (procedures/s), journal on;
                       and the same without the journal (a second coordinator, --no-journal), for its cost
        --no-journal runs every measurement without the journal.
          round trip   a one-child group, submit to its finished event (p50, p99)
          chain        a sequence of N children (per link)
          cancel       N running `sleep` children on 4 workers, cancel to finished (p50, p99)
          handoff      N children sharing one exclusive category: a child's end to the next one's start (p50)
        --curve instead compares a plaintext and a CURVE cluster (docs/security.md) in the same run:
        connection setup, throughput and round trip, as the CURVE/plaintext ratio.
        --metrics-comparison N instead measures no-op throughput (--noops children) N times with metrics off and N
        times with them on (coordinator and workers serving Prometheus metrics, --metrics 127.0.0.1:0), alternating
        off/on and on/off, and prints each run, the medians and the cost of metrics (1 − on/off), target < 5 %;
        journal on unless --no-journal.
        --matrix-comparison N instead runs, on one cluster, --noops no-op children written as one `matrix` child
        (expanded by the coordinator) and the same number written out as a list, N times each, alternating, and
        prints each run, the medians and the matrix/listed ratio.
        --journal-comparison N --postgres URL instead runs two clusters side by side, one journaling in SQLite (a
        state directory, the default) and one in PostgreSQL (--journal URL, e.g. a server on loopback), and measures
        each N times, alternating: no-op throughput (--noops) and submit → finished latency (--round-trips, p50/p99);
        prints each run, the medians and PostgreSQL/SQLite. --postgres-standby URL2 (a database of its own) adds a
        third cluster, the HA set-up: two `--standby` coordinators on URL2, the first leading (and renewing its lease
        while it serves), workers and client given both endpoints; the order of the three rotates every run. With
        --json, every run of each cluster as one JSON object (for scripts/bench-report).
        --cpu-limit X fails (exit 1) when the coordinator's CPU per no-op child (user + system, /proc, during the
        throughput run) exceeds X times the relay's time per pipelined round trip of the same run.
        --growth instead measures every path whose work grows with a group's size at two sizes (default 2500 and
        10000 children; --growth-sizes SMALL,LARGE), each on a cluster of its own with a journal and a dashboard:
        submit → finished (wall and coordinator CPU), status, the first watch snapshot, the dashboard's group API,
        adding 1,000 children to a running group, a map over N items, a matrix of N cells, rerun, the coordinator's
        restart on its journal, prune; cost per child at each size, and fails (exit 1) when the larger's exceeds the
        smaller's by more than --growth-limit (1.3), on each of up to 4 attempts (a path over the limit is
        measured again, each size keeping its best).
        Build in release mode (one product per call): for p in cohort bench-zeromq bench-cluster; do swift build -c release --product $p; done
        """

    static var ownDirectory: String {
        let path =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (path as NSString).deletingLastPathComponent
    }

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        func number(_ flag: String) -> Int {
            guard let text = rest.popFirst(), let value = Int(text), value > 0 else {
                fail("\(flag) takes a positive number")
            }
            return value
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--json": options.json = true
            case "--noops": options.noops = number(flag)
            case "--round-trips": options.roundTrips = number(flag)
            case "--chain": options.chain = number(flag)
            case "--cancel": options.cancelChildren = number(flag)
            case "--cancel-runs": options.cancelRuns = number(flag)
            case "--handoffs": options.handoffs = number(flag)
            case "--no-baseline": options.skipBaseline = true
            case "--no-journal": options.noJournal = true
            case "--curve": options.curve = true
            case "--metrics-comparison": options.metricsRuns = number(flag)
            case "--matrix-comparison": options.matrixRuns = number(flag)
            case "--journal-comparison": options.journalRuns = number(flag)
            case "--postgres":
                guard let url = rest.popFirst() else { fail("--postgres takes a postgres:// URL") }
                options.postgres = url
            case "--postgres-standby":
                guard let url = rest.popFirst() else { fail("--postgres-standby takes a postgres:// URL") }
                options.postgresStandby = url
            case "--growth": options.growth = true
            case "--growth-sizes":
                let sizes = (rest.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
                guard sizes.count == 2, sizes[0] > 0, sizes[1] > sizes[0] else {
                    fail("--growth-sizes takes SMALL,LARGE, two whole numbers with SMALL < LARGE")
                }
                options.growthSizes = (sizes[0], sizes[1])
            case "--growth-limit":
                guard let value = rest.popFirst().flatMap(Double.init), value >= 1 else {
                    fail("--growth-limit takes a number of at least 1")
                }
                options.growthLimit = value
            case "--cpu-limit":
                guard let value = rest.popFirst().flatMap(Double.init), value > 0 else {
                    fail("--cpu-limit takes a positive number")
                }
                options.cpuLimit = value
            case "--binaries":
                guard let directory = rest.popFirst() else { fail("--binaries takes a directory") }
                options.binaries = directory
            case "-h", "--help":
                print(usage)
                exit(0)
            default: fail("unknown option \(flag)")
            }
        }
        return options
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("bench-cluster: \(message)\n\(usage)\n".utf8))
        exit(64)
    }
}
