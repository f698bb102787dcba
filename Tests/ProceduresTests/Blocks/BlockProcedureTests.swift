import CohortTestSupport
import Testing

@testable import Procedures

@Suite("Block procedures")
struct BlockProcedureTests {
    @Test func blockProcedureRunsItsBlock() async throws {
        let queue = makeQueue()
        let ran = Locked(0)
        let procedure = BlockProcedure { ran.mutate { $0 += 1 } }
        queue.add(procedure)
        #expect(try await finished(procedure).isSucceeded)
        #expect(ran.value == 1)
    }

    @Test func blockProcedureThatThrowsFails() async throws {
        let queue = makeQueue()
        let procedure = BlockProcedure { throw TestError("block") }
        queue.add(procedure)
        #expect(try await finished(procedure).error as? TestError == TestError("block"))
    }

    @Test func resultProcedureOutputsItsValue() async throws {
        let queue = makeQueue()
        let procedure = ResultProcedure { "hello" }
        #expect(procedure.output.isPending)
        queue.add(procedure)
        #expect(try await finished(procedure).isSucceeded)
        #expect(procedure.output.success == "hello")
        #expect(procedure.output.failure == nil)
    }

    @Test func resultProcedureThatThrowsHasAFailedOutput() async throws {
        let queue = makeQueue()
        let procedure = ResultProcedure<Int> { throw TestError("nope") }
        queue.add(procedure)
        #expect(try await finished(procedure).isFailed)
        #expect(procedure.output.failure as? TestError == TestError("nope"))
        #expect(procedure.output.success == nil)
    }

    @Test func asyncResultProcedureOutputsItsValue() async throws {
        let queue = makeQueue()
        let procedure = AsyncResultProcedure<Int> {
            try await Task.sleep(for: .milliseconds(1))
            return 7
        }
        #expect(try await queue.run(procedure) == 7)
        #expect(procedure.output.success == 7)
    }

    @Test func asyncBlockProcedureThatThrowsFails() async throws {
        let queue = makeQueue()
        let procedure = AsyncBlockProcedure { throw TestError("async") }
        queue.add(procedure)
        #expect(try await finished(procedure).error as? TestError == TestError("async"))
    }

    /// Cancelling cancels the task; the procedure finishes when the closure has returned.
    @Test func cancellingAnAsyncProcedureCancelsItsTaskAndWaitsForIt() async throws {
        let queue = makeQueue()
        let started = Locked(false)
        let stopped = Locked(false)
        let procedure = AsyncBlockProcedure {
            started.value = true
            defer { stopped.value = true }
            try await Task.sleep(for: .seconds(60))
        }
        queue.add(procedure)
        try await waitUntil("the task runs") { started.value }
        procedure.cancel(with: TestError("enough"))
        let outcome = try await finished(procedure)
        #expect(stopped.value)
        #expect(outcome.isCancelled)
        #expect(outcome.error as? TestError == TestError("enough"))
    }

    @Test func asyncProcedureCancelledBeforeItStartsNeverRunsItsClosure() async throws {
        let queue = makeQueue()
        let ran = Locked(false)
        let procedure = AsyncBlockProcedure { ran.value = true }
        procedure.cancel()
        queue.add(procedure)
        #expect(try await finished(procedure).isCancelled)
        #expect(!ran.value)
    }

    @Test func asyncProcedureThatIgnoresCancellationStillEndsCancelled() async throws {
        let queue = makeQueue()
        let release = Locked(false)
        let started = Locked(false)
        let procedure = AsyncResultProcedure<Int> {
            started.value = true
            while !release.value { await Task.yield() }
            return 1
        }
        queue.add(procedure)
        try await waitUntil("started") { started.value }
        procedure.cancel()
        // Not finished until the closure returns.
        #expect(procedure.state == .executing)
        release.value = true
        #expect(try await finished(procedure).isCancelled)
    }

    @Test func transformProcedureTransformsItsInput() async throws {
        let queue = makeQueue()
        let procedure = TransformProcedure(input: 20) { $0 + 1 }
        #expect(try await queue.run(procedure) == 21)
    }

    @Test func transformProcedureWithoutInputFailsWithRequirementNotSatisfied() async throws {
        let queue = makeQueue()
        let ran = Locked(false)
        let procedure = TransformProcedure<Int, Int> {
            ran.value = true
            return $0
        }
        queue.add(procedure)
        let outcome = try await finished(procedure)
        #expect(outcome.procedureError?.code == .requirementNotSatisfied)
        #expect(procedure.output.failure != nil)
        #expect(!ran.value)
    }

    @Test func transformProcedureThatThrowsFails() async throws {
        let queue = makeQueue()
        let procedure = TransformProcedure<Int, Int>(input: 1) { _ in throw TestError("t") }
        queue.add(procedure)
        #expect(try await finished(procedure).error as? TestError == TestError("t"))
        #expect(procedure.output.failure as? TestError == TestError("t"))
    }

    @Test func asyncTransformProcedureTransformsItsInput() async throws {
        let queue = makeQueue()
        let procedure = AsyncTransformProcedure(input: "abc") { input in
            try await Task.sleep(for: .milliseconds(1))
            return input.count
        }
        #expect(try await queue.run(procedure) == 3)
    }

    @Test func asyncTransformProcedureWithoutInputFails() async throws {
        let queue = makeQueue()
        let procedure = AsyncTransformProcedure<Int, Int> { $0 }
        queue.add(procedure)
        #expect(try await finished(procedure).procedureError?.code == .requirementNotSatisfied)
    }

    @Test func cancellingAnAsyncTransformCancelsItsTask() async throws {
        let queue = makeQueue()
        let started = Locked(false)
        let procedure = AsyncTransformProcedure(input: 1) { value in
            started.value = true
            try await Task.sleep(for: .seconds(60))
            return value
        }
        queue.add(procedure)
        try await waitUntil("started") { started.value }
        procedure.cancel()
        #expect(try await finished(procedure).isCancelled)
        #expect(procedure.output.failure is CancellationError)
    }

    @Test func delayProcedureWaitsForItsDuration() async throws {
        let queue = makeQueue()
        let procedure = DelayProcedure(by: .milliseconds(50))
        let time = try await elapsed {
            queue.add(procedure)
            try await finished(procedure)
        }
        #expect(procedure.outcome?.isSucceeded == true)
        #expect(time >= .milliseconds(50))
    }

    @Test(arguments: [Duration.zero, .milliseconds(-5)])
    func delayOfZeroOrLessFinishesAtOnce(delay: Duration) async throws {
        let queue = makeQueue()
        let procedure = DelayProcedure(by: delay)
        queue.add(procedure)
        #expect(try await finished(procedure).isSucceeded)
    }

    @Test func delayProcedureCancelledWhileWaitingFinishesAtOnce() async throws {
        let queue = makeQueue()
        let procedure = DelayProcedure(by: .seconds(60))
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.cancel()
        #expect(procedure.isFinished)
        #expect(try await finished(procedure, within: .seconds(5)).isCancelled)
    }

    @Test func delayBeforeADependentDelaysIt() async throws {
        let queue = makeQueue()
        let delay = DelayProcedure(by: .milliseconds(30))
        let delayFinished = Locked(false)
        delay.whenFinished { _ in delayFinished.value = true }
        let sawDelayFinished = Locked(false)
        let after = BlockProcedure { sawDelayFinished.value = delayFinished.value }
        after.addDependency(delay)
        queue.add([after, delay])
        try await finished(after)
        #expect(sawDelayFinished.value)
    }
}
