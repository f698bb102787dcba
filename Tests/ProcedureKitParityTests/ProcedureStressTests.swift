import Dispatch
import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitStressTests/ProcedureStressTests.swift`, at its scale
/// (2 batches of 10,000 unless it names another level).
@Suite("ProcedureStressTests", .serialized)
struct ProcedureStressTests {
    @Test func test__completion_blocks() async throws {
        try await stress { batch, iteration in
            batch.enter()
            let procedure = TestProcedure(name: "Iteration \(iteration)")
            procedure.whenFinished { _ in batch.leave() }
            batch.queue.add(procedure)
        }
    }

    @Test func test__cancel_or_finish_with_errors() async throws {
        // It is possible for a TestProcedure to finish before it is cancelled.
        try await stress { batch, iteration in
            batch.enter()
            let procedure = TestProcedure(name: "Iteration \(iteration)")
            procedure.addObserver(
                BlockObserver(didFinish: { _, outcome in
                    if !outcome.isSucceeded && !outcome.isCancelled { batch.incrementCounter(named: "failed") }
                    batch.leave()
                }))
            batch.queue.add(procedure)
            procedure.cancel(with: TestError())
        } ended: { batch in
            #expect(batch.counter(named: "failed") == 0)
        }
    }

    @Test func test__cancel_with_errors_prior_to_execute() async throws {
        try await stress { batch, iteration in
            batch.enter()
            let procedure = TestProcedure(name: "Iteration \(iteration)")
            procedure.addObserver(
                BlockObserver(didFinish: { _, outcome in
                    if !(outcome.isCancelled && outcome.error is TestError) {
                        batch.incrementCounter(named: "cancel error lost")
                    }
                    batch.leave()
                }))
            procedure.cancel(with: TestError())
            batch.queue.add(procedure)
        } ended: { batch in
            #expect(batch.counter(named: "cancel error lost") == 0)
        }
    }

    @Test func test__cancel_with_errors_from_will_execute_observer() async throws {
        try await stress { batch, iteration in
            batch.enter()
            let procedure = TestProcedure(name: "Iteration \(iteration)")
            procedure.addObserver(
                BlockObserver(didFinish: { procedure, outcome in
                    if !(outcome.isCancelled && outcome.error is TestError) {
                        batch.incrementCounter(named: "cancel error lost")
                    }
                    if (procedure as! TestProcedure).didExecute { batch.incrementCounter(named: "executed") }
                    batch.leave()
                }))
            procedure.addObserver(BlockObserver(willExecute: { $0.cancel(with: TestError()) }))
            batch.queue.add(procedure)
        } ended: { batch in
            #expect(batch.counter(named: "cancel error lost") == 0)
            #expect(batch.counter(named: "executed") == 0)
        }
    }

    @Test func test__adding_many_conditions() async throws {
        let procedure = TestProcedure()
        for _ in 0..<10_000 { procedure.addCondition(TestCondition.satisfied()) }
        #expect(try await run(procedure, within: .seconds(60)).isSucceeded)
        #expect(procedure.didExecute)
    }

    @Test func test__adding_many_conditions_each_with_single_dependency() async throws {
        let procedure = TestProcedure()
        var produced: [TestProcedure] = []
        for _ in 0..<10_000 {
            let condition = TestCondition.satisfied()
            let dependency = TestProcedure()
            produced.append(dependency)
            condition.produceDependency(dependency)
            procedure.addCondition(condition)
        }
        #expect(try await run(procedure, within: .seconds(60)).isSucceeded)
        #expect(produced.allSatisfy { $0.isFinished && $0.didExecute })
    }

    @Test func test__dependencies_execute_before_condition_dependencies() async throws {
        try await stress { batch, iteration in
            batch.enter()
            let procedure = TestProcedure(name: "TestProcedure (\(iteration))")
            procedure.whenFinished { _ in batch.leave() }
            let dependency1 = TestProcedure(name: "Dependency 1 (\(iteration))")
            let dependency2 = TestProcedure(name: "Dependency 2 (\(iteration))")
            procedure.addDependencies([dependency1, dependency2])
            let conditionDependency1 = BlockProcedure {
                if !dependency1.isFinished { batch.incrementCounter(named: "dependency 1 not finished") }
                if !dependency2.isFinished { batch.incrementCounter(named: "dependency 2 not finished") }
            }
            conditionDependency1.name = "Condition 1 Dependency"
            let condition1 = TestCondition.satisfied("Condition 1")
            condition1.produceDependency(conditionDependency1)
            procedure.addCondition(condition1)
            batch.queue.add([dependency1, dependency2])
            batch.queue.add(procedure)
        } ended: { batch in
            #expect(batch.counter(named: "dependency 1 not finished") == 0)
            #expect(batch.counter(named: "dependency 2 not finished") == 0)
        }
    }

    @Test func test__conditions_do_not_fail_when_will_finish_observer_cancels_and_deallocates_procedure() async throws {
        try await stress { batch, _ in
            batch.enter()
            let procedure = TestProcedure()
            procedure.addCondition(TestCondition.failing())
            procedure.addObserver(BlockObserver(didFinish: { _, _ in batch.leave() }))
            batch.queue.add(procedure)
            procedure.cancel()
        }
    }

    /// Cohort: a failed condition finishes the procedure failed (ProcedureKit: cancelled with the error).
    @Test func test__conditions_queue_suspension_safety() async throws {
        let procedures = Locked<[TestProcedure]>([])
        let cycles = Locked(0)
        let stop = Locked<Locked<Bool>?>(nil)
        try await stress { batch, iteration in
            if iteration == 0 {
                stop.value?.value = true
                let stopThisLoop = Locked(false)
                stop.value = stopThisLoop
                let queue = batch.queue
                DispatchQueue.global(qos: .userInteractive).async {
                    repeat {
                        queue.isSuspended = true
                        queue.isSuspended = false
                        cycles.mutate { $0 += 1 }
                    } while !stopThisLoop.value
                }
            }
            batch.enter()
            let procedure = TestProcedure()
            procedure.addCondition(TestCondition.failing())
            procedure.addObserver(BlockObserver(didFinish: { _, _ in batch.leave() }))
            procedures.mutate { $0.append(procedure) }
            batch.queue.add(procedure)
        }
        stop.value?.value = true
        #expect(cycles.value > 0)
        for procedure in procedures.value {
            #expect(procedure.outcome?.isFailed == true)
            #expect(procedure.outcome?.error is FalseConditionError)
            #expect(!procedure.didExecute)
        }
    }

    final class TestAttemptsMultipleFinishesProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: no stored properties of its own.
        override init() {
            super.init()
            name = "Test Procedure"
        }

        override func execute() {
            for _ in 0..<3 { DispatchQueue.global().async { self.finish() } }
        }
    }

    @Test func test__concurrent_calls_to_finish_only_first_succeeds() async throws {
        try await stress { batch, _ in
            batch.enter()
            let procedure = TestAttemptsMultipleFinishesProcedure()
            let finishes = Locked(0)
            procedure.addObserver(
                BlockObserver(didFinish: { _, _ in
                    if finishes.mutate({
                        $0 += 1
                        return $0
                    }) > 1 {
                        batch.incrementCounter(named: "finishedProcedureMoreThanOnce")
                    }
                    batch.leave()
                }))
            batch.queue.add(procedure)
        } ended: { batch in
            #expect(batch.counter(named: "finishedProcedureMoreThanOnce") == 0)
        }
    }

    /// Defect 6: did-cancel never overlaps will-execute, execute or the finish events when
    /// cancel() races the start. (ProcedureKit: 2 × 1,000 with a 50 ms sleep in execute;
    /// here 2 × 10,000, finishing from another thread instead of sleeping.)
    @Test func test__cancelled_procedure_no_concurrent_events() async throws {
        try await stress { batch, _ in
            batch.enter()
            let procedure = EventConcurrencyTrackingProcedure { procedure in
                DispatchQueue.global().async { procedure.finish() }
            }
            procedure.addObserver(
                BlockObserver(didFinish: { procedure, _ in
                    if !(procedure as! EventConcurrencyTrackingProcedure).tracker.overlaps.isEmpty {
                        batch.incrementCounter(named: "overlapping events")
                    }
                    batch.leave()
                }))
            batch.queue.add(procedure)
            procedure.cancel()
        } ended: { batch in
            #expect(batch.counter(named: "overlapping events") == 0)
        }
    }

    /// Defect 6: finish() from another thread while execute() still runs delivers the finish
    /// events after execute() returns, and never deadlocks with an execute() that waits for
    /// that finish() call to return.
    @Test func test__finish_from_asynchronous_callback_while_execute_is_still_running() async throws {
        try await stress { batch, _ in
            batch.enter()
            let procedure = EventConcurrencyTrackingProcedure { procedure in
                let returned = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    procedure.finish()
                    returned.signal()
                }
                returned.wait()
            }
            procedure.addObserver(
                BlockObserver(didFinish: { procedure, _ in
                    if !(procedure as! EventConcurrencyTrackingProcedure).tracker.overlaps.isEmpty {
                        batch.incrementCounter(named: "overlapping events")
                    }
                    batch.leave()
                }))
            batch.queue.add(procedure)
            procedure.cancel()
        } ended: { batch in
            #expect(batch.counter(named: "overlapping events") == 0)
        }
    }
}
