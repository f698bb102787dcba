import Dispatch
import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/FinishingTests.swift`.
@Suite("FinishingTests")
struct FinishingTests {
    @Test func test__procedure_will_finish_is_called() async throws {
        let procedure = TestProcedure()
        try await run(procedure)
        #expect(procedure.procedureWillFinishCalled)
    }

    @Test func test__procedure_did_finish_is_called() async throws {
        let procedure = TestProcedure()
        try await run(procedure)
        #expect(procedure.procedureDidFinishCalled)
    }

    final class TestOperation_CancelsAndManuallyFinishesOnWillExecute: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only a `Locked` counter.
        let executions = Locked(0)
        override init() {
            super.init()
            isAutomaticFinishingDisabled = true
            addObserver(
                BlockObserver(willExecute: { procedure in
                    procedure.cancel()
                    procedure.finish()
                }))
        }
        override func execute() {
            executions.mutate { $0 += 1 }
            finish()
        }
    }

    @Test
    func
        test__procedure_with_disabled_automatic_finishing_manual_cancel_and_finish_on_will_execute_does_not_result_in_invalid_state_transition_to_executing()
        async throws
    {
        let special = TestOperation_CancelsAndManuallyFinishesOnWillExecute()
        #expect(try await run(special).isCancelled)
        #expect(special.executions.value == 0)
    }

    /// Cohort: `finish()` before the procedure executes is ignored (ProcedureKit keeps it for
    /// a cancelled procedure and finishes with its error once started).
    @Test func test__cancelled_procedure_finish_called_before_execute_eventually_finishes() async throws {
        let procedure = TestProcedure()
        #expect(!procedure.isFinished)
        procedure.cancel()
        #expect(procedure.isCancelled)
        procedure.finish(with: TestError())
        #expect(!procedure.isFinished)
        let outcome = try await run(procedure)
        #expect(outcome.isCancelled)
        #expect(outcome.error == nil)
    }

    @Test func test__cancelled_procedure_finish_called_before_execute_only_first_finish_succeeds() async throws {
        let procedure = TestProcedure()
        procedure.cancel()
        procedure.finish(with: TestError())
        #expect(!procedure.isFinished)
        procedure.finish()
        #expect(!procedure.isFinished)
        let outcome = try await run(procedure)
        #expect(outcome.isCancelled)
        #expect(!procedure.didExecute)
    }

    @Test func test__cancelled_procedure_finish_before_execute_from_didcancel_observer() async throws {
        let procedure = TestProcedure()
        procedure.addObserver(
            BlockObserver(didCancel: { procedure, _ in procedure.finish(with: TestError("expected")) }))
        let didCancel = Signal()
        procedure.addObserver(BlockObserver(didCancel: { _, _ in didCancel.fire() }))
        procedure.cancel()
        try await didCancel.wait("did-cancel")
        #expect(procedure.isCancelled)
        #expect(!procedure.isFinished)
        #expect(try await run(procedure).isCancelled)
    }

    @Test func test__procedure_finish_from_willexecute_observer() async throws {
        let procedure = TestProcedure()
        procedure.addObserver(BlockObserver(willExecute: { $0.finish(with: TestError()) }))
        let outcome = try await run(procedure)
        #expect(procedure.isFinished)
        #expect(!procedure.didExecute)
        #expect(!procedure.isCancelled)
        #expect(outcome.isFailed)
    }

    @Test func test__procedure_finish_after_cancel_from_willexecute_observer() async throws {
        let procedure = TestProcedure()
        procedure.addObserver(
            BlockObserver(willExecute: { procedure in
                procedure.cancel()
                procedure.finish(with: TestError())
            }))
        let outcome = try await run(procedure)
        #expect(outcome.isCancelled)
        #expect(!procedure.didExecute)
    }

    @Test func test__finish_from_willfinish_observer_is_ignored() async throws {
        let procedure = TestProcedure()
        procedure.addObserver(
            BlockObserver(willFinish: { procedure, _ in procedure.finish(with: TestError("should not happen")) }))
        #expect(try await run(procedure).isSucceeded)
    }

    /// ProcedureKit finishes synchronously on the main queue; Cohort has no main queue in
    /// its engine: it finishes synchronously on another thread while execute() waits.
    @Test func test__finish_on_other_thread_synchronously_from_execute() async throws {
        final class TestFinishSyncFromExecuteProcedure: Procedure, @unchecked Sendable {
            // @unchecked Sendable: no stored properties of its own.
            override func execute() {
                DispatchQueue(label: "other").sync { finish() }
            }
        }
        let procedure = TestFinishSyncFromExecuteProcedure()
        #expect(try await run(procedure, within: .seconds(3)).isSucceeded)
    }
}
