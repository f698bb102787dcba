import Dispatch
import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/CancellationTests.swift`.
@Suite("CancellationTests")
struct CancellationTests {
    @Test func test__procedure_cancel_with_nil_error() {
        let procedure = TestProcedure()
        procedure.cancel(with: nil)
        #expect(!procedure.didExecute)
        #expect(procedure.isCancelled)
        #expect(procedure.cancellationReason == nil)
    }

    /// Cohort: a cancel's error is its reason; the procedure is not "failed" (it will end `.cancelled(reason)`).
    @Test func test__procedure_cancel_with_error() {
        let procedure = TestProcedure()
        procedure.cancel(with: TestError())
        #expect(!procedure.didExecute)
        #expect(procedure.isCancelled)
        #expect(procedure.cancellationReason is TestError)
    }

    @Test func test__procedure_did_cancel_called_after_cancelled() async throws {
        let procedure = TestProcedure()
        let seen = Locked<(Bool, Bool)?>(nil)
        procedure.addObserver(
            BlockObserver(didCancel: { procedure, _ in
                seen.value = (procedure.isCancelled, (procedure as! TestProcedure).procedureDidCancelCalled)
            }))
        procedure.cancel()
        try await run(procedure)
        #expect(seen.value?.0 == true)
        #expect(seen.value?.1 == true)
    }

    @Test func test__procedured_cancelled_before_running_is_not_set_to_finished_until_started() async throws {
        let procedure = TestProcedure()
        let didCancel = Signal()
        procedure.addObserver(BlockObserver(didCancel: { _, _ in didCancel.fire() }))
        procedure.cancel()
        #expect(procedure.isCancelled)
        try await didCancel.wait("did-cancel")
        #expect(procedure.procedureDidCancelCalled)
        #expect(!procedure.didExecute)
        #expect(!procedure.procedureWillFinishCalled)
        #expect(!procedure.procedureDidFinishCalled)
        #expect(!procedure.isFinished)
        try await run(procedure)
        #expect(procedure.procedureDidFinishCalled)
        #expect(procedure.isFinished)
        #expect(!procedure.didExecute)
    }

    final class TestHandlesFinishOperation: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only a `let` Signal (Sendable).
        let executing = Signal()
        override init() {
            super.init()
            isAutomaticFinishingDisabled = true
        }
        override func execute() { executing.fire() }
        func triggerFinish() { finish() }
    }

    @Test func test__procedure_with_disables_automatic_finishing_does_not_finish_automatically_when_cancelled()
        async throws
    {
        let special = TestHandlesFinishOperation()
        let queue = makeQueue()
        queue.add(special)
        try await special.executing.wait("execute")
        special.cancel()
        #expect(special.isCancelled)
        #expect(!special.isFinished)
        special.triggerFinish()
        #expect(try await finished(special).isCancelled)
    }

    final class TestCancelFinishFromExecuteProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only `Locked` state.
        let didCancel = Locked<(Bool, Bool)>((false, false))
        override func execute() {
            cancel()
            finish(with: TestError("expected"))
        }
        override func procedureDidCancel(with reason: (any Error)?) { didCancel.value = (true, isFinished) }
    }

    /// Cohort: with automatic finishing, cancel() of an executing procedure finishes it then
    /// and there, so the finish(with:) after it is ignored: cancelled, without the error
    /// (ProcedureKit: cancelled with the finish's error).
    @Test func test__procedure_cancelled_then_finished_from_within_execute() async throws {
        let special = TestCancelFinishFromExecuteProcedure()
        let outcome = try await run(special)
        #expect(special.didCancel.value.0)
        #expect(!special.didCancel.value.1, "isFinished should be false when did-cancel runs")
        #expect(outcome.isCancelled)
        #expect(outcome.error == nil)
    }

    final class TestCancelFinishAsyncFromExecuteProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only `Locked` state.
        let didCancel = Locked(false)
        override func execute() {
            let semaphore = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                self.cancel()
                self.finish()
                semaphore.signal()
            }
            semaphore.wait()
        }
        override func procedureDidCancel(with reason: (any Error)?) { didCancel.value = true }
    }

    @Test func test__procedure_cancelled_then_finished_async_during_execute() async throws {
        let special = TestCancelFinishAsyncFromExecuteProcedure()
        #expect(try await run(special).isCancelled)
        #expect(special.didCancel.value)
    }

    final class TestFinishCancelFromExecuteProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only `Locked` state.
        let didCancel = Locked(false)
        let async: Bool
        init(async: Bool) {
            self.async = async
            super.init()
        }
        override func execute() {
            guard async else {
                finish()
                cancel()
                return
            }
            let semaphore = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                self.finish()
                self.cancel()
                semaphore.signal()
            }
            semaphore.wait()
        }
        override func procedureDidCancel(with reason: (any Error)?) { didCancel.value = true }
    }

    @Test func test__procedure_finished_then_cancelled_from_within_execute() async throws {
        let special = TestFinishCancelFromExecuteProcedure(async: false)
        #expect(try await run(special).isSucceeded)
        #expect(!special.didCancel.value)
        #expect(!special.isCancelled)
    }

    @Test func test__procedure_finished_then_cancelled_async_during_execute() async throws {
        let special = TestFinishCancelFromExecuteProcedure(async: true)
        #expect(try await run(special).isSucceeded)
        #expect(!special.didCancel.value)
        #expect(!special.isCancelled)
    }

    @Test func test__cancel_from_didcancel_observer_is_ignored() async throws {
        let procedure = TestProcedure()
        procedure.addObserver(
            BlockObserver(didCancel: { procedure, _ in procedure.cancel(with: TestError("should not happen")) }))
        procedure.cancel()
        let outcome = try await run(procedure)
        #expect(outcome.isCancelled)
        #expect(outcome.error == nil)
    }

    @Test func test__cancel_from_willfinish_observer_is_ignored() async throws {
        let procedure = TestProcedure()
        procedure.addObserver(
            BlockObserver(willFinish: { procedure, _ in procedure.cancel(with: TestError("should not happen")) }))
        #expect(try await run(procedure).isSucceeded)
        #expect(!procedure.isCancelled)
    }
}
