import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/NegatedConditionTests.swift`.
@Suite("NegatedConditionTests")
struct NegatedConditionTests {
    /// Cohort: fails with a `conditionFailed` ProcedureError (ProcedureKit: cancelled with its conditionFailed error).
    @Test func test__procedure_with_negated_successful_condition_fails() async throws {
        let (outcome, procedure) = try await outcome(with: NegatedCondition(TestCondition.satisfied()))
        #expect(outcome.isFailed)
        #expect((outcome.error as? ProcedureError)?.code == .conditionFailed)
        #expect(!procedure.didExecute)
    }

    @Test func test__procedure_with_negated_failed_condition_succeeds() async throws {
        expectSucceeded(try await outcome(with: NegatedCondition(TestCondition.failing())))
    }

    @Test func test__procedure_with_negated_ignored_condition_succeeds() async throws {
        expectSucceeded(try await outcome(with: NegatedCondition(TestCondition.ignored())))
    }

    @Test func test__negated_condition_name() {
        #expect(NegatedCondition(TestCondition.failing()).name == "Not<FalseCondition>")
    }
}
