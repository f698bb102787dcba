import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/BlockConditionTests.swift`.
@Suite("BlockConditionTests")
struct BlockConditionTests {
    @Test func test__procedure_with_successfull_block_finishes() async throws {
        expectSucceeded(try await outcome(with: BlockCondition { true }))
    }

    @Test func test__procedure_with_unsuccessful_block_cancels_without_errors() async throws {
        expectCancelledWithoutError(try await outcome(with: BlockCondition { false }))
    }

    /// Cohort: fails with the thrown error itself.
    @Test func test__procedure_with_throwing_block_cancels_with_error() async throws {
        let (outcome, procedure) = try await outcome(with: BlockCondition { throw TestError("thrown") })
        #expect(outcome.isFailed)
        #expect(outcome.error as? TestError == TestError("thrown"))
        #expect(!procedure.didExecute)
    }
}
