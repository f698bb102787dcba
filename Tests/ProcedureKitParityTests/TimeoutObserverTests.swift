import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/TimeoutObserverTests.swift`. ProcedureKit's
/// `until:` takes a `Date`; Cohort's an instant of the continuous clock.
@Suite("TimeoutObserverTests")
struct TimeoutObserverTests {
    @Test func test__timeout_observer() async throws {
        let procedure = TestProcedure(delay: .milliseconds(500))
        procedure.addObserver(TimeoutObserver(by: .milliseconds(100)))
        let outcome = try await run(procedure)
        #expect(outcome.isCancelled)
        #expect(outcome.error as? ProcedureError == ProcedureError.timedOut(after: .milliseconds(100)))
    }

    @Test func test__timeout_observer_with_date() async throws {
        let procedure = TestProcedure(delay: .milliseconds(500))
        procedure.addObserver(TimeoutObserver(until: .now + .milliseconds(100)))
        let outcome = try await run(procedure)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .timedOut, "\(outcome)")
    }

    @Test func test__timeout_observer_where_procedure_is_already_cancelled() async throws {
        let procedure = TestProcedure(delay: .milliseconds(500))
        procedure.addObserver(TimeoutObserver(by: .milliseconds(100)))
        procedure.cancel()
        let outcome = try await run(procedure)
        #expect(outcome.isCancelled)
        #expect(outcome.error == nil)
    }

    @Test func test__timeout_observer_where_procedure_is_already_finished() async throws {
        let procedure = TestProcedure()
        procedure.addObserver(TimeoutObserver(by: .milliseconds(500)))
        #expect(try await run(procedure).isSucceeded)
    }

    /// Cohort: a zero or negative timeout cancels the procedure as it starts (ProcedureKit ignores it).
    @Test func test__timeout_observer_negative_interval() async throws {
        let procedure = TestProcedure()
        procedure.addObserver(TimeoutObserver(by: .milliseconds(-500)))
        let outcome = try await run(procedure)
        #expect((outcome.error as? ProcedureError)?.code == .timedOut)
        #expect(!procedure.didExecute)
    }

    @Test func test__multiple_timeout_observers_on_a_single_procedure() async throws {
        let procedure = TestProcedure(delay: .milliseconds(500))
        procedure.addObserver(TimeoutObserver(by: .milliseconds(100)))
        procedure.addObserver(TimeoutObserver(by: .milliseconds(100)))
        procedure.addObserver(TimeoutObserver(by: .milliseconds(200)))
        procedure.addObserver(TimeoutObserver(by: .seconds(3)))
        let outcome = try await run(procedure)
        #expect(outcome.error as? ProcedureError == ProcedureError.timedOut(after: .milliseconds(100)))
    }

    @Test func test__add_single_timeout_observer_to_multiple_procedures() async throws {
        let procedure1 = TestProcedure(delay: .milliseconds(500))
        let procedure2 = TestProcedure(delay: .milliseconds(500))
        let procedure3 = TestProcedure()
        let timeoutObserver = TimeoutObserver(by: .milliseconds(100))
        for procedure in [procedure1, procedure2, procedure3] { procedure.addObserver(timeoutObserver) }
        try await run(procedure1, procedure2, procedure3)
        #expect(procedure1.error as? ProcedureError == ProcedureError.timedOut(after: .milliseconds(100)))
        #expect(procedure2.error as? ProcedureError == ProcedureError.timedOut(after: .milliseconds(100)))
        #expect(procedure3.outcome?.isSucceeded == true)
    }
}
