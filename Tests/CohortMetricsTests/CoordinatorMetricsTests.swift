import CohortCore
import CohortJournal
import CohortMetrics
import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import Prometheus
import Testing

@testable import CohortCoordinator

/// A real coordinator (in this process, on loopback) recording into a Prometheus registry:
/// the rendered text has the documented names and labels, and the values follow events.
@Suite struct CoordinatorMetricsTests {
    static let mixed = """
        name: mixed
        children:
          - { name: ok, run: shell, with: { command: ["true"] } }
          - { name: bad, run: shell, with: { command: ["false"] } }
        """

    @Test func childrenFinishedAndLatenciesAreCountedAsTheyHappen() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = CohortPrometheus.makeFactory(registry: registry)
        // The fake worker sends no heartbeats: a long liveness keeps it ready throughout.
        let handle = try await CoordinatorHandle.start(metrics: factory) { $0.heartbeatLiveness = 1000 }
        defer { handle.service.cancel() }
        let worker = try handle.worker("w1", slots: 4)
        let client = try handle.client()

        let before = registry.emitToString()
        #expect(MetricsText.value(before, #"cohort_refusals_total{code="permission_denied"}"#) == 0)
        #expect(MetricsText.value(before, #"cohort_children_finished_total{kind="shell",outcome="failed"}"#) == nil)

        let reply = try client.submit(Self.mixed, id: "mixed")
        guard case .submitted(let receipt) = reply else {
            Issue.record("not accepted: \(reply)")
            return
        }
        #expect(receipt.id == "mixed")
        var attempts: [AttemptDispatch] = []
        while attempts.count < 2 { attempts += try worker.dispatched() }
        for attempt in attempts {
            try worker.finish(
                attempt, attempt.ref.path == "ok" ? .succeeded(output: Data("{}".utf8)) : .failed(error: "exit code 1"))
        }
        // The latencies are recorded off the loop's thread, after the counters: wait for both.
        let counted = await eventually {
            let text = registry.emitToString()
            return MetricsText.value(text, #"cohort_children_finished_total{kind="shell",outcome="failed"}"#) == 1
                && MetricsText.value(text, #"cohort_children_finished_total{kind="shell",outcome="succeeded"}"#) == 1
                && MetricsText.value(text, #"cohort_groups_finished_total{outcome="failed"}"#) == 1
                && MetricsText.value(text, "cohort_attempt_start_delay_seconds_count") == 2
                && MetricsText.value(text, "cohort_attempt_run_seconds_count") == 2
        }
        #expect(
            counted,
            "\(registry.emitToString().split(separator: "\n").filter { $0.hasPrefix("cohort_children") || $0.hasPrefix("cohort_groups") || $0.hasPrefix("cohort_attempt_") && $0.contains("_count") })"
        )
        let text = registry.emitToString()
        #expect(MetricsText.value(text, "cohort_groups_submitted_total") == 1)
        #expect(MetricsText.value(text, "cohort_attempts_dispatched_total") == 2)
        #expect((MetricsText.value(text, #"cohort_messages_received_total{family="worker_message"}"#) ?? 0) >= 5)
        #expect((MetricsText.value(text, #"cohort_messages_sent_total{family="coordinator_to_worker"}"#) ?? 0) >= 1)
        #expect((MetricsText.value(text, #"cohort_messages_received_total{family="handshake"}"#) ?? 0) >= 3)
        // Only the families that go each way have series (three per direction).
        #expect(MetricsText.value(text, #"cohort_messages_received_total{family="coordinator_reply"}"#) == nil)
        #expect(MetricsText.value(text, #"cohort_messages_received_total{family="coordinator_to_worker"}"#) == nil)
        #expect(MetricsText.value(text, #"cohort_messages_sent_total{family="client_request"}"#) == nil)
        #expect(MetricsText.value(text, #"cohort_messages_sent_total{family="worker_message"}"#) == nil)
        // The gauges follow the scheduler's state within their refresh interval.
        let gauges = await eventually {
            let text = registry.emitToString()
            return MetricsText.value(text, #"cohort_workers{state="ready"}"#) == 1
                && MetricsText.value(text, "cohort_slots") == 4
                && MetricsText.value(text, #"cohort_groups{state="failed"}"#) == 1
                && MetricsText.value(text, #"cohort_attempts_in_flight{stage="running"}"#) == 0
        }
        #expect(
            gauges,
            "\(registry.emitToString().split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.contains("_bucket") })"
        )
        try await handle.stop()
    }

    /// The log store's figures: lines stored and the bytes held, and lines acknowledged
    /// without being stored (not of an attempt the worker runs now).
    @Test func logLinesStoredAndDroppedAreCounted() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = CohortPrometheus.makeFactory(registry: registry)
        let handle = try await CoordinatorHandle.start(metrics: factory) { $0.heartbeatLiveness = 1000 }
        defer { handle.service.cancel() }
        let worker = try handle.worker("w1", slots: 4)
        let client = try handle.client()
        _ = try client.submit(
            "name: logged\nchildren:\n  - { name: c, run: shell, with: { command: [\"true\"] } }\n", id: "logged")
        let attempt = try #require(try worker.dispatched().first)
        let now = WireTimestamp(Date())
        try worker.send(.worker(.started([AttemptStart(ref: attempt.ref, startedAt: now)])))
        let lines = (1...3).map {
            LogLine(sequence: UInt64($0), at: now, stream: .stdout, text: Array("line-\($0)".utf8))
        }
        var stranger = attempt.ref
        stranger.id &+= 1000
        try worker.send(
            .worker(
                .logLines([
                    AttemptLogLines(ref: attempt.ref, lines: lines),
                    AttemptLogLines(ref: stranger, lines: Array(lines.prefix(2))),
                ])))
        let counted = await eventually {
            let text = registry.emitToString()
            return MetricsText.value(text, "cohort_log_lines_stored_total") == 3
                && MetricsText.value(text, "cohort_log_lines_dropped_total") == 2
                && MetricsText.value(text, "cohort_log_store_bytes") == 18
        }
        #expect(counted, "\(registry.emitToString().split(separator: "\n").filter { $0.hasPrefix("cohort_log") })")
        #expect(MetricsText.value(registry.emitToString(), "cohort_log_bytes_evicted_total") == 0)
    }

    @Test func locksAreTimedByCategoryAndRefusalsCountedByCode() async throws {
        let registry = PrometheusCollectorRegistry()
        let handle = try await CoordinatorHandle.start(metrics: CohortPrometheus.makeFactory(registry: registry)) {
            $0.heartbeatLiveness = 1000
        }
        defer { handle.service.cancel() }
        let worker = try handle.worker("w1", slots: 4)
        let client = try handle.client()
        let spec = """
            name: locked
            children:
              - { name: a, run: echo, exclusive: [db] }
              - { name: b, run: echo, exclusive: [db] }
            """
        _ = try client.submit(spec, id: "locked")
        let first = try #require(try worker.dispatched().first)
        // b waits for db while a holds it.
        let waiting = await eventually {
            let text = registry.emitToString()
            return MetricsText.value(text, "cohort_lock_holders") == 1
                && MetricsText.value(text, "cohort_lock_waiters") == 1
                && MetricsText.value(text, #"cohort_children_waiting{reason="lock"}"#) == 1
        }
        #expect(waiting)
        try worker.finish(first, .succeeded(output: Data("{}".utf8)))
        let second = try #require(try worker.dispatched().first)
        try worker.finish(second, .succeeded(output: Data("{}".utf8)))
        let timed = await eventually {
            let text = registry.emitToString()
            return MetricsText.value(text, #"cohort_lock_wait_seconds_count{category="db"}"#) == 2
                && MetricsText.value(text, #"cohort_lock_hold_seconds_count{category="db"}"#) == 2
        }
        #expect(timed)

        // A client asking for a group that does not exist is refused: not_found.
        _ = try client.request(.status(group: "nope"))
        let refused = await eventually {
            MetricsText.value(registry.emitToString(), #"cohort_refusals_total{code="not_found"}"#) == 1
        }
        #expect(refused)
        try await handle.stop()
    }

    /// A coordinator without leader election serves from the start: `cohort_coordinator_leader`
    /// is 1 and `cohort_coordinator_epoch` its epoch (the standby's 0 is checked end to end,
    /// `EndToEnd.StandbyCoordinators`).
    @Test func aCoordinatorAloneSaysItLeadsWithItsEpoch() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = CohortPrometheus.makeFactory(registry: registry)
        let handle = try await CoordinatorHandle.start(metrics: factory) { $0.epoch = 7 }
        defer { handle.service.cancel() }
        let text = registry.emitToString()
        #expect(MetricsText.value(text, "cohort_coordinator_leader") == 1, "\(text)")
        #expect(MetricsText.value(text, "cohort_coordinator_epoch") == 7, "\(text)")
        try await handle.stop()
    }

    /// A coordinator whose journal cannot be written stops serving, and its metrics say so at
    /// once: `cohort_coordinator_leader` 0 and `cohort_coordinator_epoch` 0, not the 1 it had
    /// while it served (a PostgreSQL coordinator then waits for its database with this gauge).
    @Test func aCoordinatorWhoseJournalFailsNoLongerSaysItLeads() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = CohortPrometheus.makeFactory(registry: registry)
        let handle = try await CoordinatorHandle.start(metrics: factory) { configuration in
            configuration.journalStore = JournalStoreOpener(
                location: "unwritable", open: { UnwritableJournal() }, openExisting: { UnwritableJournal() })
        }
        defer { handle.service.cancel() }
        let before = registry.emitToString()
        #expect(MetricsText.value(before, "cohort_coordinator_leader") == 1, "\(before)")
        #expect(MetricsText.value(before, "cohort_coordinator_epoch") == 3, "\(before)")
        let client = try handle.client()
        // Its reply waits for a commit that fails: sent without waiting for one.
        try client.send(
            .clientRequest(
                ClientRequest(
                    requestID: client.makeRequestID(),
                    .submit(Submission(groupID: "mixed", document: Self.mixed, format: .yaml, sourceName: "m.yaml")))))
        let stopped = await eventually {
            let text = registry.emitToString()
            return MetricsText.value(text, "cohort_coordinator_leader") == 0
                && MetricsText.value(text, "cohort_coordinator_epoch") == 0
        }
        #expect(stopped, "\(registry.emitToString())")
        await #expect(throws: JournalError.self) { try await handle.service.value }
    }

    @Test func madeUpKindsShareOneSeriesPastTheLimit() {
        let registry = PrometheusCollectorRegistry()
        let metrics = CoordinatorMetrics(factory: CohortPrometheus.makeFactory(registry: registry))
        for index in 0..<(metrics.maxLabelValues + 20) {
            metrics.record(.childFinished(kind: "kind-\(index)", .succeeded))
        }
        metrics.flush()
        let text = registry.emitToString()
        let kinds = MetricsText.labelValues(text, name: "cohort_children_finished_total", label: "kind")
        #expect(kinds.count == metrics.maxLabelValues + 1)
        #expect(MetricsText.value(text, #"cohort_children_finished_total{kind="other",outcome="succeeded"}"#) == 20)
    }
}

/// A journal with epoch 3 and nothing in it whose every write fails (a disk or database gone).
private final class UnwritableJournal: JournalStore {
    let location = "unwritable"
    let epoch: UInt64 = 3
    func write(_ batches: [JournalBatch]) throws(JournalError) {
        throw JournalError(.damaged, path: location, "cannot write: the test's journal refuses every write")
    }
    func load(finishedSince cutoff: Timestamp?) throws(JournalError) -> JournalContents {
        JournalContents(groups: [], lastTokens: [:])
    }
    func prune(finishedBefore cutoff: Timestamp) throws(JournalError) -> [String] { [] }
    func openReader() throws(JournalError) -> any JournalStoreReader {
        throw JournalError(.unusable, path: location, "no reader")
    }
    func close() {}
}
