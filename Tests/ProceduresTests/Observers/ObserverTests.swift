import CohortTestSupport
import Dispatch
import Testing

@testable import Procedures

@Suite("Observers")
struct ObserverTests {
    @Test func blockObserverSeesEveryEventInOrder() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let procedure = TestProcedure("p", finishesItself: false)
        procedure.addObserver(RecordingObserver(log: events))
        queue.add(procedure)
        try await waitUntil("did execute") { events.count == 3 }
        procedure.complete()
        try await finished(procedure)
        #expect(events.all == ["p.didAttach", "p.willExecute", "p.didExecute", "p.willFinish", "p.didFinish"])
    }

    /// A procedure that finishes inside `execute()` still reports did-execute before its
    /// finish events: the finish is queued behind the execute event (no thread hop).
    @Test func procedureFinishingInsideExecuteReportsDidExecuteBeforeFinish() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let procedure = TestProcedure("p")
        procedure.addObserver(RecordingObserver(log: events))
        queue.add(procedure)
        try await finished(procedure)
        #expect(events.all == ["p.didAttach", "p.willExecute", "p.didExecute", "p.willFinish", "p.didFinish"])
    }

    @Test func cancelEventIsObserved() async throws {
        let queue = makeQueue()
        let reason = Locked<String?>(nil)
        let procedure = TestProcedure("p", finishesItself: false)
        procedure.addObserver(BlockObserver(didCancel: { _, error in reason.value = error.map { "\($0)" } }))
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.cancel(with: TestError("why"))
        try await finished(procedure)
        #expect(reason.value == "TestError(why)")
    }

    @Test func observerOnADispatchQueueSeesEventsInOrder() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let delivery = DispatchQueue(label: "observer")
        let procedure = TestProcedure("p", finishesItself: false)
        procedure.addObserver(RecordingObserver(log: events, delivery: .on(delivery)))
        queue.add(procedure)
        try await waitUntil("did execute") { events.count == 3 }
        procedure.complete()
        try await finished(procedure)
        try await waitUntil("five events") { events.count == 5 }
        #expect(events.all == ["p.didAttach", "p.willExecute", "p.didExecute", "p.willFinish", "p.didFinish"])
    }

    /// "Will" events delivered on a queue are waited for: the procedure does not move on first.
    @Test func willFinishOnADispatchQueueIsSynchronisedWithTheProcedure() async throws {
        let queue = makeQueue()
        let delivery = DispatchQueue(label: "observer")
        let stateSeen = Locked<Procedure.State?>(nil)
        let onQueue = Locked(false)
        let key = DispatchSpecificKey<Bool>()
        delivery.setSpecific(key: key, value: true)
        let procedure = TestProcedure("p")
        procedure.addObserver(
            BlockObserver(
                delivery: .on(delivery),
                willFinish: { p, _ in
                    onQueue.value = DispatchQueue.getSpecific(key: key) == true
                    stateSeen.value = p.state
                }))
        queue.add(procedure)
        try await finished(procedure)
        // Recorded before `finished` returned, and while the procedure was still finishing.
        #expect(stateSeen.value == .finishing)
        #expect(onQueue.value)
    }

    @Test func willExecuteOnADispatchQueueRunsBeforeExecute() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let procedure = TestProcedure("p", events: events)
        procedure.addObserver(
            BlockObserver(
                delivery: .on(DispatchQueue(label: "o")),
                willExecute: { _ in
                    events.record("willExecute")
                }))
        queue.add(procedure)
        try await finished(procedure)
        #expect(events.all == ["willExecute", "p.execute"])
    }

    @Test func observerAddedLaterSeesOnlyLaterEvents() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let procedure = TestProcedure("p", finishesItself: false)
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.addObserver(RecordingObserver(log: events))
        procedure.complete()
        try await finished(procedure)
        #expect(events.all == ["p.didAttach", "p.willFinish", "p.didFinish"])
        #expect(procedure.observers.count == 1)
    }

    @Test func produceIsObservedAndAddsToTheSameQueue() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let produced = TestProcedure("produced")
        final class Producing: Procedure, @unchecked Sendable {
            // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
            let produced: Procedure
            init(_ produced: Procedure) {
                self.produced = produced
                super.init()
                name = "producer"
            }
            override func execute() {
                produce(produced)
                finish()
            }
        }
        let producer = Producing(produced)
        producer.addObserver(RecordingObserver(log: events))
        queue.add(producer)
        try await finished(producer)
        #expect(try await finished(produced).isSucceeded)
        #expect(events.all.contains("producer.willAdd.produced"))
        #expect(events.all.contains("producer.didAdd.produced"))
    }

    /// A cancel from a will-execute observer (e.g. a timeout of zero) finishes the procedure,
    /// and its work must then not run.
    @Test func cancelFromAWillExecuteObserverKeepsTheWorkFromRunning() async throws {
        let queue = makeQueue()
        let ran = Locked(false)
        let procedure = BlockProcedure { ran.value = true }
        procedure.addObserver(BlockObserver(willExecute: { $0.cancel() }))
        let didExecute = Locked(false)
        procedure.addObserver(BlockObserver(didExecute: { _ in didExecute.value = true }))
        queue.add(procedure)
        #expect(try await finished(procedure).isCancelled)
        try await allFinished(queue)
        #expect(!ran.value)
        #expect(!didExecute.value)
    }
}

@Suite("TimeoutObserver")
struct TimeoutObserverTests {
    /// A procedure that never finishes by itself (until cancelled).
    func hanging(_ name: String = "hanging") -> TestProcedure { TestProcedure(name, finishesItself: false) }

    @Test func timeoutCancelsAProcedureThatRunsTooLong() async throws {
        let queue = makeQueue()
        let procedure = hanging()
        procedure.addObserver(TimeoutObserver(by: .milliseconds(50)))
        let time = try await elapsed {
            queue.add(procedure)
            try await finished(procedure)
        }
        let outcome = try #require(procedure.outcome)
        #expect(outcome.isCancelled)
        #expect(outcome.procedureError?.code == .timedOut)
        #expect(time >= .milliseconds(50))
    }

    @Test func earliestOfSeveralTimeoutsWins() async throws {
        let queue = makeQueue()
        let procedure = hanging()
        procedure.addObserver(TimeoutObserver(by: .seconds(30)))
        procedure.addObserver(TimeoutObserver(by: .milliseconds(40)))
        procedure.addObserver(TimeoutObserver(by: .seconds(20)))
        queue.add(procedure)
        let outcome = try await finished(procedure, within: .seconds(10))
        #expect(outcome.procedureError == ProcedureError.timedOut(after: .milliseconds(40)))
    }

    @Test func noTimeoutFiresAfterTheProcedureFinished() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure("quick")
        let cancels = Locked(0)
        procedure.addObserver(TimeoutObserver(by: .milliseconds(40)))
        procedure.addObserver(BlockObserver(didCancel: { _, _ in cancels.mutate { $0 += 1 } }))
        queue.add(procedure)
        #expect(try await finished(procedure).isSucceeded)
        // The behaviour is about time: give the timer its whole interval, and more.
        try await Task.sleep(for: .milliseconds(120))
        #expect(cancels.value == 0)
        #expect(!procedure.isCancelled)
        #expect(procedure.outcome?.isSucceeded == true)
    }

    @Test(arguments: [Duration.zero, .seconds(-1)])
    func zeroOrNegativeTimeoutCancelsAsItStarts(duration: Duration) async throws {
        let queue = makeQueue()
        let ran = Locked(false)
        let procedure = BlockProcedure { ran.value = true }
        procedure.addObserver(TimeoutObserver(by: duration))
        queue.add(procedure)
        let outcome = try await finished(procedure)
        #expect(outcome.procedureError?.code == .timedOut)
        #expect(!ran.value)
    }

    @Test func oneTimeoutObserverCanWatchSeveralProcedures() async throws {
        let queue = makeQueue()
        let timeout = TimeoutObserver(by: .milliseconds(40))
        let first = hanging("first")
        let second = hanging("second")
        first.addObserver(timeout)
        second.addObserver(timeout)
        queue.add([first, second])
        // Whichever times out first must not disarm the other's timer.
        #expect(try await finished(first).procedureError?.code == .timedOut)
        #expect(try await finished(second).procedureError?.code == .timedOut)
    }

    @Test func timeoutCancelsAnAsyncProcedureCooperatively() async throws {
        let queue = makeQueue()
        let sawCancellation = Locked(false)
        let procedure = AsyncBlockProcedure {
            do { try await Task.sleep(for: .seconds(60)) } catch {
                sawCancellation.value = true
                throw error
            }
        }
        procedure.addObserver(TimeoutObserver(by: .milliseconds(30)))
        queue.add(procedure)
        let outcome = try await finished(procedure)
        #expect(outcome.procedureError?.code == .timedOut)
        #expect(sawCancellation.value)
    }
}
