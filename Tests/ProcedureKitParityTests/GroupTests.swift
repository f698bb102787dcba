import Dispatch
import Testing

@testable import Procedures

/// ProcedureKit's `GroupTestCase.group`: a group recording that it executed.
final class TestGroupProcedure: GroupProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds only a `Locked` counter.
    let executions = Locked(0)
    var didExecute: Bool { executions.value > 0 }

    override init(children: [Procedure], maxConcurrentCount: Int = ProcedureQueue.unlimited) {
        super.init(children: children, maxConcurrentCount: maxConcurrentCount)
        name = "TestGroupProcedure"
    }

    override func execute() {
        executions.mutate { $0 += 1 }
        super.execute()
    }
}

/// ProcedureKit's `createTestProcedures`: five test procedures, failing if asked.
func createTestProcedures(count: Int = 5, delay: Duration? = nil, shouldError: Bool = false) -> [TestProcedure] {
    (0..<count).map {
        TestProcedure(name: "Child \($0)", delay: delay, error: shouldError ? TestError("child \($0)") : nil)
    }
}

/// ProcedureKit's `Tests/ProcedureKitTests/GroupTests.swift`.
@Suite("GroupTests")
struct GroupTests {
    let children = createTestProcedures()
    var group: TestGroupProcedure { TestGroupProcedure(children: children) }

    // MARK: Execution

    @Test func test__group_children_are_executed() async throws {
        let group = self.group
        #expect(try await run(group).isSucceeded)
        for child in group.children { #expect(child.isFinished) }
        for child in children { #expect(child.didExecute) }
    }

    @Test func test__group_adding_operation_to_running_group() async throws {
        let release = DispatchSemaphore(value: 0)
        let group = self.group
        // Keeps the group from finishing before the extra child is added after execute.
        group.add(child: BlockProcedure { release.wait() })
        let extra = TestProcedure(name: "Extra child")
        group.addObserver(
            BlockObserver(didExecute: { group in
                (group as! GroupProcedure).add(child: extra)
                release.signal()
            }))
        #expect(try await run(group).isSucceeded)
        #expect(extra.didExecute)
    }

    @Test func test__group_only_adds_initial_operations_to_children_property_once() async throws {
        let group = self.group
        try await run(group)
        #expect(group.children == children)
    }

    /// Defect 7: observers attached before the group runs hear will-add for init's children.
    @Test func test__group_will_add_child_observer_is_called() async throws {
        let blockCalledWith = Locked<(Procedure, Procedure)?>(nil)
        let group = TestGroupProcedure(children: [children[0]])
        group.addObserver(BlockObserver(willAdd: { group, child in blockCalledWith.value = (group, child) }))
        try await run(group)
        let (observedGroup, observedChild) = try #require(blockCalledWith.value, "observer not called")
        #expect(observedGroup === group)
        #expect(observedChild === children[0])
    }

    /// Defect 7: observers attached before the group runs hear did-add for init's children.
    @Test func test__group_did_add_child_observer_is_called() async throws {
        let blockCalledWith = Locked<(Procedure, Procedure)?>(nil)
        let group = TestGroupProcedure(children: [children[0]])
        group.addObserver(BlockObserver(didAdd: { group, child in blockCalledWith.value = (group, child) }))
        try await run(group)
        let (observedGroup, observedChild) = try #require(blockCalledWith.value, "observer not called")
        #expect(observedGroup === group)
        #expect(observedChild === children[0])
    }

    @Test func test__group_is_not_suspended_at_start() {
        #expect(!group.isSuspended)
    }

    @Test func test__group_suspended_before_execute() async throws {
        let child = children[0]
        let group = TestGroupProcedure(children: [child])
        group.isSuspended = true
        let childWillExecute = Signal()
        child.addObserver(BlockObserver(willExecute: { _ in childWillExecute.fire() }))
        let groupDidExecute = Signal()
        group.addObserver(BlockObserver(didExecute: { _ in groupDidExecute.fire() }))
        let queue = makeQueue()
        queue.add(group)
        try await groupDidExecute.wait("the group's did-execute")
        #expect(group.didExecute)
        #expect(group.isExecuting)
        #expect(!childWillExecute.isFired, "child executed while the group was suspended")
        #expect(!child.isFinished)
        group.isSuspended = false
        try await finished(group)
        #expect(child.isFinished)
    }

    @Test func test__group_suspended_during_execution_does_not_run_additional_children() async throws {
        let child1 = children[0]
        let child2 = children[1]
        child2.addDependency(child1)
        let group = TestGroupProcedure(children: [child1, child2])
        child1.addObserver(BlockObserver(willFinish: { _, _ in group.isSuspended = true }))
        let queue = makeQueue()
        queue.add(group)
        try await finished(child1)
        #expect(group.isSuspended)
        #expect(!group.isFinished)
        #expect(!child2.didExecute)
        group.isSuspended = false
        try await finished(group)
        #expect(!group.isSuspended)
        #expect(child2.isFinished)
    }

    // MARK: Errors

    @Test func test__group_exits_correctly_when_child_errors() async throws {
        let children = createTestProcedures(shouldError: true)
        let group = TestGroupProcedure(children: children)
        let outcome = try await run(group)
        #expect(outcome.isFailed)
        #expect((outcome.error as? GroupError)?.errors.count == 5)
    }

    @Test func test__group_exits_correctly_when_child_group_finishes_with_errors() async throws {
        let children = createTestProcedures(shouldError: true)
        let child = TestGroupProcedure(children: children)
        child.name = "Child Group"
        let group = TestGroupProcedure(children: [child])
        let outcome = try await run(group)
        #expect(outcome.isFailed)
        #expect((outcome.error as? GroupError)?.errors.count == 1)
        #expect((child.error as? GroupError)?.errors.count == 5)
    }

    /// ProcedureKit's `TestGroupChildWillFinishWithErrors`.
    final class TestGroupChildWillFinishWithErrors: GroupProcedure, @unchecked Sendable {
        // @unchecked Sendable: adds `Locked` records and an immutable action.
        enum Action: Sendable {
            case none
            case callSuperWithError((any Error)?)
        }
        let receivedInput = Locked<[ObjectIdentifier: String]>([:])
        let didReceiveDuplicate = Locked(false)
        let action: Action

        init(children: [Procedure], action: Action) {
            self.action = action
            super.init(children: children)
        }

        override func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
            let duplicate = receivedInput.mutate {
                $0.updateValue(error.map { "\($0)" } ?? "nil", forKey: ObjectIdentifier(child)) != nil
            }
            if duplicate { didReceiveDuplicate.value = true }
            switch action {
            case .callSuperWithError(let modified): super.child(child, willFinishWithError: modified)
            case .none: break
            }
        }
    }

    @Test func test__group__child_willFinishWithError_does_not_call_super() async throws {
        let children = createTestProcedures(shouldError: true)
        let group = TestGroupChildWillFinishWithErrors(children: children, action: .none)
        let outcome = try await run(group)
        #expect(!group.didReceiveDuplicate.value)
        for child in children { #expect(group.receivedInput.value[ObjectIdentifier(child)] != nil) }
        #expect(outcome.isSucceeded)
        #expect(group.childErrors.isEmpty)
    }

    @Test func test__group__child_willFinishWithError_calls_super_with_modified_errors() async throws {
        let children = createTestProcedures(shouldError: true)
        let group = TestGroupChildWillFinishWithErrors(children: children, action: .callSuperWithError(nil))
        let outcome = try await run(group)
        #expect(!group.didReceiveDuplicate.value)
        for child in children { #expect(group.receivedInput.value[ObjectIdentifier(child)] != nil) }
        #expect(outcome.isSucceeded)
        #expect(group.childErrors.isEmpty)
    }

    // MARK: Cancellation

    @Test func test__group_cancels_children() async throws {
        let group = self.group
        let didCancel = Signal()
        group.addObserver(BlockObserver(didCancel: { _, _ in didCancel.fire() }))
        group.cancel()
        try await didCancel.wait("the group's did-cancel")
        for child in group.children { #expect(child.isCancelled) }
    }

    @Test func test__group_cancels_children_when_running() async throws {
        let children = createTestProcedures(delay: .seconds(30))
        let group = TestGroupProcedure(children: children)
        group.addObserver(BlockObserver(didExecute: { $0.cancel() }))
        let outcome = try await run(group)
        #expect(group.isCancelled)
        #expect(outcome.isCancelled)
        for child in children { #expect(child.isCancelled) }
    }

    @Test func test__group_execute_is_called_when_cancelled_before_running() async throws {
        let group = self.group
        group.cancel()
        #expect(!group.didExecute)
        try await run(group)
        #expect(group.isCancelled)
        #expect(group.didExecute)
        #expect(group.isFinished)
    }

    @Test func test__group_cancel_with_errors_does_not_collect_errors_sent_to_children() async throws {
        let group = self.group
        let error = TestError("group")
        group.cancel(with: error)
        let outcome = try await run(group)
        #expect(outcome.isCancelled)
        #expect(outcome.error as? TestError == error)
        #expect(group.childErrors.isEmpty)
    }

    @Test func test__group_additional_children_are_cancelled_if_group_is_cancelled() async throws {
        let group = self.group
        group.cancel()
        let additionalChild = TestProcedure()
        group.add(child: additionalChild)
        try await run(group)
        #expect(additionalChild.isCancelled)
    }

    // MARK: Finishing

    @Test func test__group_does_not_finish_before_all_children_finish() async throws {
        let group = self.group
        let unfinishedAtWillFinish = Locked<Int?>(nil)
        group.addObserver(
            BlockObserver(willFinish: { group, _ in
                unfinishedAtWillFinish.value = (group as! GroupProcedure).children.filter { !$0.isFinished }.count
            }))
        try await run(group)
        #expect(unfinishedAtWillFinish.value == 0)
    }

    @Test func test__group_does_not_finish_before_child_operation_finishes() async throws {
        let child = TestProcedure(delay: .milliseconds(100))
        let group = GroupProcedure(child)
        try await run(group)
        #expect(child.isFinished)
    }

    @Test func test__group_ignores_delegate_calls_from_other_queues() async throws {
        let group = TestGroupProcedure(children: [])
        let otherQueue = makeQueue("other")
        otherQueue.delegate = group
        let observerCalledFromGroupDelegate = Locked(false)
        group.addObserver(
            BlockObserver(
                willAdd: { _, _ in observerCalledFromGroupDelegate.value = true },
                didAdd: { _, _ in observerCalledFromGroupDelegate.value = true }))
        let other = TestProcedure(delay: .seconds(30))
        otherQueue.add(other)
        try await run(group)
        #expect(group.isFinished)
        #expect(!observerCalledFromGroupDelegate.value)
        other.cancel()
    }

    // MARK: Produced children

    @Test func test__child_can_produce_operation() async throws {
        let producedOperation = TestProcedure(name: "ProducedOperation", delay: .milliseconds(50))
        let child = TestProcedure(name: "Child", delay: .milliseconds(50), produced: producedOperation)
        let group = TestGroupProcedure(children: [child])
        #expect(try await run(group).isSucceeded)
        #expect(child.isFinished)
        #expect(producedOperation.isFinished)
    }

    /// Cohort has no `produce(_:before:)`: the child produces from `execute()`, which is an
    /// event of the child, so the produced procedure is added before the child finishes.
    @Test func test__group_does_not_finish_before_child_produced_operations_are_finished() async throws {
        let childProducedOperation = TestProcedure(name: "ChildProducedOperation", delay: .milliseconds(200))
        let child = TestProcedure(name: "Child", delay: .milliseconds(10), produced: childProducedOperation)
        let group = GroupProcedure(child)
        #expect(try await run(group).isSucceeded)
        #expect(childProducedOperation.isFinished)
    }

    @Test func test__group_children_array_receives_operations_produced_by_children() async throws {
        let childProducedOperation = TestProcedure(name: "ChildProducedOperation", delay: .milliseconds(200))
        let child = TestProcedure(name: "Child", delay: .milliseconds(10), produced: childProducedOperation)
        let group = GroupProcedure(child)
        try await run(group)
        #expect(group.children.count == 2)
        #expect(group.children.contains(child))
        #expect(group.children.contains(childProducedOperation))
    }

    /// Cohort evaluates conditions inside the procedure (no EvaluateConditions procedure):
    /// the group sees exactly its two children.
    @Test func test__group_child_with_conditions_does_not_expose_evaluateconditions_procedure() async throws {
        let childWithFailingCondition = TestProcedure()
        childWithFailingCondition.addCondition(TestCondition.failing())
        let childWithSucceedingCondition = TestProcedure()
        childWithSucceedingCondition.addCondition(TestCondition.satisfied())
        let seen = Locked<[ObjectIdentifier]>([])
        let group = GroupProcedure(childWithFailingCondition, childWithSucceedingCondition)
        group.addObserver(BlockObserver(willAdd: { _, child in seen.mutate { $0.append(ObjectIdentifier(child)) } }))
        try await run(group)
        #expect(group.children.count == 2)
        #expect(
            seen.value == [ObjectIdentifier(childWithFailingCondition), ObjectIdentifier(childWithSucceedingCondition)])
    }
}

/// ProcedureKit's `GroupConcurrencyTests`.
@Suite("GroupConcurrencyTests")
struct GroupConcurrencyTests {
    /// Counts the children executing at once.
    final class Gauge: Sendable {
        private let state = Locked<(current: Int, max: Int)>((0, 0))
        func enter() {
            state.mutate {
                $0.current += 1
                $0.max = Swift.max($0.max, $0.current)
            }
        }
        func leave() { state.mutate { $0.current -= 1 } }
        var max: Int { state.value.max }
    }

    func concurrencyTest(children count: Int, maxConcurrentCount: Int) async throws -> (Gauge, Duration, GroupProcedure)
    {
        let gauge = Gauge()
        let children = (0..<count).map { _ in
            AsyncBlockProcedure {
                gauge.enter()
                defer { gauge.leave() }
                // The work takes 0.2 s: what is measured is how the group overlaps it.
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        let group = GroupProcedure(children: children)
        group.maxConcurrentCount = maxConcurrentCount
        let start = ContinuousClock.now
        #expect(try await run(group).isSucceeded)
        #expect(children.allSatisfy { $0.isFinished })
        return (gauge, ContinuousClock.now - start, group)
    }

    @Test func test__group_maxConcurrentOperationCount_1() async throws {
        let (gauge, time, group) = try await concurrencyTest(children: 3, maxConcurrentCount: 1)
        #expect(gauge.max == 1)
        #expect(time >= .milliseconds(600))
        #expect(group.maxConcurrentCount == 1)
    }

    @Test func test__group_operation_maxConcurrentOperationCount_2() async throws {
        let (gauge, _, group) = try await concurrencyTest(children: 4, maxConcurrentCount: 2)
        #expect(gauge.max >= 1 && gauge.max <= 2)
        #expect(group.maxConcurrentCount == 2)
    }
}

/// ProcedureKit's `GroupEventConcurrencyTests`: a group's events never overlap (defect 6).
@Suite("GroupEventConcurrencyTests")
struct GroupEventConcurrencyTests {
    let expectedEndingEvents = [
        "override_procedureWillFinish", "observer_willFinish", "override_procedureDidFinish", "observer_didFinish",
    ]

    /// Waits for the group's last event (did-finish observers run after `finished` returns).
    func runTracked(_ group: EventConcurrencyTrackingGroupProcedure, cancelFirst: Bool = false) async throws
        -> ProcedureOutcome
    {
        let didFinish = Signal()
        group.addObserver(BlockObserver(didFinish: { _, _ in didFinish.fire() }))
        if cancelFirst { group.cancel() }
        let outcome = try await run(group)
        try await didFinish.wait("the group's did-finish observers")
        return outcome
    }

    @Test func test_group_finish_no_concurrent_events() async throws {
        let group = EventConcurrencyTrackingGroupProcedure(children: createTestProcedures())
        #expect(try await runTracked(group).isSucceeded)
        expectNoConcurrentEvents(group.tracker)
        let history = group.tracker.history
        #expect(Array(history.prefix(3)) == ["observer_didAttach", "observer_willExecute", "do_Execute"])
        #expect(Array(history.suffix(expectedEndingEvents.count)) == expectedEndingEvents)
    }

    @Test func test_group_cancel_no_concurrent_events() async throws {
        let group = EventConcurrencyTrackingGroupProcedure(children: createTestProcedures())
        #expect(try await runTracked(group, cancelFirst: true).isCancelled)
        expectNoConcurrentEvents(group.tracker)
        let history = group.tracker.history
        #expect(
            Array(history.prefix(5))
                == [
                    "observer_didAttach", "override_procedureDidCancel", "observer_didCancel", "observer_willExecute",
                    "do_Execute",
                ])
        #expect(Array(history.suffix(expectedEndingEvents.count)) == expectedEndingEvents)
    }

    @Test func test__group_add_child__prior_to_adding_group_to_queue() async throws {
        let child = TestProcedure(name: "ChildProcedure", delay: .milliseconds(5))
        let group = EventConcurrencyTrackingGroupProcedure(children: [])
        group.add(child: child)
        #expect(try await runTracked(group).isSucceeded)
        #expect(child.isFinished)
        expectNoConcurrentEvents(group.tracker)
    }

    @Test func test__group_add_child__from_an_observer_on_another_child() async throws {
        let addedChild = TestProcedure(name: "AddedChildProcedure", delay: .milliseconds(5))
        let initialChild = TestProcedure(name: "ChildProcedure", delay: .milliseconds(5))
        let group = EventConcurrencyTrackingGroupProcedure(children: [initialChild])
        initialChild.addObserver(BlockObserver(willExecute: { [weak group] _ in group?.add(child: addedChild) }))
        #expect(try await runTracked(group).isSucceeded)
        #expect(initialChild.isFinished)
        #expect(addedChild.isFinished)
        expectNoConcurrentEvents(group.tracker)
    }
}

/// ProcedureKit's `GroupTests` for `transformChildErrorBlock` and `addChild(_:before:)`
/// (Cohort's `add(child:before:)`; the pending event is taken with `postpone(_:)`).
@Suite("GroupTests: transform child errors, add child before")
struct GroupTransformAndAddBeforeTests {
    @Test func test__group__transform_child_errors_block_receives_children_and_errors() async throws {
        let children = createTestProcedures(shouldError: true)
        let group = TestGroupProcedure(children: children)
        let received = Locked<[ObjectIdentifier: String]>([:])
        let duplicate = Locked(false)
        group.transformChildErrorBlock = { child, error in
            received.mutate { seen in
                if seen.updateValue("\(error.map { "\($0)" } ?? "nil")", forKey: ObjectIdentifier(child)) != nil {
                    duplicate.value = true
                }
            }
        }
        try await run(group)
        #expect(!duplicate.value, "the block was called twice for one child")
        for child in children {
            #expect(received.value[ObjectIdentifier(child)] == "\(child.failure!)", "\(child.name)")
        }
        #expect(group.childErrors.count == children.count)
        #expect((group.outcome?.error as? GroupError)?.errors.count == children.count)
    }

    @Test func test__group__transform_child_errors_block_removes_errors_from_child_willFinishWithError()
        async throws
    {
        final class RecordingGroup: GroupProcedure, @unchecked Sendable {
            // @unchecked Sendable: adds only a `Locked` record.
            let received = Locked<[ObjectIdentifier: String]>([:])
            override func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
                received.mutate { $0[ObjectIdentifier(child)] = error.map { "\($0)" } ?? "nil" }
                super.child(child, willFinishWithError: error)
            }
        }
        let children = createTestProcedures(shouldError: true)
        let group = RecordingGroup(children: children)
        let modified = TestError("modified")
        let ignoredChild = children[0]
        let cleared = children[1]
        group.transformChildErrorBlock = { child, error in
            if child === ignoredChild { error = modified }
            if child === cleared { error = nil }
        }
        try await run(group)
        #expect(group.received.value[ObjectIdentifier(ignoredChild)] == "\(modified)")
        #expect(group.received.value[ObjectIdentifier(cleared)] == "nil")
        #expect(group.received.value.count == children.count)
        // The cleared child's error is not the group's; the modified one is.
        #expect(group.childErrors.count == children.count - 1)
        #expect(group.childErrors.contains { $0.error as? TestError == modified })
    }

    /// ProcedureKit's group is never run: its will-add observers fire as the child is
    /// added. A Cohort group announces its children to observers as it executes, so here
    /// the group runs (held open by a child) while `procedure` postpones its finish.
    @Test func test__group_add_child___before_procedure_finish_async() async throws {
        try await addChildBefore(.finish)
    }

    @Test func test__group_add_child__before_procedure_execute_async() async throws {
        try await addChildBefore(.execute)
    }

    private func addChildBefore(_ kind: PendingEvent.Kind) async throws {
        let addedChild = TestProcedure(name: "AddedChild", delay: .milliseconds(5))
        let holdOpen = Signal()
        let group = TestGroupProcedure(children: [
            AsyncBlockProcedure { try? await holdOpen.wait("the test letting the group finish") }
        ])
        let seenInWillAdd = Locked<(executed: Bool, finished: Bool)?>(nil)
        let procedure = TestProcedure()
        group.addObserver(
            BlockObserver(willAdd: { _, child in
                guard child === addedChild else { return }
                seenInWillAdd.value = (procedure.didExecute, procedure.isFinished)
            }))
        let takeHold: @Sendable (Procedure) -> Void = { procedure in
            let pending = procedure.postpone(kind)
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) {
                group.add(child: addedChild, before: pending)
            }
        }
        procedure.addObserver(
            kind == .execute
                ? BlockObserver(willExecute: takeHold)
                : BlockObserver(willFinish: { procedure, _ in takeHold(procedure) }))
        let queue = makeQueue()
        queue.add(group)
        try await waitUntil("the group executing") { group.didExecute }
        queue.add(procedure)
        try await finished(procedure)
        let seen = try #require(seenInWillAdd.value, "the group's will-add observer never ran for the added child")
        if kind == .execute { #expect(!seen.executed, "procedure executed before the child was added") }
        #expect(!seen.finished, "procedure finished before the child was added")
        holdOpen.fire()
        try await finished(group)
        #expect(addedChild.didExecute)
    }
}
