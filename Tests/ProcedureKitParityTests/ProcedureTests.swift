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
        procedure.addObserver(
            Recorder(delivery: .on(customEventQueue)) { event in
                if DispatchQueue.getSpecific(key: key) == true {
                    eventsOnSpecifiedQueue.record(event)
                } else {
                    eventsNotOnSpecifiedQueue.record(event)
                }
            })
        try await run(procedure)
        try await waitUntil("five observer events") {
            eventsOnSpecifiedQueue.count + eventsNotOnSpecifiedQueue.count >= 5
        }
        #expect(eventsNotOnSpecifiedQueue.all == [])
        #expect(
            eventsOnSpecifiedQueue.all
                == [
                    "observer_didAttach", "observer_willExecute", "observer_didExecute", "observer_willFinish",
                    "observer_didFinish",
                ])
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
        #expect(
            procedure.tracker.history == [
                "observer_didAttach", "observer_willExecute", "do_Execute", "observer_didExecute",
                "override_procedureWillFinish", "observer_willFinish", "override_procedureDidFinish",
                "observer_didFinish",
            ])
    }
}

/// ProcedureKit's `ProcedureTests` identity tests, and its `produce(operation:before:)` tests:
/// ProcedureKit hands will-execute and will-finish observers a `PendingEvent`; in Cohort an
/// observer takes one with `postpone(_:)`.
@Suite("ProcedureTests: identity and produce before")
struct ProcedureIdentityAndProduceTests {
    @Test func test__identity_is_equatable() {
        let procedure = TestProcedure()
        let identity1 = procedure.identity
        let identity2 = procedure.identity
        #expect(identity1 == identity2)
        #expect(identity1 != TestProcedure().identity)
    }

    /// Cohort's name is never nil (it defaults to the type's), so the "Unnamed Procedure"
    /// half becomes: a renamed procedure keeps its number.
    @Test func test__identity_description() {
        let procedure = TestProcedure()
        #expect(procedure.identity.description.hasPrefix("TestProcedure #"))
        let number = procedure.identity.number
        procedure.name = "Renamed"
        #expect(procedure.identity.description == "Renamed #\(number)")
        #expect(BlockProcedure {}.identity.description.hasPrefix("BlockProcedure #"))
    }

    @Test func test__procedure_produce_operation_before_execute() async throws {
        let producedOperation = TestProcedure(name: "ProducedOperation", delay: .milliseconds(5))
        let procedure = EventConcurrencyTrackingProcedure { $0.finish() }
        procedure.addObserver(
            BlockObserver(willExecute: { procedure in
                procedure.produce(producedOperation, before: procedure.postpone(.execute))
            }))
        try await run(procedure)
        try await finished(producedOperation)
        #expect(producedOperation.didExecute)
        expectNoConcurrentEvents(procedure.tracker)
        // The produced procedure was added (will-add, did-add) before the procedure executed.
        let history = procedure.tracker.history
        let added = try #require(history.firstIndex(of: "observer_procedureDidAdd"))
        let executed = try #require(history.firstIndex(of: "do_Execute"))
        #expect(added < executed, "\(history)")
    }

    @Test func test__procedure_produce_operation_before_execute_async() async throws {
        let producedOperation = TestProcedure(name: "ProducedOperation", delay: .milliseconds(5))
        let procedure = TestProcedure()
        let seenInWillAdd = Locked<(executing: Bool, finished: Bool)?>(nil)
        procedure.addObserver(
            BlockObserver(
                willExecute: { procedure in
                    let pending = procedure.postpone(.execute)
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) {
                        // Long after the observer returned, the procedure has still not executed.
                        procedure.produce(producedOperation, before: pending)
                    }
                },
                willAdd: { procedure, added in
                    guard added === producedOperation else { return }
                    seenInWillAdd.value = ((procedure as! TestProcedure).didExecute, procedure.isFinished)
                }))
        try await run(procedure)
        try await finished(producedOperation)
        let seen = try #require(seenInWillAdd.value, "the will-add observer never ran for the produced procedure")
        #expect(!seen.executing, "the procedure executed before the produced procedure was added")
        #expect(!seen.finished)
        #expect(procedure.didExecute)
    }

    @Test func test__procedure_produce_operation_before_finish() async throws {
        let producedOperation = TestProcedure(name: "ProducedOperation", delay: .milliseconds(5))
        let procedure = EventConcurrencyTrackingProcedure { $0.finish() }
        procedure.addObserver(
            BlockObserver(willFinish: { procedure, _ in
                procedure.produce(producedOperation, before: procedure.postpone(.finish))
            }))
        try await run(procedure)
        try await finished(producedOperation)
        #expect(procedure.outcome?.isSucceeded == true)
        let history = procedure.tracker.history
        let added = try #require(history.firstIndex(of: "observer_procedureDidAdd"))
        let didFinish = try #require(history.firstIndex(of: "observer_didFinish"))
        #expect(added < didFinish, "\(history)")
    }

    @Test func test__procedure_produce_operation_before_finish_async() async throws {
        let producedOperation = TestProcedure(name: "ProducedOperation", delay: .milliseconds(5))
        let procedure = TestProcedure()
        let finishedInWillAdd = Locked<Bool?>(nil)
        procedure.addObserver(
            BlockObserver(
                willAdd: { procedure, added in
                    guard added === producedOperation else { return }
                    finishedInWillAdd.value = procedure.isFinished
                },
                willFinish: { procedure, _ in
                    let pending = procedure.postpone(.finish)
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) {
                        procedure.produce(producedOperation, before: pending)
                    }
                }))
        try await run(procedure)
        try await finished(producedOperation)
        #expect(finishedInWillAdd.value == false, "the procedure finished before the produced procedure was added")
    }

    /// Not in ProcedureKit: a hold that is dropped without being passed on lets the event
    /// happen (it is released when its last reference goes), so it never hangs the procedure.
    @Test func dropped_pending_event_releases_the_event() async throws {
        let procedure = TestProcedure()
        procedure.addObserver(BlockObserver(willExecute: { procedure in _ = procedure.postpone(.execute) }))
        try await run(procedure)
        #expect(procedure.didExecute)
    }

    /// Not in ProcedureKit: a procedure cancelled while its execute is postponed finishes
    /// cancelled at once (automatic finishing), without executing, even when the hold is
    /// released later.
    @Test func cancelled_while_execute_is_postponed_does_not_execute() async throws {
        let procedure = TestProcedure()
        let held = Locked<PendingEvent?>(nil)
        let postponed = Signal()
        procedure.addObserver(
            BlockObserver(willExecute: { procedure in
                held.value = procedure.postpone(.execute)
                postponed.fire()
            }))
        let queue = makeQueue()
        queue.add(procedure)
        try await postponed.wait("the execute postponed")
        procedure.cancel()
        let outcome = try await finished(procedure)
        #expect(outcome.isCancelled)
        held.value?.release()
        #expect(!procedure.didExecute)
    }
}

/// ProcedureKit's `DependencyTests` for `then(do:)`, and its `enqueue` tests.
@Suite("DependencyTests")
struct DependencyTests {
    @Test func test__operation_added_using_then_follows_receiver() async throws {
        let procedure = TestProcedure()
        let another = TestProcedure(name: "Another")
        let procedures = procedure.then(do: another)
        #expect(procedures == [procedure, another])
        try await run(procedure, another)
        #expect(another.dependencies == [procedure])
        #expect(procedure.didExecute && another.didExecute)
    }

    @Test func test__operation_added_using_then_via_closure_follows_receiver() async throws {
        let procedure = TestProcedure()
        let another = TestProcedure(name: "Another")
        let procedures = procedure.then { another }
        #expect(procedures == [procedure, another])
        #expect(another.dependencies == [procedure])
        try await run(procedure, another)
    }

    @Test func test__operation_added_using_then_via_closure_returning_nil() {
        let procedure = TestProcedure()
        #expect(procedure.then { nil } == [procedure])
    }

    @Test func test__operation_added_using_then_via_closure_throwing_error() {
        let procedure = TestProcedure()
        #expect(throws: TestError.self) { try procedure.then { throw TestError() } }
    }

    /// `another` waits for all three: it has not finished while `two` is held back.
    @Test func test__operation_added_to_array_using_then() async throws {
        let one = TestProcedure(name: "One")
        let release = Signal()
        let two = AsyncBlockProcedure { try? await release.wait("the test releasing two") }
        two.name = "Two"
        let procedure = TestProcedure()
        let another = TestProcedure(name: "Another")
        let all = [one, two, procedure].then(do: another)
        #expect(all.count == 4)
        #expect(all.last === another)
        let queue = makeQueue()
        queue.add(all)
        try await finished(procedure)
        try await finished(one)
        #expect(!another.isFinished && !another.didExecute)
        release.fire()
        try await finished(another)
        #expect(another.didExecute)
        #expect(
            Set(another.dependencies.map(ObjectIdentifier.init))
                == Set([one, two, procedure].map(ObjectIdentifier.init)))
    }

    @Test func test__operation_added_to_array_using_then_via_closure() async throws {
        let one = TestProcedure(name: "One")
        let two = TestProcedure(name: "Two")
        let another = TestProcedure(name: "Another")
        let all = [one, two].then { another }
        #expect(all.count == 3)
        #expect(another.dependencies.count == 2)
        let queue = makeQueue()
        queue.add(all)
        try await finished(another)
        #expect(one.isFinished && two.isFinished)
    }

    @Test func test__operation_added_to_array_using_then_via_closure_returning_nil() {
        let one = TestProcedure(name: "One")
        let two = TestProcedure(name: "Two")
        let all = [one, two].then { nil }
        #expect(all.count == 2)
        #expect(one.dependencies.isEmpty && two.dependencies.isEmpty)
    }

    @Test func test__operation_added_to_array_using_then_via_closure_throwing_error() {
        let one = TestProcedure(name: "One")
        let two = TestProcedure(name: "Two")
        #expect(throws: TestError.self) { try [one, two].then { throw TestError() } }
    }

    /// ProcedureKit enqueues on `ProcedureQueue.main`; Cohort on `ProcedureQueue.shared`.
    @Test func test__enqueue_a_sequence_of_operations() async throws {
        let procedure = TestProcedure()
        [procedure].enqueue()
        try await finished(procedure)
        #expect(procedure.didExecute)
        let single = TestProcedure()
        single.enqueue()
        try await finished(single)
    }

    @Test func test__enqueue_a_sequence_of_operations_deallocates_queue() async throws {
        let procedure = TestProcedure()
        weak var weakQueue: ProcedureQueue?
        do {
            let queue = makeQueue()
            weakQueue = queue
            [procedure].enqueue(on: queue)
        }
        try await finished(procedure)
        try await waitUntil("the queue deallocated") { weakQueue == nil }
    }
}
