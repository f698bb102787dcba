import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/NoFailedDependenciesConditionTests.swift`.
@Suite("NoFailedDependenciesConditionTests")
struct NoFailedDependenciesConditionTests {
    /// ProcedureKit's `createCancellingProcedure`: a procedure cancelled before it runs.
    func createCancellingProcedure() -> TestProcedure {
        let procedure = TestProcedure(name: "Cancelling")
        procedure.cancel()
        return procedure
    }

    func outcome(
        with dependencies: [Procedure], condition: NoFailedDependenciesCondition = NoFailedDependenciesCondition()
    )
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
        let outcome = try await outcome(
            with: [createCancellingProcedure()],
            condition: NoFailedDependenciesCondition(ignoringCancellations: true))
        #expect(outcome.isCancelled)
        #expect(outcome.error == nil)
    }

    /// Cohort: a failure still fails the procedure (ProcedureKit: cancelled with the failure).
    @Test func test__procedure_with_failures_and_cancellations_with_ignore_cancellations() async throws {
        let outcome = try await outcome(
            with: [createCancellingProcedure(), TestProcedure(error: TestError()), TestProcedure()],
            condition: NoFailedDependenciesCondition(ignoringCancellations: true))
        #expect(outcome.isFailed)
        #expect((outcome.error as? ProcedureError)?.code == .dependencyFailed)
    }
}
