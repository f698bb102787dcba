import CohortTestSupport
import Dispatch
import Testing

@testable import Procedures

@Suite("GroupProcedure")
struct GroupProcedureTests {
    @Test func childrenOfAGroupAreExecuted() async throws {
        let queue = makeQueue()
        let children = (0..<5).map { TestProcedure("c\($0)") }
        let group = GroupProcedure(children: children)
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
        #expect(children.allSatisfy { $0.executions.value == 1 && $0.isFinished })
        #expect(group.children == children)
        #expect(children.allSatisfy { $0.parent === group })
    }

    @Test func emptyGroupSucceeds() async throws {
        let queue = makeQueue()
        let group = GroupProcedure(children: [])
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
    }

    @Test func childrenDoNotStartBeforeTheGroupExecutes() async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("dependency", finishesItself: false)
        let evaluated = Locked(false)
        let child = TestProcedure("child")
        child.addCondition(
            BlockCondition {
                evaluated.value = true
                return true
            })
        let group = GroupProcedure(child)
        group.addDependency(dependency)
        queue.add([group, dependency])
        try await waitUntil("dependency executes") { dependency.isExecuting }
        #expect(!child.didExecute)
        #expect(!evaluated.value)
        dependency.complete()
        #expect(try await finished(group).isSucceeded)
        #expect(evaluated.value)
    }

    @Test func childAddedToARunningGroupRunsAndTheGroupWaitsForIt() async throws {
        let queue = makeQueue()
        let first = TestProcedure("first", finishesItself: false)
        let group = GroupProcedure(first)
        queue.add(group)
        try await waitUntil("first executes") { first.isExecuting }
        let late = TestProcedure("late", finishesItself: false)
        group.add(child: late)
        first.complete()
        try await waitUntil("late executes") { late.isExecuting }
        #expect(!group.isFinished)
        late.complete()
        #expect(try await finished(group).isSucceeded)
        #expect(group.children == [first, late])
    }

    @Test func groupSuspendedBeforeExecuteRunsNothing() async throws {
        let queue = makeQueue()
        let child = TestProcedure("child")
        let group = GroupProcedure(child)
        group.isSuspended = true
        queue.add(group)
        try await waitUntil("group executes") { group.isExecuting }
        #expect(!child.didExecute)
        #expect(group.isSuspended)
        group.isSuspended = false
        #expect(try await finished(group).isSucceeded)
        #expect(child.didExecute)
    }

    @Test func groupSuspendedDuringExecutionStartsNoFurtherChildren() async throws {
        let queue = makeQueue()
        let first = TestProcedure("first", finishesItself: false)
        let second = TestProcedure("second")
        second.addDependency(first)
        let group = GroupProcedure(first, second)
        queue.add(group)
        try await waitUntil("first executes") { first.isExecuting }
        group.isSuspended = true
        first.complete()
        try await finished(first)
        #expect(!second.didExecute)
        #expect(!group.isFinished)
        group.isSuspended = false
        #expect(try await finished(group).isSucceeded)
        #expect(second.didExecute)
    }

    @Test func groupWithMaxConcurrencyOneRunsChildrenOneAtATime() async throws {
        let queue = makeQueue()
        let gauge = Gauge()
        let children = (0..<6).map { index in
            AsyncBlockProcedure {
                gauge.enter()
                defer { gauge.leave() }
                try await Task.sleep(for: .milliseconds(2))
            }
        }
        let group = GroupProcedure(children: children, maxConcurrentCount: 1)
        #expect(group.maxConcurrentCount == 1)
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
        #expect(gauge.max == 1)
        #expect(gauge.total == 6)
    }

    @Test func failedChildFailsTheGroupWithAGroupErrorNamingIt() async throws {
        let queue = makeQueue()
        let group = GroupProcedure(TestProcedure("ok"), TestProcedure("broken", error: TestError("disk")))
        queue.add(group)
        let outcome = try await finished(group)
        #expect(outcome.isFailed)
        let error = try #require(outcome.error as? GroupError)
        #expect(error.errors.count == 1)
        #expect(error.errors.first?.child == "broken")
        #expect(error.errors.first?.error as? TestError == TestError("disk"))
        #expect(error.description.contains("broken"))
        #expect(group.childErrors.count == 1)
    }

    @Test func errorsOfEveryFailedChildAreCollected() async throws {
        let queue = makeQueue()
        let group = GroupProcedure(children: (0..<4).map { TestProcedure("bad\($0)", error: TestError("\($0)")) })
        queue.add(group)
        let error = try #require(try await finished(group).error as? GroupError)
        #expect(Set(error.errors.map(\.child)) == ["bad0", "bad1", "bad2", "bad3"])
    }

    @Test func nestedGroupFailureFailsTheOuterGroup() async throws {
        let queue = makeQueue()
        let inner = GroupProcedure(TestProcedure("deep", error: TestError("deep")))
        inner.name = "inner"
        let outer = GroupProcedure(TestProcedure("fine"), inner)
        queue.add(outer)
        let error = try #require(try await finished(outer).error as? GroupError)
        #expect(error.errors.map(\.child) == ["inner"])
        let innerError = try #require(error.errors.first?.error as? GroupError)
        #expect(innerError.errors.map(\.child) == ["deep"])
    }

    @Test func nestedGroupsRunTheirChildren() async throws {
        let queue = makeQueue()
        let leaves = (0..<3).map { TestProcedure("leaf\($0)") }
        let innermost = GroupProcedure(children: [leaves[0]])
        let middle = GroupProcedure(children: [innermost, leaves[1]])
        let outer = GroupProcedure(children: [middle, leaves[2]])
        queue.add(outer)
        #expect(try await finished(outer).isSucceeded)
        #expect(leaves.allSatisfy { $0.didExecute })
        #expect(innermost.parent === middle)
        #expect(middle.parent === outer)
    }

    /// A subclass sees every child with its error, and the collected errors at the end.
    final class WatchingGroup: GroupProcedure, @unchecked Sendable {
        // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
        let seen = Locked<[String]>([])
        let final = Locked<[String]?>(nil)
        override func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
            seen.mutate { $0.append("\(child.name):\(error.map { "\($0)" } ?? "ok")") }
            super.child(child, willFinishWithError: error)
        }
        override func groupDidFinishChildren(with errors: [GroupError.ChildError]) {
            final.value = errors.map(\.child)
            // Transform the children's errors into one of our own.
            finish(with: errors.isEmpty ? nil : TestError("\(errors.count) failed"))
        }
    }

    @Test func hooksSeeEveryChildAndItsErrorAndCanTransformTheResult() async throws {
        let queue = makeQueue()
        let group = WatchingGroup(children: [TestProcedure("a"), TestProcedure("b", error: TestError("b"))])
        queue.add(group)
        let outcome = try await finished(group)
        #expect(Set(group.seen.value) == ["a:ok", "b:TestError(b)"])
        #expect(group.final.value == ["b"])
        #expect(outcome.error as? TestError == TestError("1 failed"))
    }

    /// ProcedureKit's branching example: when a child fails, add a recovery child instead of failing.
    final class FetchGroup: GroupProcedure, @unchecked Sendable {
        // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
        let recovery = TestProcedure("read-from-cache")
        init() {
            super.init(children: [TestProcedure("fetch-from-network", error: TestError("offline"))])
        }
        override func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
            guard error != nil, child.name == "fetch-from-network" else {
                super.child(child, willFinishWithError: error)
                return
            }
            // Not calling super: the failure is handled, so the group does not fail with it.
            add(child: recovery)
        }
    }

    @Test func overrideThatAddsARecoveryChildInsteadOfFailing() async throws {
        let queue = makeQueue()
        let group = FetchGroup()
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
        #expect(group.recovery.didExecute)
        #expect(group.children.map(\.name) == ["fetch-from-network", "read-from-cache"])
        #expect(group.childErrors.isEmpty)
    }

    @Test func cancellingAGroupBeforeItRunsCancelsItsChildren() async throws {
        let queue = makeQueue()
        let children = (0..<3).map { TestProcedure("c\($0)") }
        let group = GroupProcedure(children: children)
        group.cancel()
        #expect(children.allSatisfy { $0.isCancelled })
        queue.add(group)
        #expect(try await finished(group).isCancelled)
        #expect(children.allSatisfy { !$0.didExecute && $0.outcome?.isCancelled == true })
    }

    /// Groups run `execute()` even when cancelled before they start, so subclasses can clean up.
    final class CleaningGroup: GroupProcedure, @unchecked Sendable {
        // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
        let executed = Locked(false)
        override func execute() {
            executed.value = true
            super.execute()
        }
    }

    @Test func groupCancelledBeforeItRunsStillExecutesAndFinishesCancelled() async throws {
        let queue = makeQueue()
        let group = CleaningGroup(children: [TestProcedure("child")])
        group.cancel(with: TestError("stop"))
        queue.add(group)
        let outcome = try await finished(group)
        #expect(group.executed.value)
        #expect(outcome.isCancelled)
        #expect(outcome.error as? TestError == TestError("stop"))
    }

    @Test func cancellingARunningGroupCancelsItsChildrenAndWaitsForThem() async throws {
        let queue = makeQueue()
        let running = TestProcedure("running", finishesItself: false)
        running.isAutomaticFinishingDisabled = true
        let waiting = TestProcedure("waiting")
        waiting.addDependency(running)
        let group = GroupProcedure(running, waiting)
        queue.add(group)
        try await waitUntil("running executes") { running.isExecuting }
        group.cancel()
        #expect(running.isCancelled)
        #expect(waiting.isCancelled)
        #expect((running.cancellationReason as? ProcedureError)?.code == .parentCancelled)
        // The child has not stopped yet, so neither has the group.
        #expect(!group.isFinished)
        running.complete()
        #expect(try await finished(group).isCancelled)
        #expect(!waiting.didExecute)
    }

    @Test func cancellingAGroupFinishesChildrenStillWaitingForOutsideDependencies() async throws {
        let queue = makeQueue()
        let outside = TestProcedure("outside", finishesItself: false)
        queue.add(outside)
        let child = TestProcedure("child")
        child.addDependency(outside)
        let group = GroupProcedure(child)
        queue.add(group)
        try await waitUntil("group executes") { group.isExecuting }
        group.cancel()
        // A cancelled child is ready at once, without waiting for its dependency.
        #expect(try await finished(group).isCancelled)
        #expect(!child.didExecute)
        #expect(outside.isExecuting)
        outside.complete()
    }

    @Test func cancelledGroupDoesNotCollectItsChildrensParentCancelErrors() async throws {
        let queue = makeQueue()
        let children = (0..<3).map { TestProcedure("c\($0)", finishesItself: false) }
        let group = GroupProcedure(children: children)
        queue.add(group)
        try await waitUntil("children execute") { children.allSatisfy(\.isExecuting) }
        group.cancel(with: TestError("user"))
        let outcome = try await finished(group)
        #expect(group.childErrors.isEmpty)
        #expect(outcome.error as? TestError == TestError("user"))
    }

    @Test func childrenAddedAfterTheGroupIsCancelledAreCancelled() async throws {
        let queue = makeQueue()
        let blocker = TestProcedure("blocker", finishesItself: false)
        blocker.isAutomaticFinishingDisabled = true
        let group = GroupProcedure(blocker)
        queue.add(group)
        try await waitUntil("blocker executes") { blocker.isExecuting }
        group.cancel()
        let late = TestProcedure("late")
        group.add(child: late)
        #expect(late.isCancelled)
        #expect((late.cancellationReason as? ProcedureError)?.code == .parentCancelled)
        blocker.complete()
        try await finished(group)
        #expect(try await finished(late).isCancelled)
        #expect(!late.didExecute)
    }

    @Test func childAddedAfterTheGroupFinishedIsCancelledAsInvalidUse() async throws {
        let queue = makeQueue()
        let group = GroupProcedure(TestProcedure("only"))
        queue.add(group)
        try await finished(group)
        let late = TestProcedure("late")
        group.add(child: late)
        let outcome = try await finished(late)
        #expect(outcome.isCancelled)
        #expect(outcome.procedureError?.code == .invalidUse)
        #expect(!late.didExecute)
        #expect(group.outcome?.isSucceeded == true)
    }

    /// A child that produces a child, which produces another: the group waits for all.
    final class Producer: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
        let depth: Int
        let made: Locked<[Procedure]>
        init(depth: Int, made: Locked<[Procedure]>) {
            self.depth = depth
            self.made = made
            super.init()
            name = "producer\(depth)"
        }
        override func execute() {
            if depth > 0 {
                let next = Producer(depth: depth - 1, made: made)
                made.mutate { $0.append(next) }
                produce(next)
            }
            DispatchQueue.global().async { self.finish() }
        }
    }

    @Test func groupWaitsForChildrenProducedByChildrenAndListsThem() async throws {
        let queue = makeQueue()
        let made = Locked<[Procedure]>([])
        let root = Producer(depth: 4, made: made)
        let group = GroupProcedure(root)
        let producedSeen = EventLog()
        group.addObserver(BlockObserver(willAdd: { _, child in producedSeen.record(child.name) }))
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
        #expect(made.value.count == 4)
        #expect(made.value.allSatisfy { $0.isFinished })
        #expect(Set(group.children) == Set([root] + made.value))
        // The group's observer hears of the child given to init too, as the group executes.
        #expect(producedSeen.all == ["producer4", "producer3", "producer2", "producer1", "producer0"])
    }

    @Test func childCanBeAddedFromAnObserverJustBeforeAnotherChildFinishes() async throws {
        let queue = makeQueue()
        let added = TestProcedure("added")
        let first = TestProcedure("first")
        let group = GroupProcedure(first)
        first.addObserver(BlockObserver(willFinish: { _, _ in group.add(child: added) }))
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
        #expect(added.didExecute)
        #expect(added.isFinished)
    }

    @Test func childCanCancelItsParent() async throws {
        let queue = makeQueue()
        let sibling = TestProcedure("sibling", finishesItself: false)
        let group = GroupProcedure(sibling)
        final class CancelParent: Procedure, @unchecked Sendable {
            // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
            override func execute() {
                parent?.cancel(with: TestError("from child"))
                finish()
            }
        }
        let child = CancelParent()
        group.add(child: child)
        queue.add(group)
        let outcome = try await finished(group)
        #expect(outcome.isCancelled)
        #expect(outcome.error as? TestError == TestError("from child"))
        #expect(sibling.outcome?.isCancelled == true)
    }

    @Test func groupFinishesAfterEveryChildsDidFinish() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let children = (0..<5).map { TestProcedure("c\($0)") }
        for child in children { child.addObserver(RecordingObserver(log: events)) }
        let group = GroupProcedure(children: children)
        group.name = "group"
        group.addObserver(RecordingObserver(log: events))
        queue.add(group)
        try await finished(group)
        let groupFinished = try #require(events.index(of: "group.didFinish"))
        let groupWillFinish = try #require(events.index(of: "group.willFinish"))
        for child in children {
            #expect(try #require(events.index(of: "\(child.name).didFinish")) < groupWillFinish)
        }
        #expect(groupWillFinish < groupFinished)
    }

    @Test func groupIgnoresQueueDelegateCallsFromOtherQueues() async throws {
        let group = GroupProcedure(children: [])
        let other = makeQueue()
        let stranger = TestProcedure("stranger")
        group.procedureQueue(other, willAdd: stranger)
        group.procedureQueue(other, didAdd: stranger)
        group.procedureQueue(other, willFinish: stranger, with: .failed(TestError()))
        group.procedureQueue(other, didFinish: stranger, with: .failed(TestError()))
        #expect(group.children.isEmpty)
        #expect(group.childErrors.isEmpty)
        #expect(stranger.parent == nil)
        let queue = makeQueue()
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
    }

    @Test func groupObserversSeeChildrenBeingAdded() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let group = GroupProcedure(children: [])
        group.name = "group"
        group.addObserver(RecordingObserver(log: events))
        group.add(child: TestProcedure("child"))
        queue.add(group)
        try await finished(group)
        #expect(events.all.contains("group.willAdd.child"))
        #expect(events.all.contains("group.didAdd.child"))
        #expect(events.index(of: "group.willAdd.child")! < events.index(of: "group.didAdd.child")!)
    }

    @Test func manyChildrenFinishingAtOnceFinishTheGroupExactlyOnce() async throws {
        let queue = makeQueue()
        let children = (0..<200).map { TestProcedure("c\($0)", finishesItself: false) }
        let group = GroupProcedure(children: children)
        let finishes = Locked(0)
        let overlapping = Gauge()
        group.addObserver(
            BlockObserver(
                willFinish: { _, _ in
                    overlapping.enter()
                    finishes.mutate { $0 += 1 }
                },
                didFinish: { _, _ in overlapping.leave() }
            ))
        queue.add(group)
        try await waitUntil("children execute") { children.allSatisfy(\.isExecuting) }
        DispatchQueue.concurrentPerform(iterations: children.count) { children[$0].complete() }
        #expect(try await finished(group).isSucceeded)
        try await allFinished(queue)
        #expect(finishes.value == 1)
        #expect(overlapping.max == 1)
    }

    /// Many threads add children while another cancels the group: the group still finishes,
    /// every child finishes, and every child added after the cancel returned is cancelled.
    @Test(arguments: 0..<5)
    func cancelAndAddConcurrently(round: Int) async throws {
        let queue = makeQueue()
        let blocker = TestProcedure("blocker", finishesItself: false)
        blocker.isAutomaticFinishingDisabled = true
        let group = GroupProcedure(blocker)
        queue.add(group)
        try await waitUntil("blocker executes") { blocker.isExecuting }
        let children = (0..<200).map { TestProcedure("c\($0)") }
        let cancelledAt = Locked<Int?>(nil)
        DispatchQueue.concurrentPerform(iterations: children.count + 1) { index in
            if index == 100 {
                group.cancel()
                cancelledAt.value = 0
            } else {
                let child = children[index < 100 ? index : index - 1]
                let afterCancel = cancelledAt.value != nil
                group.add(child: child)
                if afterCancel { #expect(child.isCancelled) }
            }
        }
        blocker.complete()
        #expect(try await finished(group).isCancelled)
        for child in children { try await finished(child) }
        try await allFinished(group.queue)
    }
}
