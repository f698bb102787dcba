import Foundation
import Testing

extension EndToEnd {
    @Suite struct MutualExclusion {
        /// One line a child appended: when it started and ended (ns) and its fencing token.
        struct Interval {
            var child: String
            var start: Int64
            var end: Int64
            var tokens: [String: Int64]

            func overlaps(_ other: Interval) -> Bool { start < other.end && other.start < end }
        }

        /// Reads `child start end KEY=token…` lines.
        static func intervals(in file: String) throws -> [Interval] {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            return text.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ").map(String.init)
                guard fields.count >= 3, let start = Int64(fields[1]), let end = Int64(fields[2]) else { return nil }
                var tokens: [String: Int64] = [:]
                for field in fields.dropFirst(3) {
                    let parts = field.split(separator: "=", maxSplits: 1).map(String.init)
                    if parts.count == 2, let token = Int64(parts[1]) { tokens[parts[0]] = token }
                }
                return Interval(child: fields[0], start: start, end: end, tokens: tokens)
            }
        }

        /// A shell child holding `categories` that records its interval and tokens in `file`.
        static func recordingChild(
            _ name: String, categories: [String], file: String, sleep: String = "0.05"
        ) -> String {
            let fences = categories.map { "\($0)=$COHORT_FENCE_\($0.uppercased())" }.joined(separator: " ")
            let script = "s=$(date +%s%N); sleep \(sleep); e=$(date +%s%N); echo \"\(name) $s $e \(fences)\" >> \(file)"
            return """
                  - name: \(name)
                    run: shell
                    exclusive: [\(categories.joined(separator: ", "))]
                    with: { command: ["sh", "-c", \(quoted(script))] }

                """
        }

        static func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }

        /// 30 children share `db` on 3 workers: no two run at once, and the fencing tokens grow
        /// in the order the grants were made. The children are not pinned: the scheduler spreads
        /// them (equally loaded workers take turns), so the exclusion really spans processes.
        @Test func thirtyChildrenSharingOneCategoryNeverOverlap() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(3, slots: 4)

            let file = Scratch.file("db.log")
            var spec = "name: db\nchildren:\n"
            for index in 0..<30 {
                spec += Self.recordingChild("c\(index)", categories: ["db"], file: file)
            }
            let (status, final) = try cluster.submitAndWait(spec, name: "db.yaml")
            #expect(status == 0, "\(final)")
            #expect(final.children.allSatisfy { $0.state == "succeeded" })
            let workers = final.children.compactMap { $0["worker"] as? String }
            #expect(Set(workers).count > 1, "the children were spread over more than one worker: \(workers)")
            #expect(Set(workers) == ["w1", "w2", "w3"], "every worker took its turn: \(workers)")

            let intervals = try Self.intervals(in: file).sorted { $0.start < $1.start }
            #expect(intervals.count == 30)
            for (earlier, later) in zip(intervals, intervals.dropFirst()) {
                #expect(earlier.end <= later.start, "\(earlier.child) and \(later.child) overlap")
                let (a, b) = (earlier.tokens["db"] ?? -1, later.tokens["db"] ?? -1)
                #expect(a < b, "tokens grow in grant order: \(earlier.child)=\(a), \(later.child)=\(b)")
            }
        }

        /// Children holding {a,b}, {b,c} and {c,a}, submitted together: all finish (no deadlock)
        /// and none overlaps another child it shares a category with.
        @Test func threeCategoriesInACycleDoNotDeadlock() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(3, slots: 4)

            let file = Scratch.file("abc.log")
            let sets = [["a", "b"], ["b", "c"], ["c", "a"]]
            var spec = "name: abc\ntimeout: 2m\nchildren:\n"
            for round in 0..<4 {
                for categories in sets {
                    spec += Self.recordingChild(
                        "\(categories.joined())\(round)", categories: categories, file: file, sleep: "0.1")
                }
            }
            let (status, final) = try cluster.submitAndWait(spec, name: "abc.yaml", timeout: .seconds(90))
            #expect(status == 0, "\(final)")
            #expect(final.children.count == 12)
            #expect(final.children.allSatisfy { $0.state == "succeeded" })

            let intervals = try Self.intervals(in: file)
            #expect(intervals.count == 12)
            for (i, first) in intervals.enumerated() {
                for second in intervals[(i + 1)...] where !Set(first.tokens.keys).isDisjoint(with: second.tokens.keys) {
                    #expect(!first.overlaps(second), "\(first.child) and \(second.child) share a category and overlap")
                }
            }
            // Per category, tokens grow with start time.
            for category in ["a", "b", "c"] {
                let holders = intervals.filter { $0.tokens[category] != nil }.sorted { $0.start < $1.start }
                #expect(holders.count == 8)
                let tokens = holders.compactMap { $0.tokens[category] }
                #expect(tokens == tokens.sorted() && Set(tokens).count == tokens.count, "\(category): \(tokens)")
            }
        }

        /// Issue 12, item 2, as reported: group `ga` holds p and its child (after a short
        /// sleep) needs q; group `gb` holds q and its child needs p. Both used to wait for ever;
        /// now each group's hold covers its child's category, so both finish, their children
        /// never overlap, and the same holds for two such nested groups inside one spec.
        @Test func crossedGroupHoldsDoNotDeadlock() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(2, slots: 4)
            let file = Scratch.file("pq.log")
            func group(_ name: String, holds: String, child: String) -> String {
                "name: \(name)\ntimeout: 1m\nexclusive: [\(holds)]\nchildren:\n"
                    + Self.recordingChild("\(name)-child", categories: [child], file: file, sleep: "0.3")
            }
            /// A child's lines under a nested group's `children:`.
            func indent(_ text: String) -> String {
                text.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n")
            }
            let ga = try cluster.submit(group("ga", holds: "p", child: "q"), name: "ga.yaml")
            let gb = try cluster.submit(group("gb", holds: "q", child: "p"), name: "gb.yaml")
            let nested = try cluster.submit(
                """
                name: one
                timeout: 1m
                children:
                  - name: a
                    exclusive: [p]
                    group:
                      children:
                \(indent(Self.recordingChild("a-x", categories: ["q"], file: file, sleep: "0.3")))
                  - name: b
                    exclusive: [q]
                    group:
                      children:
                \(indent(Self.recordingChild("b-y", categories: ["p"], file: file, sleep: "0.3")))
                """, name: "one.yaml")
            for id in [ga, gb, nested] {
                let status = try cluster.waitForStatus(id, timeout: .seconds(50)) {
                    $0.state != "running" && $0.state != "pending"
                }
                #expect(status.state == "succeeded", "\(id) did not succeed (deadlock?): \(status)")
            }
            let intervals = try Self.intervals(in: file)
            #expect(intervals.count == 4)
            for (i, first) in intervals.enumerated() {
                for second in intervals[(i + 1)...] where !Set(first.tokens.keys).isDisjoint(with: second.tokens.keys) {
                    #expect(!first.overlaps(second), "\(first.child) and \(second.child) share a category and overlap")
                }
            }
        }
    }
}
