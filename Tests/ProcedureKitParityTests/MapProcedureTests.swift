import Testing

@testable import Procedures

/// ProcedureKit's `NumbersProcedure`.
func numbersProcedure(error: (any Error)? = nil) -> ResultProcedure<[Int]> {
    ResultProcedure {
        if let error { throw error }
        return [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    }
}

/// ProcedureKit's `Tests/ProcedureKitTests/MapProcedureTests.swift`. ProcedureKit's
/// `FlatMapProcedure` (and `flatMap`) is Cohort's `CompactMapProcedure` (and `compactMap`).
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
        let functional = numbers.map { $0 * 2 }
        #expect(try await run(numbers, functional).isSucceeded)
        #expect(functional.output.success == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18])
    }

    /// Cohort: the consumer is cancelled with a requirementNotSatisfied error naming the producer.
    @Test func test__map_dependency_which_finishes_with_errors() async throws {
        let numbers = numbersProcedure(error: TestError())
        let functional = numbers.map { $0 * 2 }
        let outcome = try await run(numbers, functional)
        #expect(numbers.outcome?.error is TestError)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}

/// ProcedureKit's `FlatMapProcedureTests`, with Cohort's `CompactMapProcedure`.
@Suite("FlatMapProcedureTests")
struct FlatMapProcedureTests {
    @Test func test__requirement_is_flat_mapped_to_result() async throws {
        let functional = CompactMapProcedure<Int, Int>(input: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) { value in
            value % 2 == 0 ? value * 2 : nil
        }
        #expect(try await run(functional).isSucceeded)
        #expect(functional.output.success == [0, 4, 8, 12, 16])
    }

    @Test func test__flat_map_dependency_which_finishes_without_errors() async throws {
        let numbers = numbersProcedure()
        let functional = numbers.compactMap { $0 % 2 == 0 ? $0 * 2 : nil }
        #expect(try await run(numbers, functional).isSucceeded)
        #expect(functional.output.success == [0, 4, 8, 12, 16])
    }

    @Test func test__finishes_with_error_if_block_throws() async throws {
        let functional = MapProcedure<Int, [Int]>(input: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) { _ in throw TestError() }
        #expect(try await run(functional).error is TestError)
    }

    @Test func test__flat_map_dependency_which_finishes_with_errors() async throws {
        let numbers = numbersProcedure(error: TestError())
        let functional = numbers.map { $0 * 2 }
        let outcome = try await run(numbers, functional)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}

/// ProcedureKit's `Tests/ProcedureKitTests/FilterProcedureTests.swift`.
@Suite("FilterProcedureTests")
struct FilterProcedureTests {
    @Test func test__requirement_is_filtered_to_result() async throws {
        let functional = FilterProcedure(input: [0, 1, 2, 3, 4, 5, 6, 7]) { $0 % 2 == 0 }
        #expect(try await run(functional).isSucceeded)
        #expect(functional.output.success == [0, 2, 4, 6])
    }

    @Test func test__finishes_with_error_if_block_throws() async throws {
        let functional = FilterProcedure(input: [0, 1, 2, 3, 4, 5, 6, 7]) { _ in throw TestError() }
        let outcome = try await run(functional)
        #expect(outcome.isFailed && outcome.error is TestError)
    }

    @Test func test__filter_dependency_which_finishes_without_errors() async throws {
        let numbers = numbersProcedure()
        let functional = numbers.filter { $0 % 2 == 0 }
        #expect(try await run(numbers, functional).isSucceeded)
        #expect(functional.output.success == [0, 2, 4, 6, 8])
    }

    /// Cohort: the consumer is cancelled with a requirementNotSatisfied error naming the producer.
    @Test func test__filter_dependency_which_finishes_with_errors() async throws {
        let numbers = numbersProcedure(error: TestError())
        let functional = numbers.filter { $0 % 2 == 0 }
        let outcome = try await run(numbers, functional)
        #expect(numbers.outcome?.error is TestError)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}
