import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/SilentConditionTests.swift`.
@Suite("SilentConditionTests")
struct SilentConditionTests {
    @Test func test__silent_condition_composes_name_correctly() {
        #expect(SilentCondition(TestCondition.failing()).name == "Silent<FalseCondition>")
    }

    /// Cohort: the silent wrapper hides the produced dependencies (they are never added or
    /// waited for) without removing them from the wrapped condition.
    @Test func test__silent_condition_removes_produced_dependencies_from_composed_condition() async throws {
        let dependency = TestProcedure()
        let condition = TestCondition.satisfied()
        condition.produceDependency(dependency)
        let silent = SilentCondition(condition)
        #expect(silent.producedDependencies.isEmpty)
        expectSucceeded(try await outcome(with: silent))
        #expect(!dependency.didExecute)
    }
}
