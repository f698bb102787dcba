import CohortCore
import Foundation
import Testing

/// Test 1, crash safety: while 50 `shell` children run on 3 workers, the coordinator is killed
/// with SIGKILL at a random moment of the run (after a random number of children completed,
/// before the group finished) and started again on the same endpoint and state directory.
/// The group finishes `succeeded`; every child ran once, or again as a new attempt recorded as
/// such. `scripts/crash-rounds N` runs more rounds (`COHORT_CRASH_ROUNDS`).
extension EndToEnd {
    @Suite struct DurabilityCrash {
        static var rounds: Int { ProcessInfo.processInfo.environment["COHORT_CRASH_ROUNDS"].flatMap(Int.init) ?? 3 }

        @Test func aGroupSurvivesTheCoordinatorKilledAtRandomMoments() throws {
            // A short grace, so attempts whose result died with the coordinator are retried soon.
            let config = try Scratch.write("restartGrace: 3s\n", name: "coordinator.yaml")
            let cluster = try Cluster(coordinatorArguments: ["--config", config])
            defer { cluster.stop() }
            try cluster.addWorkers(3, slots: 4)
            var generator = SystemRandomNumberGenerator()
            for round in 1...Self.rounds {
                let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
                try crashRound(cluster, round: round, seed: seed)
            }
        }

        /// The lines of the done-file at `path` (0 while it does not exist).
        static func lineCount(_ path: String) -> Int {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").reduce(0) { $1 == "\n" ? $0 + 1 : $0 }
        }

        /// One group, one kill at a moment drawn from `seed` (printed, to replay a failure).
        func crashRound(_ cluster: Cluster, round: Int, seed: UInt64) throws {
            var random = SplitMix64(seed: seed)
            let log = Scratch.file("done-\(round).log")
            let children = (1...50).map { index in
                // Each child takes 50–250 ms, then appends "name attempt" to the log.
                let pause = String(format: "0.%02d", 5 + Int(random.next() % 21))
                return "  - { name: c\(index), run: shell, with: { command: [sh, -c, "
                    + "'sleep \(pause); echo \"$COHORT_CHILD $COHORT_ATTEMPT\" >> \(log)'] } }"
            }
            let id = try cluster.submit("name: crash-\(round)\nchildren:\n" + children.joined(separator: "\n") + "\n")
            // The kill moment, random but mid-run: once k children (1…45, so at least 5 still run
            // and the group cannot finish between our look and the kill) have completed.
            let k = 1 + Int(random.next() % 45)
            let deadline = ContinuousClock.now + .seconds(60)
            while Self.lineCount(log) < k {
                guard ContinuousClock.now < deadline else {
                    throw TestFailure("round \(round), seed \(seed): \(k) children did not complete within 60 s")
                }
                usleep(1_000)
            }
            kill(cluster.coordinator.pid, SIGKILL)
            // A child appends its line before it exits and reports, so fewer than 50 lines now
            // means the coordinator cannot have had every result: the group was not finished.
            let atKill = Self.lineCount(log)
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let final = try cluster.waitForStatus(id, timeout: .seconds(60)) { status in
                ["succeeded", "failed", "cancelled"].contains(status.state ?? "")
            }
            let context = "round \(round), seed \(seed), killed at \(k) completions (\(atKill) when killed)"
            #expect(atKill < 50, "\(context): the group had not finished when the coordinator was killed")
            #expect(final.state == "succeeded", "\(context): \(final)")

            // What ran, from the children themselves: child → attempts that completed.
            let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            var runs: [String: [Int]] = [:]
            for line in lines {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let attempt = Int(parts[1]) else {
                    Issue.record("\(context): malformed line \(line)")
                    continue
                }
                runs[String(parts[0]), default: []].append(attempt)
            }
            let again = runs.values.filter { $0.count > 1 }.count
            let adopted = final.children.filter { ($0["attempt"] as? Int ?? 0) > 1 }.count
            print(
                "\(context): \(lines.count) completions, \(again) children ran twice, \(adopted) finished on a later attempt"
            )
            for child in final.children {
                let name = child["name"] as? String ?? "?"
                let attempts = runs[name] ?? []
                #expect(!attempts.isEmpty, "\(context): \(name) never completed")
                // No attempt ran twice: a second run is a new attempt, and the status says so.
                #expect(Set(attempts).count == attempts.count, "\(context): \(name) completed attempts \(attempts)")
                #expect(
                    child["attempt"] as? Int == attempts.max(), "\(context): \(name) status \(child), ran \(attempts)")
            }
        }
    }
}
