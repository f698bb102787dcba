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

/// ProcedureKit's `Tests/ProcedureKitTests/NoFailedDependenciesConditionTests.swift`.
@Suite("NoFailedDependenciesConditionTests")
struct NoFailedDependenciesConditionTests {
    /// ProcedureKit's `createCancellingProcedure`: a procedure cancelled before it runs.
    func createCancellingProcedure() -> TestProcedure {
        let procedure = TestProcedure(name: "Cancelling")
        procedure.cancel()
        return procedure
    }

    func outcome(with dependencies: [Procedure], condition: NoFailedDependenciesCondition = NoFailedDependenciesCondition())
        async throws -> ProcedureOutcome
    {
        let procedure = TestProcedure()
        procedure.addDependencies(dependencies)
        procedure.addCondition(condition)
        let queue = makeQueue()
        queue.add(dependencies)
        queue.add(procedure)
        return try await finished(procedure)
    }

    @Test func test__procedure_with_no_dependencies_succeeds() async throws {
        #expect(try await outcome(with: []).isSucceeded)
    }

    @Test func test__procedure_with_successful_dependency_succeeds() async throws {
        #expect(try await outcome(with: [TestProcedure()]).isSucceeded)
    }

    @Test func test__procedure_with_cancelled_dependency_fails() async throws {
        let outcome = try await outcome(with: [createCancellingProcedure()])
        #expect(outcome.isFailed)
        #expect((outcome.error as? ProcedureError)?.code == .dependencyCancelled)
    }

    @Test func test__procedure_with_mixture_fails() async throws {
        let outcome = try await outcome(with: [TestProcedure(), createCancellingProcedure()])
        #expect((outcome.error as? ProcedureError)?.code == .dependencyCancelled)
    }

    @Test func test__procedure_with_errored_dependency_fails() async throws {
        let outcome = try await outcome(with: [TestProcedure(error: TestError())])
        #expect(outcome.isFailed)
        #expect((outcome.error as? ProcedureError)?.code == .dependencyFailed)
    }

    @Test func test__procedure_with_group_dependency_with_errored_child_fails() async throws {
        let outcome = try await outcome(with: [GroupProcedure(TestProcedure(error: TestError()))])
        #expect((outcome.error as? ProcedureError)?.code == .dependencyFailed)
    }

    @Test func test__procedure_with_ignored_cancellations() async throws {
        let outcome = try await outcome(with: [createCancellingProcedure()],
                                        condition: NoFailedDependenciesCondition(ignoringCancellations: true))
        #expect(outcome.isCancelled)
        #expect(outcome.error == nil)
    }

    /// Cohort: a failure still fails the procedure (ProcedureKit: cancelled with the failure).
    @Test func test__procedure_with_failures_and_cancellations_with_ignore_cancellations() async throws {
        let outcome = try await outcome(with: [createCancellingProcedure(), TestProcedure(error: TestError()), TestProcedure()],
                                        condition: NoFailedDependenciesCondition(ignoringCancellations: true))
        #expect(outcome.isFailed)
        #expect((outcome.error as? ProcedureError)?.code == .dependencyFailed)
    }
}
