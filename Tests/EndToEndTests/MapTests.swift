import Foundation
import Testing

extension EndToEnd {
    /// A child's `map`, expanded at run time into one procedure per item of its producer's list
    /// (docs/spec.md, "Fan-out at run time: map"), on real workers.
    @Suite struct MapFanOut {
        /// A producer whose stdout lists five items; each procedure of the map sleeps a little
        /// (its work), so that `maxParallel` has something to bound.
        static let spec = """
            name: mapped
            children:
              - name: list
                run: shell
                with: { command: [sh, -c, "printf 'a\\\\nb\\\\nc\\\\nd\\\\ne\\\\n'"] }
              - name: each
                run: shell
                map: { from: list, select: stdout, maxParallel: 2 }
                with:
                  command: [sh, -c, "sleep 0.3; printf '%s-%s' \\"$COHORT_MAP_INDEX\\" \\"$COHORT_MAP_ITEM\\""]
              - name: report
                run: echo
                inject: [{ from: each, select: stdout, into: results }]
            """

        /// Every item runs with its index and item in its environment, at most two at a time
        /// (by the start and finish times the coordinator recorded), and the dependent waits for
        /// all and receives their outputs in item order.
        @Test func everyItemRunsAtMostMaxParallelAtATimeAndTheDependentGathersInOrder() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(2, slots: 4)

            let (status, final) = try cluster.submitAndWait(Self.spec, name: "map.yaml")
            #expect(status == 0, "\(final)")
            #expect(final.state == "succeeded", "\(final)")
            let paths = (0..<5).map { "each/each[\($0)]" }
            #expect(final.children.compactMap { $0["path"] as? String } == ["list", "each"] + paths + ["report"])
            let group = try #require(final["id"] as? String)
            let report = try JSON.object(try cluster.cli(["result", group, "report", "--json"]).stdout)
            #expect(report["results"] as? [String] == ["0-a", "1-b", "2-c", "3-d", "4-e"])

            var intervals: [(start: String, end: String)] = []
            for path in paths {
                let child = try #require(final.child(path))
                #expect(child["state"] as? String == "succeeded")
                intervals.append(
                    (try #require(child["startedAt"] as? String), try #require(child["finishedAt"] as? String)))
            }
            for interval in intervals {
                let overlapping = intervals.count { $0.start <= interval.start && interval.start < $0.end }
                #expect(overlapping <= 2, "more than two ran at \(interval.start): \(intervals)")
            }
        }

        /// `--watch` sees the procedures as the coordinator makes them, each with its outcome.
        @Test func aWatchSeesTheProceduresAsTheyAreMade() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(1, slots: 4)
            let file = try Scratch.write(Self.spec, name: "watched-map.yaml")
            let watch = try cluster.cli(["submit", file, "--watch", "--json"], timeout: .seconds(60))
            #expect(watch.status == 0, "\(watch)")
            for index in 0..<5 {
                #expect(watch.stdout.contains("each/each[\(index)]"), "\(watch.stdout)")
            }
            let lines = watch.stdout.split(separator: "\n").filter { $0.contains("each/each[4]") }
            #expect(lines.contains { $0.contains("succeeded") }, "\(lines)")
        }

        /// A producer whose list is not one fails the map naming why; a dependent is
        /// cancelled and the group fails (exit 1 with --wait).
        @Test func aProducerWithoutAListFailsTheMapNamingIt() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(1)
            let spec = """
                name: bad-map
                children:
                  - { name: count, run: echo, with: { n: 7 } }
                  - { name: each, run: echo, map: { from: count, select: n } }
                  - { name: after, run: echo, after: [each] }
                """
            let (status, final) = try cluster.submitAndWait(spec, name: "bad-map.yaml")
            #expect(status == 1, "\(final)")
            #expect(final.state == "failed")
            let each = try #require(final.child("each"))
            #expect(each["state"] as? String == "failed")
            #expect(
                (each["error"] as? String)?.contains("output at \"n\" is number, not a list") == true, "\(each)")
            #expect(final.child("after")?["state"] as? String == "cancelled")
        }

        /// The coordinator is killed while the map's procedures run: its fan-out was journaled,
        /// so the restarted coordinator has the same procedures; those that finished keep their
        /// outcome (attempt 1), the one running carries on, and the rest run once each.
        @Test func aCoordinatorRestartKeepsTheFanOut() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 4)
            let gate = Scratch.file("map-gate")
            let spec = """
                name: restarted-map
                children:
                  - { name: list, run: echo, with: { items: [1, 2, 3, 4] } }
                  - name: each
                    run: shell
                    map: { from: list, select: items, maxParallel: 1 }
                    with:
                      command: [sh, -c, "if [ $COHORT_MAP_INDEX = 1 ]; then while [ ! -e \(gate) ]; do sleep 0.05; done; fi; echo $COHORT_MAP_ITEM"]
                """
            let group = try cluster.submit(spec, name: "restarted-map.yaml")
            _ = try cluster.waitForStatus(group) { $0.child("each/each[1]")?["state"] as? String == "running" }
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let restored = try cluster.status(group)
            #expect(restored.child("each/each[0]")?["state"] as? String == "succeeded", "\(restored)")
            #expect(restored.child("each/each[3]") != nil, "the fan-out came back from the journal: \(restored)")
            #expect(FileManager.default.createFile(atPath: gate, contents: Data()))
            let final = try cluster.waitForStatus(group) {
                ["succeeded", "failed", "cancelled"].contains($0.state ?? "")
            }
            #expect(final.state == "succeeded", "\(final)")
            for index in 0..<4 {
                let child = try #require(final.child("each/each[\(index)]"))
                #expect(child["attempt"] as? Int == 1, "each[\(index)] ran once: \(child)")
            }
        }

        /// `cohort rerun` of a group whose map had a failing procedure: the map fans out again
        /// from its reused producer, the procedures that succeeded are reused (and survive a
        /// restart, journaled with the new group), the failed one runs again, and the dependent
        /// gathers all of them.
        @Test func aRerunReusesTheMapsProceduresThatSucceeded() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(1, slots: 4)
            let fixed = Scratch.file("map-fixed")
            let spec = """
                name: rerun-map
                children:
                  - { name: list, run: echo, with: { items: [a, b, c] } }
                  - name: each
                    run: shell
                    map: { from: list, select: items }
                    with:
                      command: [sh, -c, "if [ $COHORT_MAP_ITEM = b ] && [ ! -e \(fixed) ]; then exit 3; fi; printf $COHORT_MAP_ITEM"]
                  - name: report
                    run: echo
                    inject: [{ from: each, select: stdout, into: all }]
                """
            let (status, first) = try cluster.submitAndWait(spec, name: "rerun-map.yaml")
            #expect(status == 1, "\(first)")
            #expect(first.child("each/each[1]")?.state == "failed")
            let earlier = try #require(first["id"] as? String)
            #expect(FileManager.default.createFile(atPath: fixed, contents: Data()))

            let rerun = try cluster.cli(["rerun", earlier, "--json"])
            #expect(rerun.status == 0, "\(rerun)")
            let receipt = try JSON.object(rerun.stdout)
            #expect(receipt["reused"] as? Int == 3, "list, each[0], each[2]: \(receipt)")
            let again = try #require(receipt["id"] as? String)
            let final = try cluster.waitForStatus(again, timeout: .seconds(60)) {
                ["succeeded", "failed", "cancelled"].contains($0.state ?? "")
            }
            #expect(final.state == "succeeded", "\(final)")
            for path in ["each/each[0]", "each/each[2]"] {
                #expect(final.child(path)?["reused"] as? Bool == true, "\(path): \(final.children)")
            }
            #expect(final.child("each/each[1]")?["attempt"] as? Int == 1)
            let report = try JSON.object(try cluster.cli(["result", again, "report", "--json"]).stdout)
            #expect(report["all"] as? [String] == ["a", "b", "c"])

            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            let restored = try cluster.status(again)
            #expect(restored.state == "succeeded", "\(restored)")
            #expect(restored.child("each/each[0]")?["reused"] as? Bool == true, "\(restored.children)")
        }

        /// examples/map.yaml runs as its comment says.
        @Test func theExampleRunsOnACluster() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(2, slots: 2)
            let file = "\(Binaries.repositoryRoot)/examples/map.yaml"
            let submitted = try cluster.cli(["submit", file, "--wait", "--json"])
            #expect(submitted.status == 0, "\(submitted)")
            let final = try JSON.object(submitted.stdout)
            let group = try #require(final["id"] as? String)
            let report = try JSON.object(try cluster.cli(["result", group, "report", "--json"]).stdout)
            #expect(
                report["converted"] as? [String] == [
                    "converted a.png (item 0)\n", "converted b.png (item 1)\n", "converted c.png (item 2)\n",
                    "converted d.png (item 3)\n",
                ])
        }
    }
}
