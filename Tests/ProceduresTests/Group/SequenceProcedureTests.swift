import CohortTestSupport
import Testing

@testable import Procedures

@Suite("SequenceProcedure")
struct SequenceProcedureTests {
    @Test func childrenRunOneAfterAnotherInOrder() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let gauge = Gauge()
        let children = (0..<6).map { index in
            AsyncBlockProcedure {
                gauge.enter()
                events.record("c\(index)")
                try await Task.sleep(for: .milliseconds(1))
                gauge.leave()
            }
        }
        let sequence = SequenceProcedure(children: children)
        queue.add(sequence)
        #expect(try await finished(sequence).isSucceeded)
        #expect(events.all == (0..<6).map { "c\($0)" })
        #expect(gauge.max == 1)
    }

    @Test func childAddedLaterRunsAfterTheOthers() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let first = TestProcedure("first", finishesItself: false, events: events)
        let sequence = SequenceProcedure(first)
        queue.add(sequence)
        try await waitUntil("first executes") { first.isExecuting }
        let second = TestProcedure("second", events: events)
        sequence.add(child: second)
        #expect(second.dependencies == [first])
        first.complete()
        #expect(try await finished(sequence).isSucceeded)
        #expect(events.all == ["first.execute", "second.execute"])
    }

    @Test func failureStopsTheRestAndFailsTheSequence() async throws {
        let queue = makeQueue()
        let first = TestProcedure("first")
        let broken = TestProcedure("broken", error: TestError("broken"))
        let rest = (0..<3).map { TestProcedure("rest\($0)") }
        let sequence = SequenceProcedure(children: [first, broken] + rest)
        queue.add(sequence)
        let outcome = try await finished(sequence)
        #expect(outcome.isFailed)
        let error = try #require(outcome.error as? GroupError)
        #expect(error.errors.map(\.child) == ["broken"])
        #expect(first.didExecute)
        #expect(rest.allSatisfy { !$0.didExecute && $0.outcome?.isCancelled == true })
    }

    @Test func cancelledChildStopsTheRestAndCancelsTheSequence() async throws {
        let queue = makeQueue()
        let cancelled = TestProcedure("cancelled")
        cancelled.cancel(with: TestError("skip"))
        let rest = TestProcedure("rest")
        let sequence = SequenceProcedure(TestProcedure("first"), cancelled, rest)
        queue.add(sequence)
        let outcome = try await finished(sequence)
        #expect(outcome.isCancelled)
        #expect(outcome.error as? TestError == TestError("skip"))
        #expect(!rest.didExecute)
    }

    @Test func childAddedAfterTheSequenceStoppedIsCancelled() async throws {
        let queue = makeQueue()
        let broken = TestProcedure("broken", error: TestError())
        let blocker = TestProcedure("blocker", finishesItself: false)
        blocker.isAutomaticFinishingDisabled = true
        let sequence = SequenceProcedure(broken, blocker)
        queue.add(sequence)
        try await waitUntil("blocker is cancelled") { blocker.isCancelled }
        let late = TestProcedure("late")
        sequence.add(child: late)
        #expect(late.isCancelled)
        blocker.complete()
        #expect(try await finished(sequence).isFailed)
        #expect(!late.didExecute)
    }

    @Test func cancellingTheSequenceStopsIt() async throws {
        let queue = makeQueue()
        let first = TestProcedure("first", finishesItself: false)
        let second = TestProcedure("second")
        let sequence = SequenceProcedure(first, second)
        queue.add(sequence)
        try await waitUntil("first executes") { first.isExecuting }
        sequence.cancel()
        #expect(try await finished(sequence).isCancelled)
        #expect(!second.didExecute)
    }

    @Test func sequenceNestedInAGroupRunsInOrderBesideItsSiblings() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let steps = (0..<3).map { TestProcedure("step\($0)", events: events) }
        let sequence = SequenceProcedure(children: steps)
        let sibling = TestProcedure("sibling", events: events)
        let group = GroupProcedure(sequence, sibling)
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
        #expect(events.all.filter { $0.hasPrefix("step") } == ["step0.execute", "step1.execute", "step2.execute"])
        #expect(sibling.didExecute)
    }

    @Test func groupNestedInASequenceMustFinishBeforeTheNextStep() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let parallel = GroupProcedure(children: (0..<3).map { TestProcedure("p\($0)", events: events) })
        let after = TestProcedure("after", events: events)
        let sequence = SequenceProcedure(TestProcedure("before", events: events), parallel, after)
        queue.add(sequence)
        #expect(try await finished(sequence).isSucceeded)
        let all = events.all
        #expect(all.first == "before.execute")
        #expect(all.last == "after.execute")
        #expect(Set(all[1...3]) == ["p0.execute", "p1.execute", "p2.execute"])
    }

    @Test func failingGroupInsideASequenceStopsTheSequence() async throws {
        let queue = makeQueue()
        let failing = GroupProcedure(TestProcedure("bad", error: TestError()))
        failing.name = "failing-group"
        let after = TestProcedure("after")
        let sequence = SequenceProcedure(failing, after)
        queue.add(sequence)
        let error = try #require(try await finished(sequence).error as? GroupError)
        #expect(error.errors.map(\.child) == ["failing-group"])
        #expect(!after.didExecute)
    }

    @Test func sequencesNestInSequences() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let inner = SequenceProcedure(TestProcedure("i0", events: events), TestProcedure("i1", events: events))
        let outer = SequenceProcedure(TestProcedure("o0", events: events), inner, TestProcedure("o1", events: events))
        queue.add(outer)
        #expect(try await finished(outer).isSucceeded)
        #expect(events.all == ["o0.execute", "i0.execute", "i1.execute", "o1.execute"])
    }

    @Test func failureInANestedSequenceStopsTheOuterOne() async throws {
        let queue = makeQueue()
        let inner = SequenceProcedure(TestProcedure("bad", error: TestError()), TestProcedure("skipped"))
        let after = TestProcedure("after")
        let outer = SequenceProcedure(inner, after)
        queue.add(outer)
        #expect(try await finished(outer).isFailed)
        #expect(!after.didExecute)
    }
}
