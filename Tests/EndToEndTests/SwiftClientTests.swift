import CohortClient
import CohortCore
import CohortSpec
import Foundation
import Testing

extension EndToEnd {
    /// The Swift API (`CohortClient`) against real `cohort` processes.
    @Suite struct SwiftClient {
        /// A group built in Swift: submitted, watched as an AsyncSequence to its end, waited
        /// for, its results fetched (one injected across children); another group cancelled.
        @Test func aGroupBuiltInSwiftIsSubmittedWatchedAndItsResultsFetchedAndAnotherCancelled() async throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(2, slots: 2)

            try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) { client in
                let checks: [ChildSpec] = [
                    ChildSpec("lint", run: "shell", with: ["command": ["sh", "-c", "echo lint ok"]]),
                    ChildSpec("unit", run: "echo", with: ["passed": 12]),
                ]
                let spec = GroupSpec(
                    "swift-built",
                    children: [
                        ChildSpec("version", run: "echo", with: ["value": "1.2.3"]),
                        ChildSpec(
                            "tag", run: "echo", with: ["prefix": "v"],
                            inject: [CohortSpec.Injection(from: "version", select: "value", into: "version")]),
                        ChildSpec("checks", mode: .sequence, after: ["tag"], children: checks),
                    ])
                let receipt = try await client.submit(spec, id: "swift-api-1")
                #expect(receipt.id == "swift-api-1" && receipt.name == "swift-built" && !receipt.alreadySubmitted)

                // The events: the snapshot first, changes, the end last.
                var events: [GroupEvent] = []
                for try await event in client.watch(receipt.id) { events.append(event) }
                guard case .snapshot(let snapshot)? = events.first else {
                    Issue.record("the first event is not the snapshot: \(events)")
                    return
                }
                #expect(snapshot.children.map(\.path) == ["version", "tag", "checks", "checks/lint", "checks/unit"])
                guard case .finished(let state, _, _)? = events.last else {
                    Issue.record("the last event is not the end: \(events)")
                    return
                }
                #expect(state == .succeeded)
                // Each child succeeded before the watch began (in the snapshot) or in an event.
                let succeeded = Set(snapshot.children.filter { $0.state == .succeeded }.map(\.path)).union(
                    events.compactMap { event -> String? in
                        if case .child(let child, _) = event, child.state == .succeeded { return child.path }
                        return nil
                    })
                #expect(succeeded.isSuperset(of: ["version", "tag", "checks/lint", "checks/unit"]), "\(events)")

                let final = try await client.wait(receipt.id)
                #expect(final.state == .succeeded)
                #expect(final.children.allSatisfy { $0.state == .succeeded })
                #expect(
                    try await client.result(receipt.id, child: "tag")
                        == .succeeded(["prefix": "v", "version": "1.2.3"]))
                guard case .succeeded(let lint) = try await client.result(receipt.id, child: "checks/lint") else {
                    Issue.record("lint has no output")
                    return
                }
                #expect(lint["stdout"] == "lint ok\n" && lint["exitCode"] == 0)
                // Submitting the same id again is idempotent.
                #expect(try await client.submit(spec, id: "swift-api-1").alreadySubmitted)

                // Another group, cancelled while its child runs.
                let sleeper = try await client.submit(
                    GroupSpec("sleeper", children: [ChildSpec("nap", run: "sleep", with: ["seconds": 60])]))
                var iterator = client.watch(sleeper.id).makeAsyncIterator()
                var running = false
                while !running, let event = try await iterator.next() {
                    switch event {
                    case .snapshot(let detail): running = detail.children.first?.state == .running
                    case .child(let child, _): running = child.state == .running
                    case .finished: Issue.record("the sleeper finished on its own")
                    }
                }
                #expect(running)
                try await client.cancel(sleeper.id, reason: "no time to sleep")
                var end: GroupState?
                while let event = try await iterator.next() {
                    if case .finished(let state, _, _) = event { end = state }
                }
                #expect(end == .cancelled)
                #expect(try await client.status(sleeper.id).state == .cancelled)
                guard case .cancelled(let reason) = try await client.result(sleeper.id, child: "nap") else {
                    Issue.record("the nap was not cancelled")
                    return
                }
                #expect(reason.contains("no time to sleep"), "\(reason)")
                // The first group is untouched.
                #expect(try await client.status(receipt.id).state == .succeeded)
            }
        }
    }
}
