import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import Testing

@testable import CohortWorker

@Suite(.timeLimit(.minutes(1)))
struct ReconnectionTests {
    /// Issue 12, item 3: the fake never heartbeats nor acknowledges the worker's heartbeats.
    /// The worker's lease ends an interval before the coordinator could declare it lost, and
    /// the attempt holding a cluster lock is stopped then; after interval × liveness of silence
    /// (3 s, so that a loaded machine answers the second session before it too is lost) the
    /// worker gives up on the coordinator and reports, in its next session, the attempt that
    /// still waits, and the stopped one as cancelled with code WORKER_LOST.
    @Test func silentCoordinatorIsLostAndANewSessionReportsWhatStillRuns() async throws {
        let coordinator = try FakePeer(
            coordinatorAt: "tcp://127.0.0.1:*",
            behaviour: .init(heartbeat: false, interval: .milliseconds(100), liveness: 30))
        defer { coordinator.stop() }
        var configuration = WorkerConfiguration(coordinator: coordinator.endpoint)
        configuration.name = "reconnecting"
        configuration.slots = 1
        configuration.reconnectDelay = .milliseconds(100)
        let running = Task { try await Worker(configuration: configuration).run() }
        do {
            let first = try await coordinator.ready()
            let nap = WireAttemptRef(id: 1, group: "g", path: "nap", attempt: 1)
            let queued = WireAttemptRef(id: 2, group: "g", path: "later", attempt: 1)
            coordinator.send(
                .dispatch([
                    AttemptDispatch(
                        ref: nap, kind: "sleep", input: Data(#"{"seconds":60}"#.utf8), fencingTokens: ["db": 3]),
                    AttemptDispatch(ref: queued, kind: "sleep", input: Data(#"{"seconds":60}"#.utf8)),
                ]))
            _ = try await coordinator.workerMessage("started") { if case .started(let s) = $0 { s } else { nil } }
            // The READY of the session after the loss (under load an earlier session may be
            // lost before the dispatch arrives: its READY reports nothing).
            let second = try await coordinator.workerMessage("READY reporting attempts", timeout: .seconds(10)) {
                if case .ready(let ready) = $0, !ready.running.isEmpty { ready } else { nil }
            }
            #expect(second.sessionID != first.sessionID)
            // The queued one is reported without a start (it waits while the coordinator is
            // lost); the one that held "db" was stopped when the lease ended, and says so.
            #expect(second.running.map(\.ref) == [queued])
            #expect(second.running.first?.startedAt == nil)
            let stopped = try await coordinator.result(1)
            guard case .cancelled(let reason, .workerLost) = stopped.outcome else {
                Issue.record("the exclusive attempt was not stopped with WORKER_LOST: \(stopped.outcome)")
                return
            }
            #expect(reason.hasPrefix("worker reconnecting lost its lease: no heartbeat acknowledged"), "\(reason)")
            // The coordinator answers READY by cancelling what it gave to someone else.
            coordinator.send(.cancel([AttemptCancellation(ref: queued, reason: "superseded by attempt 2")]))
            #expect(try await coordinator.result(2).outcome == .cancelled(reason: "superseded by attempt 2"))
            #expect(
                !coordinator.inbox.contains {
                    if case .worker(.started(let starts)) = $0.message {
                        starts.contains { $0.ref.id == 2 }
                    } else {
                        false
                    }
                })
        } catch {
            running.cancel()
            _ = await running.result
            throw error
        }
        running.cancel()
        try await within(.seconds(5), "the worker to stop") { try await running.value }
    }

    @Test func aWorkerThatReconnectsWhileDrainingSaysSoInItsReady() async throws {
        let coordinator = try FakePeer(
            coordinatorAt: "tcp://127.0.0.1:*",
            behaviour: .init(heartbeat: false, interval: .milliseconds(100), liveness: 10))
        defer { coordinator.stop() }
        var configuration = WorkerConfiguration(coordinator: coordinator.endpoint)
        configuration.name = "draining-reconnect"
        configuration.reconnectDelay = .milliseconds(100)
        configuration.drainTimeout = .seconds(600)
        let worker = Worker(configuration: configuration)
        let running = Task { try await worker.run() }
        do {
            let first = try await coordinator.ready()
            #expect(!first.draining)
            let nap = WireAttemptRef(id: 1, group: "g", path: "nap", attempt: 1)
            coordinator.send(
                .dispatch([AttemptDispatch(ref: nap, kind: "sleep", input: Data(#"{"seconds":60}"#.utf8))]))
            _ = try await coordinator.workerMessage("started") { if case .started(let s) = $0 { s } else { nil } }
            worker.drain()
            // The drain reached the worker's loop (its Draining); a session lost before that, on a
            // loaded machine, said READY without it. The silent fake is lost; every session's READY
            // after the drain (it still runs `nap`) says draining.
            _ = try await coordinator.workerMessage("Draining") { if case .draining = $0 { true } else { nil } }
            let again = try await coordinator.workerMessage("READY of the draining worker") {
                if case .ready(let ready) = $0, !ready.running.isEmpty { ready } else { nil }
            }
            #expect(again.draining)
        } catch {
            running.cancel()
            _ = await running.result
            throw error
        }
        running.cancel()
        try await within(.seconds(5), "the worker to stop") { try await running.value }
    }

    @Test func refusalForAnotherProtocolVersionEndsRun() async throws {
        let coordinator = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*", behaviour: .init(welcomes: []))
        defer { coordinator.stop() }
        let running = Task {
            try await Worker(configuration: WorkerConfiguration(coordinator: coordinator.endpoint)).run()
        }
        _ = try await coordinator.hello()
        coordinator.send(wire: .handshake(.error(.unsupportedVersion(1))))
        do {
            try await within(.seconds(5), "run() to end") { try await running.value }
            Issue.record("run() returned normally after a refusal")
        } catch let error as WorkerRunError {
            #expect(error.code == .refused)
        }
    }
}
