import Testing

@testable import Procedures

/// ProcedureKit's `NumbersProcedure`.
func numbersProcedure(error: (any Error)? = nil) -> ResultProcedure<[Int]> {
    ResultProcedure {
        if let error { throw error }
        return [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    }
}

/// ProcedureKit's `Tests/ProcedureKitTests/MapProcedureTests.swift`. Cohort has no `.map`
/// shorthand on an output procedure: those tests inject into a MapProcedure, which is what
/// the shorthand makes. `FlatMapProcedure` is API Cohort lacks: its two own tests are left out.
@Suite("MapProcedureTests")
struct MapProcedureTests {
    @Test func test__requirement_is_mapped_to_result() async throws {
        let functional = MapProcedure<Int, [Int]>(input: [0, 1, 2, 3, 4, 5, 6, 7]) { $0 * 2 }
        #expect(try await run(functional).isSucceeded)
        #expect(functional.output.success == [0, 2, 4, 6, 8, 10, 12, 14])
    }

    @Test func test__finishes_with_error_if_block_throws() async throws {
        let functional = MapProcedure<Int, [Int]>(input: [0, 1, 2, 3, 4, 5, 6, 7]) { _ in throw TestError() }
        let outcome = try await run(functional)
        #expect(outcome.isFailed)
        #expect(outcome.error is TestError)
    }

    @Test func test__map_dependency_which_finishes_without_errors() async throws {
        let numbers = numbersProcedure()
        let functional = MapProcedure<Int, [Int]> { $0 * 2 }.injectResult(from: numbers)
        #expect(try await run(numbers, functional).isSucceeded)
        #expect(functional.output.success == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18])
    }

    /// Cohort: the consumer is cancelled with a requirementNotSatisfied error naming the producer.
    @Test func test__map_dependency_which_finishes_with_errors() async throws {
        let numbers = numbersProcedure(error: TestError())
        let functional = MapProcedure<Int, [Int]> { $0 * 2 }.injectResult(from: numbers)
        let outcome = try await run(numbers, functional)
        #expect(numbers.outcome?.error is TestError)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}

/// ProcedureKit's `FlatMapProcedureTests`: the two that use MapProcedure.
@Suite("FlatMapProcedureTests")
struct FlatMapProcedureTests {
    @Test func test__finishes_with_error_if_block_throws() async throws {
        let functional = MapProcedure<Int, [Int]>(input: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) { _ in throw TestError() }
        #expect(try await run(functional).error is TestError)
    }

    @Test func test__flat_map_dependency_which_finishes_with_errors() async throws {
        let numbers = numbersProcedure(error: TestError())
        let functional = MapProcedure<Int, [Int]> { $0 * 2 }.injectResult(from: numbers)
        let outcome = try await run(numbers, functional)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}
