import Dispatch
import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/BlockObserverTests.swift`.
@Suite("BlockObserverTests")
struct BlockObserverTests {
    @Test func test__did_attach_is_called() async throws {
        let procedure = TestProcedure()
        let called = Locked<Procedure?>(nil)
        procedure.addObserver(BlockObserver(didAttach: { called.value = $0 }))
        try await run(procedure)
        #expect(called.value === procedure)
    }

    @Test func test__will_execute_is_called() async throws {
        let procedure = TestProcedure()
        let called = Locked<Procedure?>(nil)
        procedure.addObserver(BlockObserver(willExecute: { called.value = $0 }))
        try await run(procedure)
        #expect(called.value === procedure)
    }

    @Test func test__did_execute_is_called() async throws {
        let procedure = TestProcedure()
        let called = Locked<Procedure?>(nil)
        procedure.addObserver(BlockObserver(didExecute: { called.value = $0 }))
        try await run(procedure)
        #expect(called.value === procedure)
    }

    /// Waits for its own cancellation, then finishes (ProcedureKit's `BlockProcedure { this in … }`).
    final class FinishesWhenCancelled: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only a `let` Signal (Sendable).
        let executing = Signal()
        override init() {
            super.init()
            isAutomaticFinishingDisabled = true
        }
        override func execute() { executing.fire() }
        override func procedureDidCancel(with reason: (any Error)?) { finish() }
    }

    @Test func test__did_cancel_is_called() async throws {
        let procedure = FinishesWhenCancelled()
        let called = Locked<(Procedure, String?)?>(nil)
        procedure.addObserver(
            BlockObserver(didCancel: { procedure, error in called.value = (procedure, error.map { "\($0)" }) }))
        let queue = makeQueue()
        queue.add(procedure)
        try await procedure.executing.wait("execute")
        procedure.cancel(with: TestError("cancelled"))
        try await finished(procedure)
        #expect(called.value?.0 === procedure)
        #expect(called.value?.1 == "TestError(cancelled)")
    }

    @Test func test__will_add_operation_is_called() async throws {
        let produced = TestProcedure(name: "produced")
        let producingProcedure = TestProcedure(produced: produced)
        let called = Locked<(Procedure, Procedure)?>(nil)
        producingProcedure.addObserver(BlockObserver(willAdd: { called.value = ($0, $1) }))
        try await run(producingProcedure)
        try await finished(produced)
        #expect(produced.didExecute)
        #expect(called.value?.0 === producingProcedure)
        #expect(called.value?.1 === produced)
    }

    @Test func test__did_add_operation_is_called() async throws {
        let produced = TestProcedure(name: "produced")
        let producingProcedure = TestProcedure(produced: produced)
        let called = Locked<(Procedure, Procedure)?>(nil)
        producingProcedure.addObserver(BlockObserver(didAdd: { called.value = ($0, $1) }))
        try await run(producingProcedure)
        try await finished(produced)
        #expect(produced.didExecute)
        #expect(called.value?.0 === producingProcedure)
        #expect(called.value?.1 === produced)
    }

    @Test func test__will_finish_is_called() async throws {
        let procedure = TestProcedure()
        let called = Locked<Procedure?>(nil)
        procedure.addObserver(BlockObserver(willFinish: { procedure, _ in called.value = procedure }))
        try await run(procedure)
        #expect(called.value === procedure)
    }

    @Test func test__did_finish_is_called() async throws {
        let procedure = TestProcedure()
        let called = Signal()
        procedure.addObserver(BlockObserver(didFinish: { _, _ in called.fire() }))
        try await run(procedure)
        try await called.wait("did-finish")
    }
}

/// ProcedureKit's `BlockObserverSynchronizationTests`, for a serial `DispatchQueue`: Cohort's
/// `delivery: .on(queue)` (ProcedureKit's `synchronizedWith:` another procedure or an
/// `EventQueue` has no counterpart).
@Suite("BlockObserverSynchronizationTests")
struct BlockObserverSynchronizationTests {
    struct QueueIdentity: Sendable {
        let queue = DispatchQueue(label: "SerialDispatchQueue")
        let key = DispatchSpecificKey<UInt8>()
        init() { queue.setSpecific(key: key, value: 1) }
        var isOnQueue: Bool { DispatchQueue.getSpecific(key: key) == 1 }
    }

    /// Runs `procedure` with one observer on `identity`'s queue and returns, per event, whether it ran there.
    func synchronised(_ procedure: Procedure, cancel: Bool = false) async throws -> [String: Bool] {
        let identity = QueueIdentity()
        let seen = Locked<[String: Bool]>([:])
        let onQueue: @Sendable (String) -> Void = { event in
            let synced = identity.isOnQueue
            seen.mutate { $0[event] = synced }
        }
        let didFinish = Signal()
        procedure.addObserver(
            BlockObserver(
                delivery: .on(identity.queue),
                didAttach: { _ in onQueue("didAttach") },
                willExecute: { _ in onQueue("willExecute") },
                didExecute: { _ in onQueue("didExecute") },
                didCancel: { _, _ in onQueue("didCancel") },
                willAdd: { _, _ in onQueue("willAdd") },
                didAdd: { _, _ in onQueue("didAdd") },
                willFinish: { _, _ in onQueue("willFinish") },
                didFinish: { _, _ in
                    onQueue("didFinish")
                    didFinish.fire()
                }))
        if cancel { procedure.cancel() }
        try await run(procedure)
        try await didFinish.wait("did-finish")
        return seen.value
    }

    @Test func test__did_attach_synchronized() async throws {
        #expect(try await synchronised(TestProcedure())["didAttach"] == true)
    }

    @Test func test__will_execute_synchronized() async throws {
        #expect(try await synchronised(TestProcedure())["willExecute"] == true)
    }

    @Test func test__did_execute_synchronized() async throws {
        #expect(try await synchronised(TestProcedure())["didExecute"] == true)
    }

    @Test func test__did_cancel_synchronized() async throws {
        #expect(try await synchronised(TestProcedure(), cancel: true)["didCancel"] == true)
    }

    @Test func test__will_add_synchronized() async throws {
        let produced = TestProcedure(name: "produced")
        #expect(try await synchronised(TestProcedure(produced: produced))["willAdd"] == true)
        try await finished(produced)
    }

    @Test func test__did_add_synchronized() async throws {
        let produced = TestProcedure(name: "produced")
        #expect(try await synchronised(TestProcedure(produced: produced))["didAdd"] == true)
        try await finished(produced)
    }

    @Test func test__will_finish_synchronized() async throws {
        #expect(try await synchronised(TestProcedure())["willFinish"] == true)
    }

    @Test func test__did_finish_synchronized() async throws {
        #expect(try await synchronised(TestProcedure())["didFinish"] == true)
    }
}
