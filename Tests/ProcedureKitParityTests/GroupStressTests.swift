import Dispatch
import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitStressTests/GroupStressTests.swift`, at its scale
/// (2 batches of 10,000 unless it names another level).
@Suite("GroupStressTests", .serialized)
struct GroupStressTests {
    /// Defect 8: a group cancelled right after it is queued must finish (it once hung a few
    /// times in 10,000: the cancel path read the children's queue suspended while execute()
    /// resumed it, then suspended it again for good).
    @Test func test__group_cancel() async throws {
        try await stress { batch, _ in
            batch.enter()
            let group = GroupProcedure(TestProcedure())
            group.addObserver(BlockObserver(didFinish: { _, _ in batch.leave() }))
            batch.queue.add(group)
            group.cancel()
        }
    }

    /// A group that adds children during init (after super.init) and during execute.
    final class TestGroupProcedureWhichAddsOperationsAfterSuperInit: GroupProcedure, @unchecked Sendable {
        // @unchecked Sendable: adds only a `let` array of procedures.
        let operationsToAddOnExecute: [Procedure]

        init(operations: [Procedure] = [TestProcedure()], operationsToAddOnExecute: [Procedure] = [TestProcedure()]) {
            self.operationsToAddOnExecute = operationsToAddOnExecute
            super.init(children: [])
            name = "TestGroupProcedureWhichAddsOperationsAfterSuperInit"
            add(children: operations)
        }

        override func execute() {
            add(children: operationsToAddOnExecute)
            super.execute()
        }
    }

    @Test func test__group_cancel_and_add() async throws {
        try await stress { batch, _ in
            batch.enter()
            let group = TestGroupProcedureWhichAddsOperationsAfterSuperInit()
            group.addObserver(BlockObserver(didFinish: { _, _ in batch.leave() }))
            batch.queue.add(group)
            group.cancel()
        }
    }

    @Test func test__group_does_not_finish_before_child_operations_are_finished() async throws {
        try await stress(batches: 1) { batch, _ in
            batch.enter()
            let child1 = TestProcedure(delay: .milliseconds(4))
            let child2 = TestProcedure(delay: .milliseconds(6))
            let group = GroupProcedure(child1, child2)
            group.addObserver(
                BlockObserver(didFinish: { _, _ in
                    if child1.isFinished { batch.incrementCounter(named: "child 1 finished") }
                    if child2.isFinished { batch.incrementCounter(named: "child 2 finished") }
                    batch.leave()
                }))
            batch.queue.add(group)
            group.cancel()
        } ended: { batch in
            #expect(batch.counter(named: "child 1 finished") == batch.size)
            #expect(batch.counter(named: "child 2 finished") == batch.size)
        }
    }

    /// Defect 6: a cancelled group's events never overlap (ProcedureKit: 2 × 1,000).
    @Test func test__cancelled_group_no_concurrent_events() async throws {
        try await stress { batch, _ in
            batch.enter()
            let group = EventConcurrencyTrackingGroupProcedure(children: [TestProcedure(), TestProcedure()])
            group.addObserver(
                BlockObserver(didFinish: { group, _ in
                    let group = group as! EventConcurrencyTrackingGroupProcedure
                    if !group.tracker.overlaps.isEmpty { batch.incrementCounter(named: "overlapping events") }
                    batch.leave()
                }))
            batch.queue.add(group)
            group.cancel()
        } ended: { batch in
            #expect(batch.counter(named: "overlapping events") == 0)
        }
    }

    /// Defect 6: children finishing at once never run the group's child(_:willFinishWithError:)
    /// concurrently (ProcedureKit: 2 × 50).
    @Test func test__group_simultaneous_child_finish_no_concurrent_events() async throws {
        try await stress { batch, _ in
            batch.enter()
            let children = (0..<3).map { index -> Procedure in
                let procedure = BlockProcedure {}
                procedure.name = "Child: \(index)"
                return procedure
            }
            let group = EventConcurrencyTrackingGroupProcedure(children: children)
            group.addObserver(
                BlockObserver(didFinish: { group, _ in
                    let group = group as! EventConcurrencyTrackingGroupProcedure
                    if !group.tracker.overlaps.isEmpty { batch.incrementCounter(named: "overlapping events") }
                    batch.leave()
                }))
            batch.queue.add(group)
        } ended: { batch in
            #expect(batch.counter(named: "overlapping events") == 0)
        }
    }

    /// Defect 6: a child adding children to its running group (ProcedureKit: 2 × 50).
    @Test func test__group_add_child_no_concurrent_events() async throws {
        try await stress { batch, _ in
            batch.enter()
            let additionalChildren = (1..<3).map { index -> Procedure in
                let procedure = BlockProcedure {}
                procedure.name = "Child: \(index)"
                return procedure
            }
            let group = EventConcurrencyTrackingGroupProcedure(children: [])
            let initialChild = BlockProcedure { [weak group] in group?.add(children: additionalChildren) }
            initialChild.name = "Child: 0 (initial)"
            group.add(child: initialChild)
            group.addObserver(
                BlockObserver(didFinish: { group, _ in
                    let group = group as! EventConcurrencyTrackingGroupProcedure
                    if !group.tracker.overlaps.isEmpty { batch.incrementCounter(named: "overlapping events") }
                    if group.children.count != 3 { batch.incrementCounter(named: "missing children") }
                    batch.leave()
                }))
            batch.queue.add(group)
        } ended: { batch in
            #expect(batch.counter(named: "overlapping events") == 0)
            #expect(batch.counter(named: "missing children") == 0)
        }
    }
}
