import CohortTestSupport
import Dispatch
import Testing

@testable import Procedures

@Suite("ProcedureQueue")
struct ProcedureQueueTests {
    @Test func addedProcedureRuns() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure()
        queue.add(procedure)
        #expect(try await finished(procedure).isSucceeded)
        #expect(procedure.executions.value == 1)
    }

    @Test func addingManyRunsThemAll() async throws {
        let queue = makeQueue()
        let procedures = (0..<50).map { TestProcedure("p\($0)") }
        queue.add(procedures)
        try await allFinished(queue)
        #expect(procedures.allSatisfy { $0.executions.value == 1 && $0.outcome?.isSucceeded == true })
        #expect(queue.count == 0)
    }

    @Test(arguments: [1, 2, 3])
    func maxConcurrentCountLimitsHowManyExecuteAtOnce(limit: Int) async throws {
        let queue = makeQueue(maxConcurrentCount: limit)
        let gauge = Gauge()
        let procedures = (0..<12).map { TestProcedure("p\($0)", finishesItself: false, gauge: gauge) }
        queue.add(procedures)
        // Finish executing procedures one by one as they start, checking the cap each time.
        var done = 0
        while done < procedures.count {
            try await waitUntil("a procedure executes") { procedures.contains { $0.isExecuting } }
            #expect(gauge.current <= limit)
            if let running = procedures.first(where: { $0.isExecuting }) {
                running.complete()
                done += 1
            }
        }
        try await allFinished(queue)
        #expect(gauge.max == limit)
    }

    @Test func raisingMaxConcurrentCountStartsWaitingProcedures() async throws {
        let queue = makeQueue(maxConcurrentCount: 1)
        let first = TestProcedure("first", finishesItself: false)
        let second = TestProcedure("second", finishesItself: false)
        queue.add([first, second])
        try await waitUntil("first executes") { first.isExecuting }
        #expect(second.state == .ready)
        queue.maxConcurrentCount = 2
        try await waitUntil("second executes") { second.isExecuting }
        first.complete()
        second.complete()
        try await allFinished(queue)
    }

    @Test func suspendedQueueStartsNothingEvaluatesNoConditionAndRequestsNoLock() async throws {
        let queue = makeQueue(isSuspended: true)
        let manager = RecordingExclusivityManager()
        queue.exclusivityManager = manager
        let evaluated = Locked(false)
        let plain = TestProcedure("plain")
        let conditional = TestProcedure("conditional")
        conditional.addCondition(
            BlockCondition {
                evaluated.value = true
                return true
            })
        let exclusive = TestProcedure("exclusive")
        exclusive.addCondition(MutuallyExclusive(category: "db"))
        queue.add([plain, conditional, exclusive])
        #expect(queue.isSuspended)
        // Nothing can happen: there is no event to wait for, so check that each is still pending.
        #expect(plain.state == .pending)
        #expect(conditional.state == .pending)
        #expect(exclusive.state == .pending)
        #expect(!evaluated.value)
        #expect(manager.calls.isEmpty)
        #expect(!plain.didExecute)

        queue.isSuspended = false
        try await allFinished(queue)
        #expect(evaluated.value)
        #expect(manager.calls(.request, for: "exclusive").count == 1)
        #expect([plain, conditional, exclusive].allSatisfy { $0.didExecute })
    }

    @Test func suspendingARunningQueueStopsFurtherStarts() async throws {
        let queue = makeQueue(maxConcurrentCount: 1)
        let first = TestProcedure("first", finishesItself: false)
        let second = TestProcedure("second")
        queue.add([first, second])
        try await waitUntil("first executes") { first.isExecuting }
        queue.isSuspended = true
        first.complete()
        try await finished(first)
        #expect(second.state == .ready)
        #expect(!second.didExecute)
        queue.isSuspended = false
        #expect(try await finished(second).isSucceeded)
    }

    @Test func procedureWhoseDependencyFinishesWhileSuspendedWaitsForResume() async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("dependency", finishesItself: false)
        let dependent = TestProcedure("dependent")
        let evaluated = Locked(false)
        dependent.addCondition(
            BlockCondition {
                evaluated.value = true
                return true
            })
        dependent.addDependency(dependency)
        queue.add([dependency, dependent])
        try await waitUntil("dependency executes") { dependency.isExecuting }
        queue.isSuspended = true
        dependency.complete()
        try await finished(dependency)
        #expect(dependent.state == .pending)
        #expect(!evaluated.value)
        queue.isSuspended = false
        #expect(try await finished(dependent).isSucceeded)
        #expect(evaluated.value)
    }

    @Test func cancelAllCancelsEveryProcedureOnTheQueue() async throws {
        let queue = makeQueue(maxConcurrentCount: 1)
        let running = TestProcedure("running", finishesItself: false)
        let waiting = (0..<5).map { TestProcedure("waiting\($0)") }
        queue.add(running)
        queue.add(waiting)
        try await waitUntil("running executes") { running.isExecuting }
        queue.cancelAll(with: TestError("stop"))
        try await allFinished(queue)
        #expect(running.outcome?.isCancelled == true)
        #expect(waiting.allSatisfy { $0.outcome?.isCancelled == true && !$0.didExecute })
        #expect(waiting.allSatisfy { $0.error as? TestError == TestError("stop") })
    }

    final class RecordingDelegate: ProcedureQueueDelegate, @unchecked Sendable {
        // @unchecked Sendable: the only state is the Sendable event log.
        let events = EventLog()
        func procedureQueue(_ queue: ProcedureQueue, willAdd procedure: Procedure) {
            events.record("willAdd.\(procedure.name).\(procedure.state)")
        }
        func procedureQueue(_ queue: ProcedureQueue, didAdd procedure: Procedure) {
            events.record("didAdd.\(procedure.name)")
        }
        func procedureQueue(_ queue: ProcedureQueue, willFinish procedure: Procedure, with outcome: ProcedureOutcome) {
            events.record("willFinish.\(procedure.name).\(outcome.isFailed).\(procedure.state)")
        }
        func procedureQueue(_ queue: ProcedureQueue, didFinish procedure: Procedure, with outcome: ProcedureOutcome) {
            events.record("didFinish.\(procedure.name).\(procedure.state)")
        }
    }

    @Test func delegateHearsWillAndDidAddAndWillAndDidFinish() async throws {
        let queue = makeQueue(isSuspended: true)
        let delegate = RecordingDelegate()
        queue.delegate = delegate
        let procedure = TestProcedure("p", error: TestError())
        queue.add(procedure)
        #expect(delegate.events.all == ["willAdd.p.pending", "didAdd.p"])
        queue.isSuspended = false
        try await finished(procedure)
        try await waitUntil("didFinish delivered") { delegate.events.count == 4 }
        #expect(
            delegate.events.all == [
                "willAdd.p.pending", "didAdd.p", "willFinish.p.true.finishing", "didFinish.p.finished",
            ])
    }

    @Test func waitUntilAllFinishedReturnsAtOnceOnAnEmptyQueue() async throws {
        try await allFinished(makeQueue(), within: .seconds(5))
    }

    @Test func waitUntilAllFinishedWaitsForEveryProcedure() async throws {
        let queue = makeQueue()
        let procedures = (0..<3).map { TestProcedure("p\($0)", finishesItself: false) }
        queue.add(procedures)
        let returned = Locked(false)
        let waiter = Task {
            await queue.waitUntilAllFinished()
            returned.value = true
        }
        try await waitUntil("all execute") { procedures.allSatisfy(\.isExecuting) }
        procedures[0].complete()
        procedures[1].complete()
        try await finished(procedures[1])
        #expect(!returned.value)
        #expect(queue.count == 1)
        procedures[2].complete()
        try await within { await waiter.value }
        #expect(returned.value)
    }

    @Test func runReturnsTheOutput() async throws {
        let queue = makeQueue()
        let value = try await queue.run(ResultProcedure { 42 })
        #expect(value == 42)
    }

    @Test func runThrowsTheFailure() async throws {
        let queue = makeQueue()
        await #expect(throws: TestError("bad")) {
            try await queue.run(ResultProcedure<Int> { throw TestError("bad") })
        }
        await #expect(throws: TestError("plain")) {
            try await queue.run(TestProcedure(error: TestError("plain")))
        }
    }

    @Test func runThrowsTheCancellationReasonOrCancellationError() async throws {
        let queue = makeQueue()
        let withReason = ResultProcedure { 1 }
        withReason.cancel(with: TestError("why"))
        await #expect(throws: TestError("why")) { try await queue.run(withReason) }
        let withoutReason = ResultProcedure { 1 }
        withoutReason.cancel()
        await #expect(throws: CancellationError.self) { try await queue.run(withoutReason) }
    }

    @Test func proceduresStartInTheOrderTheyBecameReady() async throws {
        let queue = makeQueue(maxConcurrentCount: 1, isSuspended: true)
        let events = EventLog()
        let procedures = (0..<10).map { TestProcedure("p\($0)", events: events) }
        queue.add(procedures)
        queue.isSuspended = false
        try await allFinished(queue)
        #expect(events.all == (0..<10).map { "p\($0).execute" })
    }

    @Test func concurrentAddsFromManyThreadsRunEveryProcedureOnce() async throws {
        let queue = makeQueue(maxConcurrentCount: 4)
        let procedures = (0..<400).map { TestProcedure("p\($0)") }
        DispatchQueue.concurrentPerform(iterations: procedures.count) { queue.add(procedures[$0]) }
        try await allFinished(queue)
        #expect(procedures.allSatisfy { $0.executions.value == 1 && $0.isFinished })
    }
}
