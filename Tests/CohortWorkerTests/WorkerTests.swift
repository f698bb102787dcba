import CohortPeerSupport
import CohortSpec
import CohortTestSupport
import CohortWire
import Foundation
import Testing

@testable import CohortWorker

@Suite(.timeLimit(.minutes(1)))
struct WorkerTests {
    @Test func handshakeAnnouncesKindsLabelsAndSlots() async throws {
        var registry = ProcedureRegistry()
        registry.register("resize") { (input: JSONValue, _: ProcedureContext) in input }
        try await WorkerHarness.run(slots: 3, labels: ["linux", "gpu"], registry: registry) { harness async throws in
            let hello = try await harness.coordinator.hello()
            #expect(hello.role == .worker)
            #expect(hello.peerName == "test-worker")
            let ready = harness.ready
            #expect(ready.name == "test-worker")
            #expect(ready.labels == ["linux", "gpu"])
            #expect(ready.slots == 3)
            #expect(ready.kinds == ["echo", "fail", "resize", "shell", "sleep"])
            #expect(ready.sessionID.count == 16)
            #expect(ready.running.isEmpty)
            #expect(ready.host == WorkerConfiguration.hostName)
        }
    }

    @Test func echoReturnsItsInputAsOutput() async throws {
        try await WorkerHarness.run { harness async throws in
            let input = #"{"value":"1.2.3","nested":{"list":[1,2.5,true,null]}}"#
            harness.dispatch("echo", input, id: 1)
            let result = try await harness.coordinator.result(1)
            guard case .succeeded(let output) = result.outcome else {
                Issue.record("echo did not succeed: \(result.outcome)")
                return
            }
            #expect(try JSONValue(jsonData: output) == JSONValue(jsonString: input))
            #expect(result.ref == WireAttemptRef(id: 1, group: "g-1", path: "child-1", attempt: 1))
            #expect(result.startedAt <= result.finishedAt)
        }
    }

    @Test func severalDispatchesInOneMessageAllGetResults() async throws {
        try await WorkerHarness.run { harness async throws in
            let tasks = (1...50).map { id in
                AttemptDispatch(
                    ref: WireAttemptRef(id: UInt64(id), group: "g-1", path: "c\(id)", attempt: 1), kind: "echo",
                    input: Data(#"{"n":\#(id)}"#.utf8))
            }
            harness.coordinator.send(.dispatch(tasks))
            for id in 1...50 {
                #expect(try await harness.output(UInt64(id)) == ["n": .int(Int64(id))])
            }
        }
    }

    @Test func slotsLimitHowManyAttemptsRunAtOnce() async throws {
        let gauge = Locked((current: 0, maximum: 0))
        var registry = ProcedureRegistry()
        registry.register("hold") { (input: JSONValue, _: ProcedureContext) in
            gauge.mutate {
                $0.current += 1
                $0.maximum = max($0.maximum, $0.current)
            }
            try await Task.sleep(for: .milliseconds(150))
            gauge.mutate { $0.current -= 1 }
            return input
        }
        try await WorkerHarness.run(slots: 2, registry: registry) { harness async throws in
            let tasks = (1...6).map { id in
                AttemptDispatch(
                    ref: WireAttemptRef(id: UInt64(id), group: "g-1", path: "c\(id)", attempt: 1), kind: "hold",
                    input: Data("{}".utf8))
            }
            harness.coordinator.send(.dispatch(tasks))
            for id in 1...6 { _ = try await harness.output(UInt64(id)) }
            #expect(gauge.value.maximum == 2)
        }
    }

    @Test func unknownKindFailsNamingTheKind() async throws {
        try await WorkerHarness.run { harness async throws in
            harness.dispatch("resize", "{}", id: 7)
            let result = try await harness.coordinator.result(7)
            #expect(result.outcome == .failed(error: #"this worker has no procedure kind "resize""#))
        }
    }

    @Test func failFailsWithItsMessage() async throws {
        try await WorkerHarness.run { harness async throws in
            harness.dispatch("fail", #"{"message":"boom"}"#, id: 1)
            #expect(try await harness.coordinator.result(1).outcome == .failed(error: "boom"))
        }
    }

    @Test func sleepIsCancelledAtOnce() async throws {
        try await WorkerHarness.run { harness async throws in
            let task = harness.dispatch("sleep", #"{"seconds":60}"#, id: 1)
            _ = try await harness.coordinator.workerMessage("started") {
                if case .started(let s) = $0 { s } else { nil }
            }
            let sent = ContinuousClock.now
            harness.coordinator.send(.cancel([AttemptCancellation(ref: task, reason: "cancelled by client")]))
            let result = try await harness.coordinator.result(1)
            #expect(result.outcome == .cancelled(reason: "cancelled by client"))
            #expect(ContinuousClock.now - sent < .seconds(1))
        }
    }

    @Test func badSleepInputFailsNamingTheField() async throws {
        try await WorkerHarness.run { harness async throws in
            harness.dispatch("sleep", #"{"seconds":"ten"}"#, id: 1)
            harness.dispatch("sleep", #"{"secs":1}"#, id: 2)
            harness.dispatch("sleep", #"{"seconds":-1}"#, id: 3)
            #expect(
                try await harness.coordinator.result(1).outcome
                    == .failed(error: "with.seconds: expected a number, got string"))
            guard case .failed(let unknown) = try await harness.coordinator.result(2).outcome else {
                Issue.record("unknown field accepted")
                return
            }
            #expect(unknown.hasPrefix("with.secs: sleep has no input \"secs\""))
            guard case .failed(let negative) = try await harness.coordinator.result(3).outcome else {
                Issue.record("negative seconds accepted")
                return
            }
            #expect(negative.hasPrefix("with.seconds:"))
        }
    }

    @Test func cancelNamingAnotherAttemptDoesNothing() async throws {
        try await WorkerHarness.run { harness async throws in
            let task = harness.dispatch("sleep", #"{"seconds":0.5}"#, id: 5, path: "build", attempt: 2)
            _ = try await harness.coordinator.workerMessage("started") {
                if case .started(let s) = $0 { s } else { nil }
            }
            var earlier = task
            earlier.attempt = 1
            var other = task
            other.id = 6
            harness.coordinator.send(
                .cancel([
                    AttemptCancellation(ref: earlier, reason: "an earlier attempt"),
                    AttemptCancellation(ref: other, reason: "another task"),
                ]))
            let result = try await harness.coordinator.result(5)
            guard case .succeeded = result.outcome else {
                Issue.record("a cancel for another attempt hit attempt 2: \(result.outcome)")
                return
            }
            // A cancel for the attempt once it has finished does nothing either.
            harness.coordinator.send(.cancel([AttemptCancellation(ref: task, reason: "too late")]))
            harness.dispatch("echo", "{}", id: 9)
            _ = try await harness.output(9)
            #expect(
                harness.coordinator.inbox.history.allSatisfy { received in
                    if case .worker(.results(let results)) = received.message {
                        return !results.contains { $0.ref.id == 5 && $0.outcome != result.outcome }
                    }
                    return true
                })
        }
    }

    @Test func queuedAttemptCancelledWhileEverySlotIsBusyIsReportedAtOnce() async throws {
        try await WorkerHarness.run(slots: 1) { harness async throws in
            harness.dispatch("sleep", #"{"seconds":60}"#, id: 1)
            let queued = harness.dispatch("echo", "{}", id: 2)
            _ = try await harness.coordinator.workerMessage("started") {
                if case .started(let s) = $0 { s } else { nil }
            }
            harness.coordinator.send(.cancel([AttemptCancellation(ref: queued, reason: "child cancelled")]))
            #expect(
                try await harness.coordinator.result(2, timeout: .seconds(2)).outcome
                    == .cancelled(reason: "child cancelled"))
            #expect(!harness.coordinator.sawResult(1))
        }
    }

    /// An `echo` (run on the loop's thread when a slot is free) waits for a slot like any
    /// attempt when every slot is busy: its result comes after the busy attempt's.
    @Test func echoWaitsForASlotWhenEverySlotIsBusy() async throws {
        try await WorkerHarness.run(slots: 1) { harness async throws in
            harness.dispatch("sleep", #"{"seconds":0.3}"#, id: 1)
            _ = try await harness.coordinator.workerMessage("started") {
                if case .started(let s) = $0 { s } else { nil }
            }
            harness.dispatch("echo", #"{"n":2}"#, id: 2)
            #expect(try await harness.output(2) == ["n": .int(2)])
            #expect(harness.coordinator.sawResult(1))
        }
    }

    @Test func timeoutCancelsWithReasonTimedOut() async throws {
        try await WorkerHarness.run { harness async throws in
            harness.dispatch("sleep", #"{"seconds":60}"#, id: 1, timeout: .milliseconds(200))
            #expect(try await harness.coordinator.result(1).outcome == .cancelled(reason: "timed out", code: .timedOut))
        }
    }

    @Test func workerStopsPromptlyWhenItsTaskIsCancelled() async throws {
        let coordinator = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { coordinator.stop() }
        var configuration = WorkerConfiguration(coordinator: coordinator.endpoint)
        configuration.name = "stopping-worker"
        let worker = Worker(configuration: configuration)
        let running = Task { try await worker.run() }
        _ = try await coordinator.ready()
        coordinator.send(
            .dispatch([
                AttemptDispatch(
                    ref: WireAttemptRef(id: 1, group: "g", path: "nap", attempt: 1), kind: "sleep",
                    input: Data(#"{"seconds":60}"#.utf8))
            ]))
        _ = try await coordinator.workerMessage("started") { if case .started(let s) = $0 { s } else { nil } }
        let cancelled = ContinuousClock.now
        running.cancel()
        try await within(.seconds(3), "the worker to stop") { try await running.value }
        #expect(ContinuousClock.now - cancelled < .seconds(2))
        let draining = try await coordinator.workerMessage("draining") {
            if case .draining(let r) = $0 { r } else { nil }
        }
        #expect(draining.contains("stopping-worker"))
        let goodbye = try await coordinator.workerMessage("disconnect") {
            if case .disconnect(let r) = $0 { r } else { nil }
        }
        #expect(goodbye.contains("1 attempt handed back"))
        // The interrupted attempt is not reported: the coordinator gives it to another worker.
        #expect(!coordinator.sawResult(1))
    }

    @Test func malformedEndpointEndsRun() async throws {
        let running = Task {
            try await Worker(configuration: WorkerConfiguration(coordinator: "tcp://127.0.0.1:notaport")).run()
        }
        do {
            try await within(.seconds(5), "run() to end") { try await running.value }
            Issue.record("run() returned normally")
        } catch let error as WorkerRunError {
            #expect(error.code == .transport)
        }
    }

    @Test func invalidConfigurationIsRefusedByRun() async throws {
        var configuration = WorkerConfiguration()
        configuration.slots = 0
        await #expect(throws: WorkerRunError.self) { try await Worker(configuration: configuration).run() }
    }
}
