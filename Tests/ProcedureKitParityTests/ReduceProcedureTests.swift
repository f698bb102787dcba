import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/ReduceProcedureTests.swift`. Cohort has no
/// `.reduce` shorthand on an output procedure: those tests inject into a ReduceProcedure.
@Suite("ReduceProcedureTests")
struct ReduceProcedureTests {
    @Test func test__requirement_is_reduced_to_result() async throws {
        let reduced = ReduceProcedure<Int, Int>(
            input: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], initial: 0, nextPartialResult: +)
        #expect(try await run(reduced).isSucceeded)
        #expect(reduced.output.success == 45)
    }

    @Test func test__finishes_with_error_if_block_throws() async throws {
        let reduced = ReduceProcedure<Int, Int>(input: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], initial: 0) { _, _ in
            throw TestError()
        }
        let outcome = try await run(reduced)
        #expect(outcome.isFailed)
        #expect(outcome.error is TestError)
    }

    @Test func test__reduce_dependency_which_finishes_without_errors() async throws {
        let numbers = numbersProcedure()
        let reduced = ReduceProcedure<Int, Int>(initial: 0, nextPartialResult: +).injectResult(from: numbers)
        #expect(try await run(numbers, reduced).isSucceeded)
        #expect(reduced.output.success == 45)
    }

    /// Cohort: the consumer is cancelled with a requirementNotSatisfied error naming the producer.
    @Test func test__reduce_dependency_which_finishes_with_error() async throws {
        let numbers = numbersProcedure(error: TestError())
        let reduced = ReduceProcedure<Int, Int>(initial: 0, nextPartialResult: +).injectResult(from: numbers)
        let outcome = try await run(numbers, reduced)
        #expect(numbers.outcome?.error is TestError)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}
