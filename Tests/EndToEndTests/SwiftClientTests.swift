import CohortClient
import CohortCore
import CohortSpec
import CohortTestSupport
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

        /// `wait` returns the final snapshot its watch delivered, folded from the events, with
        /// no `status` after: the same as a `status` asked afterwards, child for child, for a
        /// group that succeeds (nested, retried), one that fails (its dependent cancelled) and
        /// one cancelled while its children run or wait (issue 28: no needless round trip).
        @Test func waitReturnsWhatStatusSaysAfterTheEnd() async throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(2, slots: 2)
            let marker = Scratch.file("second-attempt")
            let specs = [
                """
                name: succeeds
                children:
                  - { name: a, run: echo, with: { n: 1 } }
                  - name: retried
                    run: shell
                    retry: 2
                    with: { command: [sh, -c, 'test -e "\(marker)" || { touch "\(marker)"; exit 3; }'] }
                  - name: nested
                    group:
                      mode: sequence
                      children:
                        - { name: x, run: echo, after: [a], with: { n: 2 } }
                        - { name: y, run: echo, inject: [{ from: x, select: n, into: m }] }
                """,
                """
                name: fails
                children:
                  - { name: broken, run: fail, with: { message: broken } }
                  - { name: after-broken, run: echo, after: [broken] }
                  - { name: beside, run: echo }
                """,
            ]
            try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) { client in
                var ids: [String] = []
                for (index, spec) in specs.enumerated() {
                    let receipt = try await client.submit(specText: spec, sourceName: "wait-\(index).yaml")
                    let waited = try await client.wait(receipt.id)
                    let status = try await client.status(receipt.id)
                    ids.append(receipt.id)
                    #expect(waited == status, "\(receipt.name): wait \(waited)\nstatus \(status)")
                    #expect(waited.state == (index == 0 ? .succeeded : .failed), "\(waited)")
                }
                #expect(try await client.status(ids[0]).children.first { $0.path == "retried" }?.attempt == 2)

                let sleepy = try await client.submit(
                    specText: "name: cancelled\nchildren:\n  - { name: nap, run: sleep, with: { seconds: 60 } }\n"
                        + "  - { name: later, run: echo, after: [nap] }\n",
                    sourceName: "cancelled.yaml")
                let waiting = Task { try await client.wait(sleepy.id) }
                var events = client.watch(sleepy.id).makeAsyncIterator()
                var running = false
                while !running, let event = try await events.next() {
                    switch event {
                    case .snapshot(let detail): running = detail.children.first?.state == .running
                    case .child(let child, _): running = child.path == "nap" && child.state == .running
                    case .finished: Issue.record("the nap finished on its own")
                    }
                }
                #expect(running)
                try await client.cancel(sleepy.id, reason: "enough")
                let waited = try await within(Deadline.event, "wait to return") { try await waiting.value }
                #expect(waited.state == .cancelled)
                #expect(waited == (try await client.status(sleepy.id)))
            }
        }

        /// A matrix built in Swift fans out on the cluster, and `rerun` runs again only what
        /// failed (the Swift API of issue 14's fan-out and rerun).
        @Test func aSwiftMatrixFansOutAndRerunRunsOnlyWhatFailed() async throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(1, slots: 4)
            let marker = Scratch.file("fixed")
            try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) { client in
                let spec = GroupSpec(
                    "swift-matrix",
                    children: [
                        ChildSpec(
                            "square", run: "echo", with: ["n": "${{ matrix.n }}"], matrix: Matrix(["n": [1, 2, 3]])),
                        ChildSpec(
                            "gather", run: "echo",
                            inject: [CohortSpec.Injection(from: "square", select: "n", into: "all")]),
                        ChildSpec(
                            "check", run: "shell", with: ["command": ["sh", "-c", .string("test -e '\(marker)'")]],
                            after: ["gather"]),
                    ])
                let first = try await client.submit(spec)
                let failed = try await client.wait(first.id)
                #expect(failed.state == .failed)
                #expect(
                    failed.children.filter { $0.path.hasPrefix("square/") }.map(\.name) == [
                        "square[n=1]", "square[n=2]", "square[n=3]",
                    ])
                #expect(FileManager.default.createFile(atPath: marker, contents: Data()))
                let again = try await client.rerun(first.id)
                #expect(again.reused == 4 && again.rerunOf == first.id)
                let final = try await client.wait(again.id)
                #expect(final.state == .succeeded)
                #expect(
                    final.children.filter(\.isReused).map(\.name) == [
                        "square[n=1]", "square[n=2]", "square[n=3]", "gather",
                    ])
                guard case .succeeded(let output) = try await client.result(again.id, child: "gather") else {
                    Issue.record("gather has no output")
                    return
                }
                #expect(output["all"] == [1, 2, 3])
            }
        }

        /// A map built in Swift fans out at run time over its producer's list, at most
        /// `maxParallel` at a time, and the gathering child gets the outputs in item order.
        @Test func aSwiftMapFansOutOverItsProducersList() async throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(1, slots: 4)
            try await CohortClient.withClient(ClientConfiguration(coordinator: cluster.endpoint)) { client in
                let spec = GroupSpec(
                    "swift-map",
                    children: [
                        ChildSpec("list", run: "echo", with: ["items": [3, 1, 2]]),
                        ChildSpec(
                            "double", run: "echo",
                            map: MapSpec(from: "list", select: "items", into: "n", maxParallel: 2)),
                        ChildSpec(
                            "gather", run: "echo",
                            inject: [CohortSpec.Injection(from: "double", select: "n", into: "all")]),
                    ])
                let receipt = try await client.submit(spec)
                let final = try await client.wait(receipt.id)
                #expect(final.state == .succeeded)
                #expect(
                    final.children.filter { $0.path.hasPrefix("double/") }.map(\.name) == [
                        "double[0]", "double[1]", "double[2]",
                    ])
                guard case .succeeded(let output) = try await client.result(receipt.id, child: "gather") else {
                    Issue.record("gather has no output")
                    return
                }
                #expect(output["all"] == [3, 1, 2])
            }
        }
    }
}
