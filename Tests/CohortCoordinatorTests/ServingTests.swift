import CohortCoordinator
import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import Testing

@Suite struct ServingTests {
    @Test func submitDispatchResultAndStatusSucceeded() async throws {
        try await withCoordinator { cluster in
            let worker = try cluster.worker("w1")
            let client = try cluster.client()
            let reply = try client.submit(
                """
                name: hello
                children:
                  - { name: greet, run: echo, with: { text: hi } }
                """, id: "hello-1")
            guard case .submitted(let submitted) = reply else {
                Issue.record("expected submitted, got \(reply)")
                return
            }
            #expect(submitted.id == "hello-1" && submitted.name == "hello" && submitted.warnings.isEmpty)
            let task = try #require(try worker.dispatched().first)
            #expect(
                task.kind == "echo" && task.ref.group == "hello-1" && task.ref.path == "greet" && task.ref.attempt == 1)
            #expect(task.input.json == ["text": "hi"])
            try worker.finish(task, .succeeded(output: Data(#"{"text":"hi"}"#.utf8)))
            let status = try client.waitForStatus("hello-1") { $0.state == .succeeded }
            #expect(status.children.map(\.state) == [.succeeded])
            #expect(status.children[0].worker == "w1")
            #expect(status.finishedAt != nil && status.children[0].startedAt != nil)
            guard case .result(let result) = try client.request(.result(group: "hello-1", path: "greet")),
                case .succeeded(let output) = result.outcome
            else {
                Issue.record("no result")
                return
            }
            #expect(output.json == ["text": "hi"])
            // Submitting the same id again is idempotent.
            guard
                case .submitted(let again) = try client.submit(
                    """
                    name: hello
                    children:
                      - { name: greet, run: echo, with: { text: hi } }
                    """, id: "hello-1")
            else {
                Issue.record("resubmit failed")
                return
            }
            #expect(again.alreadySubmitted)
            guard case .groups(let groups) = try client.request(.status(group: nil)) else { return }
            #expect(groups.map(\.id) == ["hello-1"])
        }
    }

    @Test func anInvalidSpecIsRejectedWithEveryErrorByPath() async throws {
        try await withCoordinator { cluster in
            let client = try cluster.client()
            let reply = try client.submit(
                """
                children:
                  - { name: a, run: echo, after: [buld] }
                  - { name: b, run: echo, retry: { attempts: 0 } }
                """)
            guard case .error(let error) = reply else {
                Issue.record("expected an error, got \(reply)")
                return
            }
            #expect(error.code == .invalidSpec)
            #expect(error.specErrors.map(\.path) == ["children[0].after[0]", "children[1].retry.attempts"])
        }
    }

    @Test func injectionIsDeliveredInTheDispatchInput() async throws {
        try await withCoordinator { cluster in
            let producerWorker = try cluster.worker("x", labels: ["x"])
            let consumerWorker = try cluster.worker("y", labels: ["y"])
            let client = try cluster.client()
            _ = try client.submit(
                """
                children:
                  - { name: version, run: echo, requires: [x] }
                  - name: build
                    run: shell
                    requires: [y]
                    with: { command: [sh, -c, "echo $VERSION"] }
                    inject: [{ from: version, select: value, into: env.VERSION }]
                """, id: "inj")
            let producer = try #require(try producerWorker.dispatched().first)
            #expect(producer.ref.path == "version")
            try producerWorker.finish(producer, .succeeded(output: Data(#"{"value":"1.2.3"}"#.utf8)))
            let consumer = try #require(try consumerWorker.dispatched().first)
            #expect(consumer.ref.path == "build")
            #expect(consumer.input.json == ["command": ["sh", "-c", "echo $VERSION"], "env": ["VERSION": "1.2.3"]])
        }
    }

    @Test func aFailedProducerCancelsTheConsumerNamingIt() async throws {
        try await withCoordinator { cluster in
            let worker = try cluster.worker("w")
            let client = try cluster.client()
            _ = try client.submit(
                """
                children:
                  - { name: producer, run: fail }
                  - { name: consumer, run: echo, inject: [{ from: producer }] }
                """, id: "fp")
            let producer = try #require(try worker.dispatched().first)
            try worker.finish(producer, .failed(error: "nope"))
            let status = try client.waitForStatus("fp") { $0.state.isFinished }
            #expect(status.state == .failed)
            let consumer = try #require(status.children.first { $0.path == "consumer" })
            #expect(consumer.state == .cancelled)
            #expect(consumer.error == "producer \"producer\" failed")
        }
    }

    /// A strict submission some of whose procedures no connected worker could run is refused
    /// (NO_CAPABLE_WORKER, naming each), and nothing is accepted; without `strict` the same
    /// spec is accepted with the same words as warnings.
    @Test func aStrictSubmissionNoWorkerCouldRunIsRefusedAndNothingIsAccepted() async throws {
        try await withCoordinator { cluster in
            _ = try cluster.worker("w")
            let client = try cluster.client()
            let spec = """
                children:
                  - { name: a, run: echo }
                  - { name: b, run: wordcount }
                  - { name: c, run: echo, requires: [gpu] }
                """
            let refused = try client.submit(spec, id: "picky", strict: true)
            guard case .error(let error) = refused else {
                Issue.record("expected a refusal, got \(refused)")
                return
            }
            #expect(error.code == .noCapableWorker)
            #expect(
                error.message
                    == "refused (strict): no connected worker offers kind \"wordcount\"; no connected worker offers "
                    + "kind \"echo\" with labels gpu; nothing was submitted")
            guard case .groups(let groups) = try client.request(.status(group: nil)) else { return }
            #expect(groups.isEmpty, "\(groups)")
            guard case .submitted(let receipt) = try client.submit(spec, id: "picky") else {
                Issue.record("the lenient submission was not accepted")
                return
            }
            #expect(receipt.warnings.count == 2)
            // A strict resubmission of an id already accepted is the same idempotent answer.
            guard case .submitted(let again) = try client.submit(spec, id: "picky", strict: true) else {
                Issue.record("the strict resubmission was refused")
                return
            }
            #expect(again.alreadySubmitted)
        }
    }

    @Test func locksAreGrantedBeforeDispatchAndTheDispatchCarriesTheTokens() async throws {
        try await withCoordinator { cluster in
            let worker = try cluster.worker("w", slots: 4)
            let client = try cluster.client()
            _ = try client.submit(
                """
                children:
                  - { name: a, run: echo, exclusive: [db] }
                  - { name: b, run: echo, exclusive: [db] }
                """, id: "locks")
            let first = try #require(try worker.dispatched().first)
            #expect(first.fencingTokens["db"] == 1)
            guard case .locks(let locks) = try client.request(.locks) else { return }
            #expect(locks.count == 1)
            #expect(locks.first?.holder?.child == first.ref.path && locks.first?.holder?.worker == "w")
            #expect(locks.first?.waiters.count == 1)
            // A procedure the running attempt creates locally goes through the same table: a
            // category the attempt holds comes from the attempt's own table; another is refused
            // (waiting for it while holding db could deadlock).
            try worker.send(.worker(.lockRequest(LockRequest(requestID: 10, ref: first.ref, categories: ["cache"]))))
            let denial = try worker.expect("LOCK DENIED") { message -> LockDenial? in
                if case .toWorker(.lockDenied(let denial)) = message { return denial }
                return nil
            }
            #expect(denial.requestID == 10 && denial.kind == .denied)
            #expect(denial.reason.contains("may lock only its exclusive categories (db), not cache"), "\(denial)")
            try worker.send(.worker(.lockRequest(LockRequest(requestID: 11, ref: first.ref, categories: ["db"]))))
            let grant = try worker.expect("LOCK GRANT") { message -> LockGrant? in
                if case .toWorker(.lockGrant(let grant)) = message { return grant }
                return nil
            }
            #expect(grant.requestID == 11 && grant.tokens["db"] != nil)
            try worker.send(.worker(.lockRelease(requestID: 11)))
            try worker.finish(first, .succeeded(output: Data("{}".utf8)))
            let second = try #require(try worker.dispatched().first)
            #expect(second.fencingTokens["db"] == 2)
            try worker.finish(second, .succeeded(output: Data("{}".utf8)))
            _ = try client.waitForStatus("locks") { $0.state == .succeeded }
            guard case .locks(let after) = try client.request(.locks) else { return }
            #expect(after.isEmpty)
        }
    }

    /// The cancel is acknowledged only once the attempt waiting in the worker's prefetch
    /// window has reported back: until then the worker could still start it, and a client told
    /// "cancel accepted" must never see a pending child start after.
    @Test func cancellingSendsACancelNamingTheAttemptAndTheGroupEndsCancelled() async throws {
        try await withCoordinator { cluster in
            let worker = try cluster.worker("w", slots: 1)
            let client = try cluster.client()
            _ = try client.submit(
                """
                children:
                  - { name: long, run: sleep, with: { seconds: 60 } }
                  - { name: pending, run: sleep, with: { seconds: 60 } }
                """, id: "cx")
            let tasks = try worker.dispatched()
            #expect(tasks.count == 2, "one running and one in the prefetch window")
            let running = tasks[0]
            try worker.send(.worker(.started([AttemptStart(ref: running.ref, startedAt: WireTimestamp(Date()))])))
            let cancelID = client.makeRequestID()
            try client.send(
                .clientRequest(ClientRequest(requestID: cancelID, .cancel(group: "cx", path: nil, reason: "stop it"))))
            let cancels = try worker.expect("CANCEL TASKS") { message -> [AttemptCancellation]? in
                if case .toWorker(.cancel(let cancels)) = message { return cancels }
                return nil
            }
            #expect(Set(cancels.map(\.ref)) == Set(tasks.map(\.ref)))
            #expect(cancels.allSatisfy { $0.reason == "stop it" })
            // The running attempt reports back; the one in the prefetch window has not yet.
            let now = WireTimestamp(Date())
            try worker.send(
                .worker(
                    .results([
                        AttemptResult(
                            ref: running.ref, outcome: .cancelled(reason: "stop it"), startedAt: now, finishedAt: now)
                    ])))
            #expect(try client.status("cx").state == .running, "the group waits for its attempts to report back")
            // Nothing else is sent to this client, so anything now would be the early answer.
            let early = try client.receive(timeout: .milliseconds(300))
            #expect(
                early == nil,
                "the cancel was acknowledged while an attempt could still start: \(String(describing: early))")
            try worker.send(
                .worker(
                    .results([
                        AttemptResult(
                            ref: tasks[1].ref, outcome: .cancelled(reason: "stop it"), startedAt: now, finishedAt: now)
                    ])))
            let answer = try client.expect("the cancel's answer") { message -> CoordinatorReply.Kind? in
                if case .coordinatorReply(let reply) = message, reply.requestID == cancelID { return reply.kind }
                return nil
            }
            guard case .cancelAccepted = answer else {
                Issue.record("cancel was not accepted: \(answer)")
                return
            }
            let status = try client.waitForStatus("cx") { $0.state.isFinished }
            #expect(status.state == .cancelled)
            #expect(status.reason == "stop it")
        }
    }

    @Test func watchersGetTheSnapshotEveryChildEventAndTheFinalState() async throws {
        try await withCoordinator { cluster in
            let worker = try cluster.worker("w")
            let client = try cluster.client()
            let watcher = try cluster.client("watcher")
            _ = try client.submit("children: [{name: a, run: echo}, {name: b, run: echo, after: [a]}]", id: "wt")
            guard case .group(let snapshot) = try watcher.request(.watch(group: "wt")) else {
                Issue.record("no snapshot")
                return
            }
            #expect(snapshot.children.map(\.path) == ["a", "b"])
            for _ in 0..<2 {
                let task = try #require(try worker.dispatched().first)
                try worker.finish(task, .succeeded(output: Data("{}".utf8)))
            }
            var seen: [String] = []
            let final = try watcher.expect("FINISHED event") { message -> (GroupState, String?)? in
                guard case .coordinatorReply(let reply) = message, case .watchEvents(let events) = reply.kind else {
                    return nil
                }
                for event in events {
                    switch event.kind {
                    case .child(let child): seen.append("\(child.path)=\(child.state)")
                    case .finished(let state, let reason): return (state, reason)
                    }
                }
                return nil
            }
            #expect(final.0 == .succeeded)
            #expect(seen.contains("a=running") && seen.contains("a=succeeded") && seen.contains("b=succeeded"))
            // A watch of a finished group answers the snapshot and the final event at once.
            let late = try cluster.client("late")
            _ = try late.request(.watch(group: "wt"))
            let lateFinal = try late.expect("FINISHED event") { message -> GroupState? in
                if case .coordinatorReply(let reply) = message, case .watchEvents(let events) = reply.kind,
                    case .finished(let state, _) = events.last?.kind
                {
                    return state
                }
                return nil
            }
            #expect(lateFinal == .succeeded)
        }
    }

    @Test func aKindNoWorkerOffersIsWarnedAboutAndShownAsWaiting() async throws {
        try await withCoordinator { cluster in
            _ = try cluster.worker("w")
            let client = try cluster.client()
            guard case .submitted(let submitted) = try client.submit("children: [{name: r, run: resize}]", id: "k")
            else {
                Issue.record("submit failed")
                return
            }
            #expect(submitted.warnings == ["no connected worker offers kind \"resize\""])
            let child = try #require(try client.status("k").children.first)
            #expect(child.state == .waiting)
            #expect(child.waitingReason == "no connected worker offers kind \"resize\"")
        }
    }

    @Test func workersAreListedAndASilentWorkerIsLostAndItsAttemptRedispatched() async throws {
        try await withCoordinator(configure: {
            $0.heartbeatInterval = .milliseconds(100)
            $0.heartbeatLiveness = 3
        }) {
            cluster in
            let silent = try cluster.worker("silent", slots: 1)
            let client = try cluster.client()
            guard case .workers(let workers) = try client.request(.workers) else { return }
            #expect(workers.map(\.name) == ["silent"])
            #expect(workers.first?.state == .ready && workers.first?.slots == 1)
            _ = try client.submit("children: [{name: a, run: echo, retry: 2}]", id: "lost")
            let first = try #require(try silent.dispatched().first)
            try silent.send(.worker(.started([AttemptStart(ref: first.ref, startedAt: WireTimestamp(Date()))])))
            // The coordinator heartbeats an idle worker.
            _ = try silent.expect("HEARTBEAT") { message -> Bool? in
                if case .toWorker(.heartbeat) = message { return true }
                return nil
            }
            let healthy = try cluster.worker("healthy", slots: 1)
            let deadline = ContinuousClock.now + Deadline.event
            var redispatched: AttemptDispatch?
            while redispatched == nil, ContinuousClock.now < deadline {
                try healthy.send(.worker(.heartbeat(sequence: 0)))
                if case .toWorker(.dispatch(let tasks))? = try healthy.receive(timeout: .milliseconds(50)) {
                    redispatched = tasks.first
                }
            }
            let again = try #require(redispatched)
            #expect(again.ref.path == "a" && again.ref.attempt == 2 && again.ref.id != first.ref.id)
            guard case .workers(let after) = try client.request(.workers) else { return }
            #expect(after.first { $0.name == "silent" }?.state == .lost)
            #expect(cluster.coordinator.counters.workersLost == 1)
            // The lost session's late result is refused as superseded.
            try silent.finish(first, .succeeded(output: Data("{}".utf8)))
        }
    }

    @Test func largeSpecsAreParsedOffTheLoopAndStillAcceptedOrRejectedWhole() async throws {
        try await withCoordinator { cluster in
            let worker = try cluster.worker("w", slots: 64)
            let client = try cluster.client()
            let children = (0..<800).map {
                "  - { name: child-number-\($0), run: echo, with: { padding: \"........\" } }"
            }
            let yaml = "name: big\nchildren:\n" + children.joined(separator: "\n")
            #expect(yaml.utf8.count > 16 * 1024)
            guard case .submitted(let submitted) = try client.submit(yaml, id: "big") else {
                Issue.record("the large spec was not accepted")
                return
            }
            #expect(submitted.id == "big")
            var done = 0
            while done < 800 {
                let tasks = try worker.dispatched()
                let now = WireTimestamp(Date())
                try worker.send(
                    .worker(
                        .results(
                            tasks.map {
                                AttemptResult(
                                    ref: $0.ref, outcome: .succeeded(output: Data("{}".utf8)), startedAt: now,
                                    finishedAt: now)
                            })))
                done += tasks.count
            }
            _ = try client.waitForStatus("big") { $0.state == .succeeded }
            let broken = yaml + "\n  - { name: child-number-1, run: echo }"
            guard case .error(let error) = try client.submit(broken) else {
                Issue.record("the duplicate name was not refused")
                return
            }
            #expect(error.code == .invalidSpec)
            #expect(error.specErrors.contains { $0.path == "children[800].name" })
        }
    }

    @Test func aChildCancelCancelsItsDependentsAndAnUnfinishedChildHasNoResult() async throws {
        try await withCoordinator { cluster in
            let worker = try cluster.worker("w", slots: 4)
            let client = try cluster.client()
            _ = try client.submit(
                """
                children:
                  - { name: a, run: sleep, with: { seconds: 60 } }
                  - { name: b, run: echo, after: [a] }
                  - { name: c, run: sleep, with: { seconds: 60 } }
                """, id: "cc")
            let tasks = try worker.dispatched()
            guard case .error(let notYet) = try client.request(.result(group: "cc", path: "a")) else {
                Issue.record("an unfinished child had a result")
                return
            }
            #expect(notYet.code == .notFound)
            let cancelID = client.makeRequestID()
            try client.send(
                .clientRequest(ClientRequest(requestID: cancelID, .cancel(group: "cc", path: "a", reason: ""))))
            let cancels = try worker.expect("CANCEL TASKS") { message -> [AttemptCancellation]? in
                if case .toWorker(.cancel(let cancels)) = message { return cancels }
                return nil
            }
            let a = try #require(tasks.first { $0.ref.path == "a" })
            #expect(cancels.map(\.ref) == [a.ref])
            // A cancel without words names its client, with the code a worker switches on.
            #expect(cancels[0].code == .cancelledByClient && cancels[0].reason.hasPrefix("cancelled by "))
            // Acknowledged once the worker has reported on `a`, which it had not said it started.
            try worker.finish(a, .cancelled(reason: cancels[0].reason, code: cancels[0].code))
            let answer = try client.expect("the cancel's answer") { message -> CoordinatorReply.Kind? in
                if case .coordinatorReply(let reply) = message, reply.requestID == cancelID { return reply.kind }
                return nil
            }
            guard case .cancelAccepted(_, let path, let alreadyFinished) = answer else {
                Issue.record("cancel not accepted: \(answer)")
                return
            }
            #expect(path == "a")
            #expect(alreadyFinished == nil, "the cancel took effect")
            let status = try client.waitForStatus("cc") { $0.children.first { $0.path == "b" }?.state == .cancelled }
            #expect(status.children.first { $0.path == "c" }?.state == .ready)
            guard case .result(let result) = try client.request(.result(group: "cc", path: "b")),
                case .cancelled(let reason, let code) = result.outcome
            else {
                Issue.record("b has no cancelled result")
                return
            }
            #expect(reason == "dependency \"a\" was cancelled")
            #expect(code == .dependencyFailed, "the result carries the reason's code")
            // Cancelling what has finished changes nothing, and the answer says how it ended
            // (`cohort cancel` prints it without asking status first).
            let again = try client.request(.cancel(group: "cc", path: "b", reason: ""))
            guard case .cancelAccepted(_, "b", let finished) = again else {
                Issue.record("a second cancel was not accepted: \(again)")
                return
            }
            #expect(finished == .cancelled)
        }
    }

    @Test func aDisconnectingWorkersAttemptsGoToAnotherWorker() async throws {
        try await withCoordinator { cluster in
            let leaving = try cluster.worker("leaving", slots: 1)
            let client = try cluster.client()
            _ = try client.submit("children: [{name: a, run: echo}]", id: "dc")
            let first = try #require(try leaving.dispatched().first)
            try leaving.send(.worker(.disconnect(reason: "bye")))
            let staying = try cluster.worker("staying", slots: 1)
            let again = try #require(try staying.dispatched().first)
            #expect(again.ref.path == "a" && again.ref.attempt == 2 && again.ref.id != first.ref.id)
            try staying.finish(again, .succeeded(output: Data("{}".utf8)))
            _ = try client.waitForStatus("dc") { $0.state == .succeeded }
        }
    }

    @Test func unwatchStopsTheEventsOfThatGroup() async throws {
        try await withCoordinator { cluster in
            let worker = try cluster.worker("w")
            let client = try cluster.client()
            _ = try client.submit("children: [{name: a, run: echo}]", id: "uw")
            _ = try client.request(.watch(group: "uw"))
            guard case .acknowledged = try client.request(.unwatch(group: "uw")) else {
                Issue.record("unwatch not acknowledged")
                return
            }
            let task = try #require(try worker.dispatched().first)
            try worker.finish(task, .succeeded(output: Data("{}".utf8)))
            _ = try client.waitForStatus("uw") { $0.state == .succeeded }
            // Nothing but replies to our own status requests arrived: no watch events.
            while let message = try client.receive(timeout: .milliseconds(100)) {
                if case .coordinatorReply(let reply) = message, case .watchEvents = reply.kind {
                    Issue.record("a watch event arrived after unwatch")
                }
            }
        }
    }
}
