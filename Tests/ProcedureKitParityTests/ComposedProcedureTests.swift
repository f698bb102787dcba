import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/ComposedProcedureTests.swift` (`ComposedProcedure`
/// and `GatedProcedure`). Its `test__composed_operation_is_executed` wraps a Foundation
/// `BlockOperation`: here a BlockProcedure, as Cohort composes procedures only.
@Suite("ComposedProcedureTests")
struct ComposedProcedureTests {
    @Test func test__composed_procedure_is_cancelled() async throws {
        let procedure = TestProcedure(delay: .seconds(30))
        let didCancel = Signal()
        procedure.addObserver(BlockObserver(didCancel: { _, _ in didCancel.fire() }))
        let composed = ComposedProcedure(procedure)
        composed.cancel()
        #expect(composed.isCancelled)
        try await didCancel.wait("the composed procedure's cancel")
        #expect(composed.procedure.isCancelled)
        #expect(procedure.isCancelled)
    }

    @Test func test__composed_operation_is_executed() async throws {
        let executed = Locked(false)
        let composed = ComposedProcedure(BlockProcedure { executed.value = true })
        #expect(try await run(composed).isSucceeded)
        #expect(executed.value)
    }

    @Test func test__composed_procedure_is_executed() async throws {
        let procedure = TestProcedure()
        let composed = ComposedProcedure(procedure)
        #expect(try await run(composed).isSucceeded)
        #expect(procedure.didExecute && procedure.isFinished)
    }

    /// A composed input/output procedure takes the input and gives the output of what it wraps.
    @Test func composed_procedure_passes_input_and_output() async throws {
        let hello = ResultProcedure { "Hello " }
        let composed = ComposedProcedure(SuffixProcedure("Foo")).injectResult(from: hello)
        try await run(hello, composed)
        #expect(composed.output.success == "Hello Foo")
    }
}

@Suite("GatedProcedureTests")
struct GatedProcedureTests {
    @Test func test__when_gate_is_closed_procedure_is_cancelled() async throws {
        let procedure = TestProcedure()
        let gated = GatedProcedure(procedure) { false }
        let outcome = try await run(gated)
        #expect(outcome.isCancelled && outcome.error == nil, "\(outcome)")
        #expect(!procedure.didExecute)
    }

    @Test func test__when_gate_is_open_procedure_is_performed() async throws {
        let procedure = TestProcedure()
        let gated = GatedProcedure(procedure) { true }
        #expect(try await run(gated).isSucceeded)
        #expect(procedure.didExecute)
    }

    /// A gate that throws closes it too (ProcedureKit's `IgnoredCondition` of the block).
    @Test func gate_that_throws_is_closed() async throws {
        let procedure = TestProcedure()
        let gated = GatedProcedure(procedure) { throw TestError() }
        let outcome = try await run(gated)
        #expect(outcome.isCancelled && outcome.error == nil)
        #expect(!procedure.didExecute)
    }
}

/// ProcedureKit's `Tests/ProcedureKitTests/IgnoreErrorsProcedureTests.swift`.
@Suite("IgnoreErrorsProcedureTests")
struct IgnoreErrorsProcedureTests {
    @Test func test__procedure_which_errors_is_ignored() async throws {
        let failing = ResultProcedure<String> { throw TestError() }
        let procedure = IgnoreErrorsProcedure(failing)
        #expect(try await run(procedure).isSucceeded)
        #expect(failing.outcome?.isFailed == true, "the wrapped procedure did fail")
    }

    @Test func test__procedure_which_does_not_error() async throws {
        let procedure = IgnoreErrorsProcedure(ResultProcedure { "Hello" })
        #expect(try await run(procedure).isSucceeded)
    }

    @Test func test__procedure_output() async throws {
        let procedure = IgnoreErrorsProcedure(ResultProcedure { "Hello" })
        #expect(try await run(procedure).isSucceeded)
        #expect(procedure.output.success == "Hello")
    }
}

/// ProcedureKit's `Tests/ProcedureKitTests/BlockProcedureTests.swift`. ProcedureKit's block
/// may take the procedure (`BlockProcedure { this in … this.finish() }`); Cohort's
/// BlockProcedure is synchronous and AsyncBlockProcedure finishes when its closure returns,
/// so the `this` forms become AsyncBlockProcedure. UIBlockProcedure (the main queue) is not
/// applicable.
@Suite("BlockProcedureTests")
struct BlockProcedureTests {
    @Test func test__void_block_procedure() async throws {
        let executed = Locked(false)
        let block = BlockProcedure { executed.value = true }
        #expect(try await run(block).isSucceeded)
        #expect(executed.value)
    }

    @Test func test__self_block_procedure() async throws {
        let executed = Locked(false)
        let block = AsyncBlockProcedure { executed.value = true }
        #expect(try await run(block).isSucceeded)
        #expect(executed.value)
    }

    @Test func test__block_does_not_execute_if_cancelled() async throws {
        let executed = Locked(false)
        let block = BlockProcedure { executed.value = true }
        block.cancel()
        #expect(try await run(block).isCancelled)
        #expect(!executed.value)
    }

    @Test func test__block_which_throws_finishes_with_error() async throws {
        let block = BlockProcedure { throw TestError() }
        let outcome = try await run(block)
        #expect(outcome.isFailed && outcome.error is TestError)
    }

    @Test func test__block_did_execute_observer() async throws {
        let observed = Locked(false)
        let block = BlockProcedure {}
        block.addObserver(BlockObserver(didExecute: { _ in observed.value = true }))
        #expect(try await run(block).isSucceeded)
        #expect(observed.value)
    }

    @Test func test__throwing_output() async throws {
        let executed = Locked(false)
        let result = ResultProcedure<String> {
            executed.value = true
            return "Hello World"
        }
        #expect(try await run(result).isSucceeded)
        #expect(executed.value)
        #expect(result.output.success == "Hello World")
    }
}

/// ProcedureKit's `AsyncBlockProcedureTests`: a block that finishes later, from another thread.
@Suite("AsyncBlockProcedureTests")
struct AsyncBlockProcedureTests {
    @Test func test__block_executes() async throws {
        let executed = Locked(false)
        let block = AsyncBlockProcedure {
            try await Task.sleep(for: .milliseconds(5))
            executed.value = true
        }
        #expect(try await run(block).isSucceeded)
        #expect(executed.value)
    }

    @Test func test__block_does_not_execute_if_cancelled() async throws {
        let executed = Locked(false)
        let block = AsyncBlockProcedure { executed.value = true }
        block.cancel()
        #expect(try await run(block).isCancelled)
        #expect(!executed.value)
    }

    @Test func test__block_which_finishes_with_error() async throws {
        let block = AsyncBlockProcedure {
            try await Task.sleep(for: .milliseconds(5))
            throw TestError()
        }
        let outcome = try await run(block)
        #expect(outcome.isFailed && outcome.error is TestError)
    }

    @Test func test__block_did_execute_observer() async throws {
        let observed = Locked(false)
        let block = AsyncBlockProcedure { try await Task.sleep(for: .milliseconds(5)) }
        block.addObserver(BlockObserver(didExecute: { _ in observed.value = true }))
        #expect(try await run(block).isSucceeded)
        #expect(observed.value)
    }
}
