import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// Every effect of an event leaves the scheduler as an action in the stream it returns: what
/// the journal keeps (`.record`), the messages it causes, and lost worker sessions.
@Suite struct ActionStreamTests {
    static func records(_ actions: [SchedulerAction]) -> [JournalRecord] {
        actions.compactMap { if case .record(let record) = $0 { record } else { nil } }
    }

    @Test func everyJournalChangeIsARecordInTheSameStreamBeforeTheMessagesItCovers() throws {
        var h = SchedulerHarness()
        h.scheduler.emitsRecords = true
        h.addWorker(1)
        let spec = GroupSpec("g", children: [leaf("a"), leaf("b", after: ["a"])])
        let receipt = try h.submit(spec, id: "g")
        // The submission and the first dispatch are recorded in the submit's own actions, the
        // dispatch's record ahead of the dispatch.
        let records = Self.records(receipt.actions)
        #expect(records.first == .submitted(id: "g", spec: spec, owner: nil, at: h.now))
        let recordIndex = try #require(
            receipt.actions.firstIndex { if case .record(.dispatched) = $0 { true } else { false } })
        let dispatchIndex = try #require(receipt.actions.firstIndex { if case .dispatch = $0 { true } else { false } })
        #expect(recordIndex < dispatchIndex)
        guard case .dispatch(_, let order) = receipt.actions[dispatchIndex],
            case .record(.dispatched(let child)) = receipt.actions[recordIndex]
        else { return }
        #expect(child.attemptID == order.ref.id && child.state == .inFlight && child.worker == "worker-1")

        let before = h.log.count
        try h.succeed("a")
        let finished = Self.records(Array(h.log[before...]))
        #expect(
            finished.contains {
                if case .finished(let child) = $0 {
                    child.path == "a" && child.state == .finished(.succeeded)
                } else {
                    false
                }
            })
        #expect(finished.contains { if case .dispatched(let child) = $0 { child.path == "b" } else { false } })

        let cancel = try h.scheduler.cancelGroup("g", reason: "stop", now: h.now)
        h.record(cancel)
        #expect(Self.records(cancel).first == .cancelRequested(group: "g", path: "", reason: "stop", at: h.now))
        try h.acknowledgeCancels()
        #expect(
            Self.records(h.log).contains {
                if case .groupFinished("g", .cancelled, _, _, _) = $0 { true } else { false }
            })
    }

    @Test func withoutAJournalNothingIsRecorded() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(GroupSpec("g", children: [leaf("a")]), id: "g")
        try h.succeed("a")
        #expect(Self.records(h.log).isEmpty)
    }

    @Test func aSilentWorkerIsReportedLostInTheTicksActions() throws {
        var h = SchedulerHarness()
        let worker = h.addWorker(1)
        let other = h.addWorker(2)
        h.record(h.scheduler.workerLost(other, reason: "it disconnected", now: h.now))
        #expect(h.log.contains(.sessionLost(other, .left)))
        h.advance(.seconds(10), silent: true)
        #expect(h.log.contains(.sessionLost(worker, .silent)))
        #expect(h.scheduler.membership.workers.isEmpty)
    }
}
