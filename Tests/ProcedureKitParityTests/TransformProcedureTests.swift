import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/TransformProcedureTests.swift`.
@Suite("TransformProcedureTests")
struct TransformProcedureTests {
    @Test func test__requirement_is_transformed_to_result() async throws {
        let timesTwo = TransformProcedure<Int, Int> { $0 * 2 }
        timesTwo.input = .ready(2)
        #expect(try await run(timesTwo).isSucceeded)
        #expect(timesTwo.output.success == 4)
    }

    @Test func test__requirement_is_nil_finishes_with_error() async throws {
        let timesTwo = TransformProcedure<Int, Int> { $0 * 2 }
        let outcome = try await run(timesTwo)
        #expect(outcome.isFailed)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}

/// ProcedureKit's `AsyncTransformProcedureTests` (Cohort's closure is `async`, not a completion).
@Suite("AsyncTransformProcedureTests")
struct AsyncTransformProcedureTests {
    @Test func test__requirement_is_transformed_to_result() async throws {
        let timesTwo = AsyncTransformProcedure<Int, Int> { input in
            await Task.yield()
            return input * 2
        }
        timesTwo.input = .ready(2)
        #expect(try await run(timesTwo).isSucceeded)
        #expect(timesTwo.output.success == 4)
    }

    @Test func test__requirement_is_nil_finishes_with_error() async throws {
        let timesTwo = AsyncTransformProcedure<Int, Int> { $0 * 2 }
        let outcome = try await run(timesTwo)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}
