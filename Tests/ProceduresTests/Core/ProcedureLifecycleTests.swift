import CohortTestSupport
import Dispatch
import Logging
import Testing

@testable import Procedures

@Suite("Procedure life cycle")
struct ProcedureLifecycleTests {
    /// A subclass that finishes later, from another thread, as the docs allow.
    final class LaterProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
        override func execute() {
            DispatchQueue.global().async { self.finish() }
        }
    }

    @Test func subclassFinishingLaterFromAnotherThreadSucceeds() async throws {
        let queue = makeQueue()
        let procedure = LaterProcedure()
        queue.add(procedure)
        let outcome = try await finished(procedure)
        #expect(outcome.isSucceeded)
        #expect(procedure.isFinished)
        #expect(procedure.error == nil)
    }

    @Test func statesRunFromPendingThroughExecutingToFinished() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let procedure = TestProcedure("p", finishesItself: false)
        procedure.addCondition(
            BlockCondition {
                events.record("condition:\(procedure.state)")
                return true
            })
        procedure.addObserver(
            BlockObserver(
                willExecute: { events.record("willExecute:\($0.state)") },
                willFinish: { p, _ in events.record("willFinish:\(p.state)") },
                didFinish: { p, _ in events.record("didFinish:\(p.state)") }
            ))
        #expect(procedure.state == .pending)
        #expect(procedure.isPending)
        queue.add(procedure)
        try await waitUntil("p executes") { procedure.isExecuting }
        #expect(procedure.state == .executing)
        procedure.complete()
        try await finished(procedure)
        #expect(procedure.state == .finished)
        #expect(
            events.all == [
                "condition:evaluatingConditions", "willExecute:executing", "willFinish:finishing", "didFinish:finished",
            ])
    }

    @Test func failingProcedureEndsFailedWithItsError() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure(error: TestError("boom"))
        queue.add(procedure)
        let outcome = try await finished(procedure)
        #expect(outcome.isFailed)
        #expect(outcome.error as? TestError == TestError("boom"))
        #expect(procedure.error as? TestError == TestError("boom"))
    }

    @Test func cancelIsIdempotentAndKeepsTheFirstReason() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure(finishesItself: false)
        let cancels = Locked(0)
        procedure.addObserver(BlockObserver(didCancel: { _, _ in cancels.mutate { $0 += 1 } }))
        procedure.isAutomaticFinishingDisabled = true
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.cancel(with: TestError("first"))
        procedure.cancel(with: TestError("second"))
        procedure.cancel()
        #expect(procedure.isCancelled)
        #expect(procedure.cancellationReason as? TestError == TestError("first"))
        procedure.complete()
        let outcome = try await finished(procedure)
        #expect(cancels.value == 1)
        guard case .cancelled(let reason) = outcome else {
            Issue.record("expected cancelled, got \(outcome)")
            return
        }
        #expect(reason as? TestError == TestError("first"))
    }

    /// Running work sees `isCancelled` and stops by itself.
    @Test func runningWorkSeesIsCancelled() async throws {
        let queue = makeQueue()
        let sawCancel = Locked(false)
        final class Polling: Procedure, @unchecked Sendable {
            // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
            let sawCancel: Locked<Bool>
            init(_ sawCancel: Locked<Bool>) {
                self.sawCancel = sawCancel
                super.init()
                isAutomaticFinishingDisabled = true
            }
            override func execute() {
                Task {
                    // Polls as long-running work would, checking between steps.
                    while !self.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
                    self.sawCancel.value = true
                    self.finish()
                }
            }
        }
        let procedure = Polling(sawCancel)
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.cancel()
        let outcome = try await finished(procedure)
        #expect(sawCancel.value)
        #expect(outcome.isCancelled)
    }

    @Test func cancelledWinsOverFailedAsTheOutcome() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure(finishesItself: false)
        procedure.isAutomaticFinishingDisabled = true
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.cancel()
        procedure.complete(with: TestError("late"))
        let outcome = try await finished(procedure)
        guard case .cancelled(let reason) = outcome else {
            Issue.record("expected cancelled, got \(outcome)")
            return
        }
        // The error travels as the reason when the cancel gave none.
        #expect(reason as? TestError == TestError("late"))
    }

    @Test func cancelledBeforeItRunsIsNotFinishedUntilTheQueueStartsIt() async throws {
        let queue = makeQueue(isSuspended: true)
        let procedure = TestProcedure()
        queue.add(procedure)
        procedure.cancel()
        // Becomes ready at once, but finishes only when the queue starts it.
        #expect(procedure.state == .ready)
        #expect(!procedure.isFinished)
        queue.isSuspended = false
        let outcome = try await finished(procedure)
        #expect(outcome.isCancelled)
        #expect(!procedure.didExecute)
    }

    @Test func cancelledBeforeBeingAddedNeverExecutes() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure()
        procedure.cancel(with: TestError("early"))
        queue.add(procedure)
        let outcome = try await finished(procedure)
        #expect(outcome.isCancelled)
        #expect(outcome.error as? TestError == TestError("early"))
        #expect(!procedure.didExecute)
    }

    @Test func cancellingAnExecutingProcedureFinishesItAtOnce() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure(finishesItself: false)
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.cancel()
        #expect(procedure.isFinished)
        #expect(procedure.outcome?.isCancelled == true)
    }

    @Test func disabledAutomaticFinishingDoesNotFinishOnCancel() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure(finishesItself: false)
        procedure.isAutomaticFinishingDisabled = true
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.cancel()
        #expect(procedure.isCancelled)
        #expect(procedure.state == .executing)
        #expect(procedure.outcome == nil)
        procedure.complete()
        #expect(try await finished(procedure).isCancelled)
    }

    @Test func finishBeforeExecutingIsIgnored() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure()
        procedure.finish(with: TestError("too early"))
        #expect(procedure.state == .pending)
        queue.add(procedure)
        #expect(try await finished(procedure).isSucceeded)
        #expect(procedure.didExecute)
    }

    @Test func secondFinishIsIgnored() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure(finishesItself: false)
        let didFinish = Locked(0)
        procedure.addObserver(BlockObserver(didFinish: { _, _ in didFinish.mutate { $0 += 1 } }))
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.finish()
        procedure.finish(with: TestError("second"))
        #expect(try await finished(procedure).isSucceeded)
        #expect(procedure.outcome?.isSucceeded == true)
        #expect(didFinish.value == 1)
    }

    @Test func cancelFromDidCancelObserverAndFinishFromWillFinishObserverAreIgnored() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure(finishesItself: false)
        procedure.isAutomaticFinishingDisabled = true
        let cancels = Locked(0)
        procedure.addObserver(
            BlockObserver(
                didCancel: { p, _ in
                    cancels.mutate { $0 += 1 }
                    p.cancel(with: TestError("again"))
                },
                willFinish: { p, _ in p.finish(with: TestError("from observer")) }
            ))
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.cancel(with: TestError("first"))
        procedure.complete()
        let outcome = try await finished(procedure)
        #expect(cancels.value == 1)
        #expect(outcome.isCancelled)
        #expect(outcome.error as? TestError == TestError("first"))
    }

    /// Many threads call finish and cancel at once: one outcome, one did-finish, and the
    /// outcome is the first finish's (cancelled if a cancel got in first).
    @Test(arguments: 0..<20)
    func concurrentFinishAndCancelCallsCountOnlyTheFirstFinish(round: Int) async throws {
        let queue = makeQueue()
        let procedure = TestProcedure(finishesItself: false)
        procedure.isAutomaticFinishingDisabled = round.isMultiple(of: 2)
        let didFinish = Locked(0)
        let willFinish = Locked(0)
        let handlers = Locked(0)
        procedure.addObserver(
            BlockObserver(
                willFinish: { _, _ in willFinish.mutate { $0 += 1 } },
                didFinish: { _, _ in didFinish.mutate { $0 += 1 } }
            ))
        procedure.whenFinished { _ in handlers.mutate { $0 += 1 } }
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        DispatchQueue.concurrentPerform(iterations: 64) { index in
            switch index % 3 {
            case 0: procedure.finish()
            case 1: procedure.finish(with: TestError("\(index)"))
            default: procedure.cancel(with: TestError("cancel \(index)"))
            }
        }
        let outcome = try await finished(procedure)
        try await allFinished(queue)
        #expect(willFinish.value == 1)
        #expect(didFinish.value == 1)
        #expect(handlers.value == 1)
        if procedure.isCancelled {
            #expect(outcome.isCancelled)
        } else {
            #expect(!outcome.isCancelled)
        }
    }

    @Test func logCarriesTheProcedureNameAsMetadata() {
        let procedure = TestProcedure("fetch-user")
        #expect(procedure.log[metadataKey: "procedure.name"] == "fetch-user")
        #expect(procedure.name == "fetch-user")
        #expect(procedure.description == "fetch-user")
    }

    @Test func defaultNameIsTheTypeName() {
        #expect(BlockProcedure {}.name == "BlockProcedure")
    }

    @Test func whenFinishedFiresExactlyOnceEvenWhenAttachedAfterFinishing() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure()
        let before = Locked(0)
        procedure.whenFinished { _ in before.mutate { $0 += 1 } }
        queue.add(procedure)
        try await finished(procedure)
        let after = Locked<[Bool]>([])
        procedure.whenFinished { outcome in after.mutate { $0.append(outcome.isSucceeded) } }
        // Attached after finishing: called at once, on the caller's thread.
        #expect(after.value == [true])
        try await allFinished(queue)
        #expect(before.value == 1)
        #expect(after.value == [true])
    }

    @Test func equalityAndHashingAreByIdentity() {
        let a = TestProcedure("same")
        let b = TestProcedure("same")
        #expect(a != b)
        #expect(a == a)
        #expect(Set([a, b, a]).count == 2)
    }
}
