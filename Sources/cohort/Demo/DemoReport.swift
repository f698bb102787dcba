import CohortClient

import enum CohortSpec.JSONValue

/// What `cohort demo` checks once its group has finished, one line per feature shown.
struct DemoReport {
    struct Check {
        var passed: Bool
        var text: String
    }

    var checks: [Check] = []

    var passed: Bool { checks.allSatisfy(\.passed) }

    var lines: [String] { checks.map { "  \($0.passed ? "✓" : "✗") \($0.text)" } }

    mutating func check(_ passed: Bool, _ text: String) {
        checks.append(Check(passed: passed, text: text))
    }

    /// Checks the final status and the results of `group` against what the demo spec shows.
    static func make(final: GroupDetail, client: CohortClient) async throws -> DemoReport {
        var report = DemoReport()
        let byPath = Dictionary(final.children.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        func child(_ path: String) -> ChildStatus? { byPath[path] }
        func stdout(_ path: String) async -> String? {
            guard case .succeeded(let output)? = try? await client.result(final.id, child: path) else { return nil }
            return output["stdout"]?.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        // Fan-out.
        let shards = DemoSpec.shards.compactMap(child)
        let shardWorkers = Set(shards.compactMap(\.worker))
        let allWorkers = Set(final.children.compactMap(\.worker))
        report.check(
            shards.count == DemoSpec.shards.count && shards.allSatisfy { $0.state == .succeeded }
                && allWorkers.count >= 2,
            "fan-out: \(shards.filter { $0.state == .succeeded }.count)/\(DemoSpec.shards.count) shards succeeded on "
                + "\(shardWorkers.sorted().joined(separator: ", ")); the group used \(allWorkers.count) workers")

        // Injection across workers.
        let producer = child(DemoSpec.producer)
        let consumer = child(DemoSpec.consumer)
        let received = await stdout(DemoSpec.consumer) ?? ""
        let producedOn = producer?.worker ?? "?"
        let injected =
            producer?.state == .succeeded && consumer?.state == .succeeded
            && producer?.worker != consumer?.worker && received.contains("built on \(producedOn)")
            && received.contains("shards sum to 30")
        report.check(
            injected,
            "injection across workers: \(DemoSpec.producer) ran on \(producedOn), \(DemoSpec.consumer) on "
                + "\(consumer?.worker ?? "?") and printed \"\(received)\"")

        // Exclusive section: intervals never overlap, tokens grow in grant order.
        let migrations = DemoSpec.migrations.compactMap(child).sorted {
            ($0.startedAt?.nanosecondsSinceEpoch ?? 0) < ($1.startedAt?.nanosecondsSinceEpoch ?? 0)
        }
        var tokens: [Int] = []
        for migration in migrations {
            if let text = await stdout(migration.path),
                let token = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
            {
                tokens.append(token)
            }
        }
        var overlap = false
        for (earlier, later) in zip(migrations, migrations.dropFirst()) {
            if let end = earlier.finishedAt, let start = later.startedAt, start < end { overlap = true }
        }
        let increasing = zip(tokens, tokens.dropFirst()).allSatisfy { $0 < $1 }
        report.check(
            migrations.count == DemoSpec.migrations.count && migrations.allSatisfy { $0.state == .succeeded }
                && tokens.count == migrations.count && increasing && !overlap,
            "exclusive section: \(migrations.map(\.path).joined(separator: ", ")) held `database` one at a time "
                + "(\(overlap ? "OVERLAPPING" : "no overlap")), fencing tokens \(tokens.map(String.init).joined(separator: " < "))"
        )

        // Cancellation.
        let slow = child(DemoSpec.cancelled)
        let dependent = child(DemoSpec.dependentOfCancelled)
        report.check(
            slow?.state == .cancelled && dependent?.state == .cancelled && dependent?.attempt == 0,
            "cancellation: \(DemoSpec.cancelled) \(slow?.state.word ?? "missing") (\(slow?.error ?? "no reason")); "
                + "\(DemoSpec.dependentOfCancelled) \(dependent?.state.word ?? "missing")"
                + (dependent?.attempt == 0 ? ", never started" : ", STARTED"))

        // The group's own end: every other child succeeded.
        let others = final.children.filter { $0.path != DemoSpec.cancelled && $0.path != DemoSpec.dependentOfCancelled }
        report.check(
            others.allSatisfy { $0.state == .succeeded } && final.state != .succeeded && final.state.isFinished,
            "outcome: the group finished \(final.state.word) because one child was cancelled on purpose; "
                + "the other \(others.count) children succeeded")
        return report
    }
}
