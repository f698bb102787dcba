import Foundation
import Testing

extension EndToEnd {
    /// Counting locks (`limits`) and group priorities, with real processes: the children
    /// write their own start and end times (and fencing tokens) to a log.
    @Suite struct LimitsAndPrioritiesEndToEndTests {
        /// One line a child appended to the log: `NAME start|end NANOSECONDS TOKEN`.
        struct Mark {
            var name: String
            var isStart: Bool
            var time: Int64
            var token: String
        }

        static func marks(_ log: String) throws -> [Mark] {
            let text = try String(contentsOfFile: log, encoding: .utf8)
            return text.split(separator: "\n").compactMap { line in
                let parts = line.split(separator: " ").map(String.init)
                guard parts.count >= 3, let time = Int64(parts[2]) else { return nil }
                return Mark(
                    name: parts[0], isStart: parts[1] == "start", time: time, token: parts.count > 3 ? parts[3] : "")
            }
        }

        /// The most children running at once, from their start and end marks.
        static func maxConcurrency(_ marks: [Mark]) -> Int {
            var running = 0
            var most = 0
            // Ends before starts at the same nanosecond: touching intervals do not overlap.
            for mark in marks.sorted(by: { ($0.time, $0.isStart ? 1 : 0) < ($1.time, $1.isStart ? 1 : 0) }) {
                running += mark.isStart ? 1 : -1
                most = max(most, running)
            }
            return most
        }

        /// A shell child that logs its start (with its token for `category`) and its end.
        static func child(_ name: String, log: String, category: String?, seconds: String, extra: String = "")
            -> String
        {
            let fence =
                category.map { "$COHORT_FENCE_\($0.uppercased().replacingOccurrences(of: "-", with: "_"))" } ?? "-"
            let script =
                "echo \\\"\(name) start $(date +%s%N) \(fence)\\\" >> \(log); sleep \(seconds); "
                + "echo \\\"\(name) end $(date +%s%N)\\\" >> \(log)"
            return """
                  - name: \(name)
                    run: shell
                \(category.map { "    exclusive: [\($0)]\n" } ?? "")\(extra)    with: { command: ["sh", "-c", "\(script)"] }

                """
        }

        /// Eight children of a quota with limit 3 on two workers of four slots: never more
        /// than three at once, three at some moment, and eight distinct tokens.
        @Test func aCountingLockRunsExactlyItsLimitAtOnceWithDistinctTokens() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(2, slots: 4)
            let log = Scratch.file("quota.log")
            var spec = "name: quota\nlimits: { api-quota: 3 }\nchildren:\n"
            for index in 1...8 { spec += Self.child("c\(index)", log: log, category: "api-quota", seconds: "0.6") }
            let (status, final) = try cluster.submitAndWait(spec, name: "quota.yaml")
            #expect(status == 0, "\(final)")
            let marks = try Self.marks(log)
            #expect(marks.count == 16, "every child logged its start and end: \(marks.map(\.name))")
            #expect(Self.maxConcurrency(marks) == 3)
            let tokens = marks.filter(\.isStart).map(\.token)
            #expect(Set(tokens).count == 8, "each holder has its own token: \(tokens)")
            #expect(tokens.allSatisfy { UInt64($0) != nil }, "\(tokens)")
        }

        /// `cohort locks` shows a counting lock's limit, every holder with its token, and the
        /// waiters; the coordinator's `--limit` wins over the spec's (with a warning), and a
        /// second spec that disagrees with the limit in force is refused naming both values.
        @Test func locksShowsHoldersAndTheConfiguredLimitWins() throws {
            let cluster = try Cluster(coordinatorArguments: ["--limit", "api-quota=2"])
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 4)
            let file = try Scratch.write(
                """
                name: held
                limits: { api-quota: 5 }
                children:
                  - { name: a, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
                  - { name: b, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
                  - { name: c, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
                """, name: "held.yaml")
            let submitted = try cluster.cli(["submit", file, "--json"])
            #expect(submitted.status == 0, "\(submitted)")
            #expect(submitted.stderr.contains("limits.api-quota is 5"), "warned: \(submitted.stderr)")
            let group = try #require(try JSON.object(submitted.stdout)["id"] as? String)
            try cluster.waitForStatus(group) { status in
                ["a", "b", "c"].filter { status.child($0)?.state == "running" }.count == 2
            }
            let json = try JSON.array(try cluster.cli(["locks", "--json"]).stdout)
            let quota = try #require(json.first { $0["category"] as? String == "api-quota" }, "\(json)")
            #expect(quota["limit"] as? Int == 2)
            let holders = try #require(quota["holders"] as? [[String: Any]])
            #expect(holders.count == 2)
            let tokens = holders.compactMap { $0["token"] as? Int }
            #expect(Set(tokens).count == 2, "\(holders)")
            #expect((quota["waiters"] as? [[String: Any]])?.count == 1)
            let text = try cluster.cli(["locks"])
            #expect(text.stdout.contains("2/2"), "\(text.stdout)")
            for token in tokens { #expect(text.stdout.contains("\(token)"), "\(text.stdout)") }
            #expect(try cluster.cli(["cancel", group]).status == 0)
        }

        @Test func aSubmissionDisagreeingWithTheLimitInForceIsRefused() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 4)
            let first = try cluster.submit(
                """
                name: first
                limits: { api-quota: 3 }
                children:
                  - { name: a, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
                """, name: "first.yaml")
            try cluster.waitForStatus(first) { $0.child("a")?.state == "running" }
            let file = try Scratch.write(
                """
                name: second
                limits: { api-quota: 4 }
                children:
                  - { name: b, run: echo, exclusive: [api-quota] }
                """, name: "second.yaml")
            let refused = try cluster.cli(["submit", file])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("limits.api-quota is 4"), "\(refused.stderr)")
            #expect(refused.stderr.contains("limit 3"), "\(refused.stderr)")
            #expect(try cluster.cli(["cancel", first]).status == 0)
        }

        /// One slot, no prefetch: a priority-10 group (`submit --priority 10`) submitted after a
        /// priority-0 backlog has started runs both its children before the backlog's next one;
        /// `status` shows the priorities.
        @Test func aHighPriorityGroupGoesBeforeAnEarlierBacklog() throws {
            let config = try Scratch.write("prefetch: 0\n", name: "coordinator.yaml")
            let cluster = try Cluster(coordinatorArguments: ["--config", config])
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 1)
            let log = Scratch.file("priority.log")
            var backlog = "name: backlog\nchildren:\n"
            for index in 1...4 { backlog += Self.child("low\(index)", log: log, category: nil, seconds: "1") }
            let low = try cluster.submit(backlog, name: "backlog.yaml")
            try cluster.waitForStatus(low) { status in
                (1...4).contains { status.child("low\($0)")?.state == "running" }
            }
            var urgent = "name: urgent\nchildren:\n"
            for index in 1...2 { urgent += Self.child("high\(index)", log: log, category: nil, seconds: "0.1") }
            let file = try Scratch.write(urgent, name: "urgent.yaml")
            let (status, final) = try {
                let result = try cluster.cli(
                    ["submit", file, "--priority", "10", "--wait", "--json"], timeout: .seconds(60))
                return (result.status, try JSON.object(result.stdout))
            }()
            #expect(status == 0, "\(final)")
            #expect(final["priority"] as? Int == 10)
            let list = try JSON.array(try cluster.cli(["status", "--json"]).stdout)
            #expect(list.first { $0["id"] as? String == low }?["priority"] as? Int == 0)
            try cluster.waitForStatus(low, timeout: .seconds(30)) { $0.state == "succeeded" }
            let starts = try Self.marks(log).filter(\.isStart).sorted { $0.time < $1.time }.map(\.name)
            // The backlog's first child was running when the urgent group came; then urgent's.
            #expect(starts.count == 6, "\(starts)")
            #expect(
                Array(starts.prefix(3)) == [starts[0], "high1", "high2"]
                    || Array(starts.prefix(3)) == [starts[0], "high2", "high1"], "\(starts)")
            #expect(starts[0].hasPrefix("low"), "\(starts)")
        }

        /// A coordinator killed and started again restores the limit in force (from the
        /// journaled spec) and the group's priority: the two holders keep their units, the
        /// third child still waits, and a spec declaring another limit is still refused.
        @Test func theLimitInForceAndThePrioritySurviveARestart() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 4)
            let group = try cluster.submit(
                """
                name: held
                priority: 7
                limits: { api-quota: 2 }
                children:
                  - { name: a, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
                  - { name: b, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
                  - { name: c, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
                """, name: "held.yaml")
            try cluster.waitForStatus(group) { status in
                ["a", "b", "c"].filter { status.child($0)?.state == "running" }.count == 2
            }
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let status = try cluster.waitForStatus(group) { status in
                ["a", "b", "c"].filter { status.child($0)?.state == "running" }.count == 2
            }
            #expect(status["priority"] as? Int == 7)
            let json = try JSON.array(try cluster.cli(["locks", "--json"]).stdout)
            let quota = try #require(json.first { $0["category"] as? String == "api-quota" }, "\(json)")
            #expect(quota["limit"] as? Int == 2, "\(quota)")
            #expect((quota["holders"] as? [[String: Any]])?.count == 2, "\(quota)")
            let file = try Scratch.write(
                "name: other\nlimits: { api-quota: 3 }\nchildren:\n  - { name: d, run: echo, exclusive: [api-quota] }\n",
                name: "other.yaml")
            let refused = try cluster.cli(["submit", file])
            #expect(refused.status != 0)
            #expect(
                refused.stderr.contains("limits.api-quota is 3") && refused.stderr.contains("limit 2"),
                "\(refused.stderr)")
            #expect(try cluster.cli(["cancel", group]).status == 0)
        }
    }
}
