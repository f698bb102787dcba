import CohortClient
import Foundation

/// `--matrix-comparison N`: a group of `--noops` no-op children written as a `matrix` (one
/// child, expanded by the coordinator) against the same number written out as a list, in the
/// same run and on the same cluster (issue 14). Each run times both, alternating which goes
/// first, submit to finished; the report gives each side's median and the ratio, and the
/// spec's size for each.
enum MatrixComparison {
    static func run(_ options: Options) async throws {
        let cohort = options.binaries + "/cohort"
        let (listed, matrix) = (Measurements.echoChildren(options.noops, name: "listed"), matrixSpec(options.noops))
        print(
            "bench-cluster --matrix-comparison: \(options.noops) no-op children, listed (\(listed.utf8.count) bytes of "
                + "spec) and as a matrix (\(matrix.utf8.count) bytes), journal \(options.noJournal ? "off" : "on"), "
                + "\(options.matrixRuns) runs each, alternating")
        let cluster = try await BenchCluster(cohort: cohort, workers: 2, slots: 8, journal: !options.noJournal)
        defer { cluster.stop() }
        var rates: (listed: [Double], matrix: [Double]) = ([], [])
        _ = try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) { client in
            // Warm-up (the first connection, the workers' first attempts).
            _ = try await Measurements.run(client, Measurements.echoChildren(min(options.noops, 2000), name: "warm-up"))
            for index in 0..<options.matrixRuns {
                for asMatrix in index % 2 == 0 ? [false, true] : [true, false] {
                    let (elapsed, final) = try await Measurements.run(client, asMatrix ? matrix : listed)
                    guard final.state == .succeeded else {
                        throw BenchError("a \(asMatrix ? "matrix" : "listed") group \(final.state)")
                    }
                    let procedures = final.children.count { !$0.isGroup }
                    guard procedures == options.noops else {
                        throw BenchError("expected \(options.noops) procedures, the group had \(procedures)")
                    }
                    let rate = Double(options.noops) / elapsed.seconds
                    if asMatrix { rates.matrix.append(rate) } else { rates.listed.append(rate) }
                    print("  run \(index + 1), \(asMatrix ? "matrix" : "listed"): \(format(rate, 0)) procedures/s")
                }
            }
            return 0
        }
        let (listedRate, matrixRate) = (MetricsComparison.median(rates.listed), MetricsComparison.median(rates.matrix))
        print(
            "medians: listed \(format(listedRate, 0)) procedures/s, matrix \(format(matrixRate, 0)) procedures/s, "
                + "matrix/listed \(format(matrixRate / listedRate, 3))")
    }

    /// One child whose matrix makes `count` combinations: two keys of a×b values (or one key).
    static func matrixSpec(_ count: Int) -> String {
        var first = Int(Double(count).squareRoot())
        while count % first != 0 { first -= 1 }
        let second = count / first
        let values = { (n: Int) in (0..<n).map(String.init).joined(separator: ", ") }
        let axes = first == 1 ? "a: [\(values(count))]" : "a: [\(values(first))], b: [\(values(second))]"
        return "name: matrix\nchildren:\n  - { name: c, run: echo, matrix: { \(axes) } }\n"
    }
}
