import Foundation
import Testing

extension EndToEnd {
    /// What `cohort status` and `cohort locks` show for children that hold a lock or wait but
    /// never reached a worker.
    @Suite struct QueryOutput {
        /// A child's own locks are granted before it is placed: with the only slot busy, the
        /// holder of `db` is not on a worker yet. `locks` says so (`null` in JSON, `(not placed
        /// yet)` in text) and `status` reports attempt 0 and no worker for it and for its
        /// dependent, also after the group is cancelled before either started.
        @Test func aHolderNotPlacedYetAndChildrenThatNeverStartedShowNoWorker() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 1)

            let busy = try cluster.submit(
                "name: busy\nchildren:\n  - { name: nap, run: sleep, with: { seconds: 60 } }\n", name: "busy.yaml")
            try cluster.waitForStatus(busy) { $0.child("nap")?.state == "running" }

            let group = try cluster.submit(
                """
                name: locked
                children:
                  - { name: holder, run: echo, exclusive: [db] }
                  - { name: next, run: echo, after: [holder] }
                """, name: "locked.yaml")
            let waiting = try cluster.waitForStatus(group) { $0.child("holder")?.state == "ready" }
            for path in ["holder", "next"] {
                #expect(waiting.child(path)?["attempt"] as? Int == 0, "\(path) never started: \(waiting)")
                #expect(waiting.child(path)?["worker"] is NSNull, "\(path) has no worker: \(waiting)")
            }

            let json = try cluster.cli(["locks", "--json"])
            #expect(json.status == 0)
            let locks = try JSON.array(json.stdout)
            let db = try #require(
                locks.first { $0["category"] as? String == "db" }, "db is in the lock table: \(json.stdout)")
            let holder = try #require(db["holder"] as? [String: Any], "db has a holder: \(json.stdout)")
            #expect(holder["group"] as? String == group && holder["child"] as? String == "holder")
            #expect(holder["attempt"] as? Int == 1)
            #expect(holder["worker"] is NSNull, "a holder not placed yet has a null worker: \(json.stdout)")

            let text = try cluster.cli(["locks"])
            #expect(text.status == 0)
            let row = text.stdout.split(separator: "\n").first { $0.hasPrefix("db ") }
            #expect(row?.contains("\(group)/holder (attempt 1)") == true, "\(text.stdout)")
            #expect(row?.contains("(not placed yet)") == true, "\(text.stdout)")

            #expect(try cluster.cli(["cancel", group]).status == 0)
            let cancelled = try cluster.waitForStatus(group) { $0.state == "cancelled" }
            for path in ["holder", "next"] {
                #expect(cancelled.child(path)?.state == "cancelled")
                #expect(cancelled.child(path)?["attempt"] as? Int == 0, "\(path) never started: \(cancelled)")
                #expect(cancelled.child(path)?["worker"] is NSNull)
            }
            let running = try cluster.status(busy)
            #expect(running.child("nap")?["attempt"] as? Int == 1 && running.child("nap")?["worker"] as? String == "w1")
        }

        /// A group's own hold shows as the group's (it used to read `dla/ (attempt 0) (not
        /// placed yet)`), in text and in `--json` (`groupHold`).
        @Test func aGroupsHoldShowsAsTheGroups() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1", slots: 1)
            let group = try cluster.submit(
                """
                name: held
                exclusive: [repo]
                children:
                  - { name: nap, run: sleep, with: { seconds: 60 } }
                """, name: "held.yaml")
            try cluster.waitForStatus(group) { $0.child("nap")?.state == "running" }
            let text = try cluster.cli(["locks"])
            let row = text.stdout.split(separator: "\n").first { $0.hasPrefix("repo ") }
            #expect(row?.contains("\(group) (group hold)") == true, "\(text.stdout)")
            #expect(row?.contains("not placed") == false, "\(text.stdout)")
            #expect(row?.contains("attempt") == false, "\(text.stdout)")
            let json = try JSON.array(try cluster.cli(["locks", "--json"]).stdout)
            let holder = try #require(json.first { $0["category"] as? String == "repo" }?["holder"] as? [String: Any])
            #expect(holder["groupHold"] as? Bool == true, "\(holder)")
            #expect(holder["group"] as? String == group && holder["child"] as? String == "")
            #expect(try cluster.cli(["cancel", group]).status == 0)
        }
    }
}
