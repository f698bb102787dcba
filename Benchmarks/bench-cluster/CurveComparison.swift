import CohortClient
import Foundation
import ZeroMQ

/// Keys for a CURVE bench cluster, made with `cohort keygen` in a temporary directory.
struct BenchKeys {
    let directory: String
    let clientKeys: CurveClientKeys

    init(cohort: String) throws {
        directory = NSTemporaryDirectory() + "bench-keys-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/authorized", withIntermediateDirectories: true)
        for (role, name) in [("coordinator", "coordinator"), ("worker", "bench-worker"), ("client", "bench-client")] {
            let (pid, _) = try BenchCluster.spawn(
                cohort, capturingOutput: false, ["keygen", "--out", directory, "--role", role, "--name", name])
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            guard status == 0 else { throw BenchError("cohort keygen failed for \(name)") }
        }
        for name in ["bench-worker", "bench-client"] {
            try FileManager.default.copyItem(
                atPath: "\(directory)/\(name).pub", toPath: "\(directory)/authorized/\(name).pub")
        }
        let directory = self.directory
        func key(_ file: String, _ word: String) throws -> String {
            let text = try String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let words = line.split(separator: " ")
                if words.count >= 2, words[0] == word { return String(words[1]) }
            }
            throw BenchError("no \(word) key in \(file)")
        }
        clientKeys = CurveClientKeys(
            keyPair: try CurveKeyPair(secretKey: try CurveSecretKey(z85: try key("bench-client.key", "secret"))),
            serverKey: try CurvePublicKey(z85: try key("coordinator.pub", "coordinator")))
    }

    var coordinator: [String] {
        ["--key", "\(directory)/coordinator.key", "--authorized-keys", "\(directory)/authorized"]
    }
    var worker: [String] { ["--key", "\(directory)/bench-worker.key", "--server-key", "\(directory)/coordinator.pub"] }

    func client(_ endpoint: String) -> ClientConfiguration {
        var configuration = ClientConfiguration(coordinator: endpoint)
        configuration.curve = clientKeys
        return configuration
    }
}

/// `bench-cluster --curve`: the same measurements on a plaintext and a CURVE cluster, one run.
enum CurveComparison {
    struct Side: Codable {
        var connect: Latency
        var throughput: Double
        var roundTrip: Latency
    }

    static func measure(_ options: Options, keys: BenchKeys?) async throws -> Side {
        let cluster = try await BenchCluster(cohort: options.binaries + "/cohort", workers: 2, slots: 8, keys: keys)
        defer { cluster.stop() }
        let configuration = keys?.client(cluster.endpoint) ?? ClientConfiguration(coordinator: cluster.endpoint)
        var connects: [Duration] = []
        for _ in 0..<50 {
            let start = ContinuousClock.now
            let client = try await CohortClient.connect(configuration)
            connects.append(ContinuousClock.now - start)
            await client.close()
        }
        return try await CohortClient.withClient(configuration) { client in
            Side(
                connect: Latency(connects),
                throughput: try await Measurements.throughput(client, count: options.noops),
                roundTrip: try await Measurements.roundTrips(client, count: options.roundTrips))
        }
    }

    /// Each figure's best over the runs.
    static func best(_ sides: [Side]) -> Side {
        func pick(_ key: (Side) -> Latency) -> Latency { sides.map(key).min { $0.p50Micros < $1.p50Micros }! }
        return Side(
            connect: pick(\.connect), throughput: sides.map(\.throughput).max()!, roundTrip: pick(\.roundTrip))
    }

    static func run(_ options: Options) async throws {
        let keys = try BenchKeys(cohort: options.binaries + "/cohort")
        defer { try? FileManager.default.removeItem(atPath: keys.directory) }
        // Alternated, twice each, best of two: the machine is shared and noisy.
        var plains: [Side] = []
        var curves: [Side] = []
        for _ in 0..<2 {
            plains.append(try await measure(options, keys: nil))
            curves.append(try await measure(options, keys: keys))
        }
        let plain = best(plains)
        let curve = best(curves)
        if options.json {
            // For scripts/bench-report (docs/performance.md): the best of each side.
            struct Report: Codable {
                var noops: Int
                var plaintext: Side
                var curve: Side
            }
            let report = Report(noops: options.noops, plaintext: plain, curve: curve)
            try printJSON(report)
            return
        }
        func row(_ label: String, _ plain: Double, _ curve: Double, _ unit: String, decimals: Int = 1) {
            print(
                label.padding(toLength: 30, withPad: " ", startingAt: 0)
                    + "\(format(plain, decimals)) \(unit)".padding(toLength: 22, withPad: " ", startingAt: 0)
                    + "\(format(curve, decimals)) \(unit)".padding(toLength: 22, withPad: " ", startingAt: 0)
                    + "\(format(curve / plain, 2))×")
        }
        print(
            "bench-cluster --curve: coordinator + 2 workers, plaintext and CURVE alternated twice in one run, best of each"
        )
        print(
            "measurement".padding(toLength: 30, withPad: " ", startingAt: 0)
                + "plaintext".padding(toLength: 22, withPad: " ", startingAt: 0)
                + "CURVE".padding(toLength: 22, withPad: " ", startingAt: 0) + "CURVE / plaintext")
        row("connect (handshake), p50", plain.connect.p50Micros, curve.connect.p50Micros, "µs")
        row("throughput, \(options.noops) no-ops", plain.throughput, curve.throughput, "/s", decimals: 0)
        row("submit → finished, p50", plain.roundTrip.p50Micros, curve.roundTrip.p50Micros, "µs")
        row("submit → finished, p99", plain.roundTrip.p99Micros, curve.roundTrip.p99Micros, "µs")
    }
}
