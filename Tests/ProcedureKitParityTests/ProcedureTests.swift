import Dispatch
import Testing
@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/ProcedureTests.swift`.
@Suite("ProcedureTests")
struct ProcedureTests {
    /// ProcedureKit's `QueueTestDelegate`: records the queue's delegate calls.
    final class QueueTestDelegate: ProcedureQueueDelegate {
        let events = EventLog()
        func procedureQueue(_ queue: ProcedureQueue, willAdd procedure: Procedure) { events.record("willAdd") }
        func procedureQueue(_ queue: ProcedureQueue, didAdd procedure: Procedure) { events.record("didAdd") }
        func procedureQueue(_ queue: ProcedureQueue, willFinish procedure: Procedure, with outcome: ProcedureOutcome) {
            events.record("willFinish")
        }
        func procedureQueue(_ queue: ProcedureQueue, didFinish procedure: Procedure, with outcome: ProcedureOutcome) {
            events.record("didFinish")
        }
    }

    @Test func test___delegate__procedure_notifications() async throws {
        let delegate = QueueTestDelegate()
        let queue = makeQueue()
        queue.delegate = delegate
        let procedure = TestProcedure()
        queue.add(procedure)
        try await finished(procedure)
        try await waitUntil("the queue's did-finish") { delegate.events.count == 4 }
        #expect(delegate.events.all == ["willAdd", "didAdd", "willFinish", "didFinish"])
    }

    @Test func test__procedure_executes() async throws {
        let procedure = TestProcedure()
        try await run(procedure)
        #expect(procedure.didExecute)
    }

    /// ProcedureKit's completion blocks are Cohort's `whenFinished` handlers.
    @Test func test__procedure_add_multiple_completion_blocks() async throws {
        let procedure = TestProcedure()
        let runs = Locked([0, 0, 0])
        for index in 0..<3 { procedure.whenFinished { _ in runs.mutate { $0[index] += 1 } } }
        try await run(procedure)
        #expect(runs.value == [1, 1, 1])
    }

    @Test func test__procedure_name() async throws {
        let block = BlockProcedure {}
        #expect(block.name == "BlockProcedure")
        let group = GroupProcedure(children: [])
        #expect(group.name == "GroupProcedure")
        try await run(group)
    }

    /// Producing from `execute()` is an event of the producer: it never overlaps the others.
    @Test func test__procedure_produce_operation() async throws {
        let producedOperation = TestProcedure(name: "ProducedOperation", delay: .milliseconds(5))
        let procedure = EventConcurrencyTrackingProcedure { procedure in
            procedure.produce(producedOperation)
            procedure.finish()
        }
        let didFinish = Signal()
        procedure.addObserver(BlockObserver(didFinish: { _, _ in didFinish.fire() }))
        #expect(try await run(procedure).isSucceeded)
        #expect(try await finished(producedOperation).isSucceeded)
        try await didFinish.wait("did-finish observers")
        expectNoConcurrentEvents(procedure.tracker)
        let history = procedure.tracker.history
        let willAdd = try #require(history.firstIndex(of: "observer_procedureWillAdd"))
        #expect(willAdd > history.firstIndex(of: "do_Execute")!)
        #expect(willAdd < history.firstIndex(of: "observer_willFinish")!)
    }

    /// Defect 5: the observer events come in order did-attach, will-execute, did-execute,
    /// will-finish, did-finish, on the observer's own queue, though `execute()` finishes
    /// synchronously. (Cohort: an observer's `delivery: .on(queue)`, not an `EventQueue`.)
    @Test func test__custom_observer_with_event_queue() async throws {
        let customEventQueue = DispatchQueue(label: "ObserverCustomEventQueue")
        let key = DispatchSpecificKey<Bool>()
        customEventQueue.setSpecific(key: key, value: true)
        let eventsOnSpecifiedQueue = EventLog()
        let eventsNotOnSpecifiedQueue = EventLog()
        struct Recorder: ProcedureObserver {
            let delivery: ObserverDelivery
            let record: @Sendable (String) -> Void
            func didAttach(to procedure: Procedure) { record("observer_didAttach") }
            func will(execute procedure: Procedure) { record("observer_willExecute") }
            func did(execute procedure: Procedure) { record("observer_didExecute") }
            func will(finish procedure: Procedure, with outcome: ProcedureOutcome) { record("observer_willFinish") }
            func did(finish procedure: Procedure, with outcome: ProcedureOutcome) { record("observer_didFinish") }
        }
        let procedure = EventConcurrencyTrackingProcedure(name: "TestingProcedure") { $0.finish() }
        procedure.addObserver(Recorder(delivery: .on(customEventQueue)) { event in
            if DispatchQueue.getSpecific(key: key) == true {
                eventsOnSpecifiedQueue.record(event)
            } else {
                eventsNotOnSpecifiedQueue.record(event)
            }
        })
        try await run(procedure)
        try await waitUntil("five observer events") { eventsOnSpecifiedQueue.count + eventsNotOnSpecifiedQueue.count >= 5 }
        #expect(eventsNotOnSpecifiedQueue.all == [])
        #expect(eventsOnSpecifiedQueue.all
            == ["observer_didAttach", "observer_willExecute", "observer_didExecute", "observer_willFinish", "observer_didFinish"])
    }

    /// Defect 5 with immediate delivery, and for a procedure that finishes later.
    @Test(arguments: [true, false])
    func test__custom_observer_with_event_queue_same_as_self(finishesInsideExecute: Bool) async throws {
        let procedure = EventConcurrencyTrackingProcedure(name: "TestingProcedure") { procedure in
            if finishesInsideExecute { procedure.finish() } else { DispatchQueue.global().async { procedure.finish() } }
        }
        let didFinish = Signal()
        procedure.addObserver(BlockObserver(didFinish: { _, _ in didFinish.fire() }))
        try await run(procedure)
        try await didFinish.wait("did-finish observers")
        expectNoConcurrentEvents(procedure.tracker)
        #expect(procedure.tracker.history == [
            "observer_didAttach", "observer_willExecute", "do_Execute", "observer_didExecute",
            "override_procedureWillFinish", "observer_willFinish", "override_procedureDidFinish", "observer_didFinish",
        ])
    }
}
