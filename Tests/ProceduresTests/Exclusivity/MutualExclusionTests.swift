import CohortTestSupport
import Dispatch
import Testing

@testable import Procedures

@Suite("Mutual exclusion")
struct MutualExclusionTests {
    /// A procedure that holds its slot for a while on another thread, tracking overlap.
    final class HoldingProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
        let gauge: Gauge
        let events: EventLog?
        let hold: Duration
        init(
            _ name: String, category: String?, gauge: Gauge, events: EventLog? = nil, hold: Duration = .milliseconds(2)
        ) {
            self.gauge = gauge
            self.events = events
            self.hold = hold
            super.init()
            self.name = name
            if let category { addCondition(MutuallyExclusive(category: category)) }
        }
        override func execute() {
            gauge.enter()
            events?.record("\(name).start")
            DispatchQueue.global().asyncAfter(deadline: .now() + hold.dispatch) {
                self.events?.record("\(self.name).end")
                self.gauge.leave()
                self.finish()
            }
        }
    }

    @Test func mutuallyExclusiveProceduresRunOneAtATime() async throws {
        let queue = makeQueue()
        let gauge = Gauge()
        let procedures = (0..<10).map { HoldingProcedure("p\($0)", category: "db", gauge: gauge) }
        queue.add(procedures)
        try await allFinished(queue)
        #expect(gauge.max == 1)
        #expect(gauge.total == 10)
    }

    /// The time a set of exclusive procedures takes is at least the sum of their durations.
    @Test func mutuallyExclusiveProceduresTakeAtLeastTheSumOfTheirDurations() async throws {
        let queue = makeQueue()
        let count = 5
        let each: Duration = .milliseconds(40)
        let procedures = (0..<count).map { index -> DelayProcedure in
            let delay = DelayProcedure(by: each)
            delay.name = "delay\(index)"
            delay.addCondition(MutuallyExclusive(category: "printer"))
            return delay
        }
        let time = try await elapsed {
            queue.add(procedures)
            try await allFinished(queue)
        }
        #expect(time >= each * count)
        #expect(procedures.allSatisfy { $0.outcome?.isSucceeded == true })
    }

    @Test func differentCategoriesRunAtTheSameTime() async throws {
        let queue = makeQueue()
        let a = TestProcedure("a", finishesItself: false)
        a.addCondition(MutuallyExclusive(category: "x"))
        let b = TestProcedure("b", finishesItself: false)
        b.addCondition(MutuallyExclusive(category: "y"))
        queue.add([a, b])
        try await waitUntil("both execute") { a.isExecuting && b.isExecuting }
        a.complete()
        b.complete()
        try await allFinished(queue)
    }

    @Test func multiCategoryProcedureWaitsForAllOfItsCategories() async throws {
        let queue = makeQueue()
        let holdsX = TestProcedure("holdsX", finishesItself: false)
        holdsX.addCondition(MutuallyExclusive(category: "x"))
        let holdsY = TestProcedure("holdsY", finishesItself: false)
        holdsY.addCondition(MutuallyExclusive(category: "y"))
        queue.add([holdsX, holdsY])
        try await waitUntil("holders execute") { holdsX.isExecuting && holdsY.isExecuting }
        let both = TestProcedure("both")
        both.addCondition(MutuallyExclusive(categories: ["x", "y"]))
        queue.add(both)
        holdsX.complete()
        try await finished(holdsX)
        #expect(!both.didExecute)
        holdsY.complete()
        #expect(try await finished(both).isSucceeded)
        #expect(Set(both.fencingTokens.keys) == ["x", "y"])
    }

    /// ProcedureKit's contract: requested once after dependencies and conditions (never at
    /// enqueue), released once after finishing.
    @Test func lockIsRequestedOnceAfterDependenciesAndConditionsAndReleasedOnceAfterFinish() async throws {
        let queue = makeQueue()
        let manager = RecordingExclusivityManager()
        queue.exclusivityManager = manager
        let dependency = TestProcedure("dependency", finishesItself: false)
        let conditionEvaluated = Locked(false)
        let procedure = TestProcedure("exclusive")
        procedure.addDependency(dependency)
        procedure.addCondition(
            BlockCondition {
                #expect(manager.calls.isEmpty)
                conditionEvaluated.value = true
                return true
            })
        procedure.addCondition(MutuallyExclusive(category: "db"))
        queue.add([procedure, dependency])
        try await waitUntil("dependency executes") { dependency.isExecuting }
        #expect(manager.calls.isEmpty)
        dependency.complete()
        try await finished(procedure)
        try await allFinished(queue)
        #expect(conditionEvaluated.value)
        let requests = manager.calls(.request, for: "exclusive")
        #expect(requests.count == 1)
        #expect(requests.first?.state == .evaluatingConditions)
        #expect(requests.first?.categories == ["db"])
        let releases = manager.calls(.release, for: "exclusive")
        #expect(releases.count == 1)
        #expect(releases.first?.state == .finished)
        #expect(manager.calls(.withdraw, for: "exclusive").isEmpty)
        #expect(manager.snapshot().isEmpty)
        #expect(procedure.fencingTokens == ["db": 1])
    }

    @Test func failingConditionRequestsNoLock() async throws {
        let queue = makeQueue()
        let manager = RecordingExclusivityManager()
        queue.exclusivityManager = manager
        let procedure = TestProcedure("exclusive")
        procedure.addCondition(BlockCondition { throw TestError() })
        procedure.addCondition(MutuallyExclusive(category: "db"))
        queue.add(procedure)
        #expect(try await finished(procedure).isFailed)
        #expect(manager.calls.isEmpty)
    }

    @Test func lockIsReleasedWhenTheHolderFinishes() async throws {
        let queue = makeQueue()
        let first = TestProcedure("first", finishesItself: false)
        first.addCondition(MutuallyExclusive(category: "db"))
        let second = TestProcedure("second")
        second.addCondition(MutuallyExclusive(category: "db"))
        queue.add(first)
        try await waitUntil("first executes") { first.isExecuting }
        queue.add(second)
        try await waitUntil("second waits for the lock") { second.state == .evaluatingConditions }
        #expect(!second.didExecute)
        first.complete(with: TestError())
        #expect(try await finished(second).isSucceeded)
        #expect(try #require(second.fencingTokens["db"]) > (try #require(first.fencingTokens["db"])))
    }

    /// A holds, B and C wait; cancel B; A finishes; C must run alone, and B never runs.
    @Test func cancelledWaiterWithdrawsItsLockRequest() async throws {
        let queue = makeQueue()
        let manager = RecordingExclusivityManager()
        queue.exclusivityManager = manager
        let gauge = Gauge()
        let a = TestProcedure("A", finishesItself: false, gauge: gauge)
        let b = TestProcedure("B", finishesItself: false, gauge: gauge)
        let c = TestProcedure("C", finishesItself: false, gauge: gauge)
        for procedure in [a, b, c] { procedure.addCondition(MutuallyExclusive(category: "db")) }
        queue.add(a)
        try await waitUntil("A executes") { a.isExecuting }
        queue.add(b)
        try await waitUntil("B waits") { manager.snapshot()["db"]?.waiters.count == 1 }
        queue.add(c)
        try await waitUntil("C waits") { manager.snapshot()["db"]?.waiters.count == 2 }

        b.cancel()
        #expect(try await finished(b).isCancelled)
        #expect(!b.didExecute)
        #expect(manager.calls(.withdraw, for: "B").count == 1)
        #expect(manager.calls(.release, for: "B").isEmpty)
        // A still holds the lock and C still waits for it.
        #expect(a.isExecuting)
        #expect(c.state == .evaluatingConditions)
        #expect(manager.snapshot()["db"]?.waiters.count == 1)

        a.complete()
        try await waitUntil("C executes") { c.isExecuting }
        #expect(gauge.max == 1)
        c.complete()
        try await allFinished(queue)
        #expect(gauge.max == 1)
        #expect(manager.snapshot().isEmpty)
    }

    @Test func cancelledWaiterOfSeveralCategoriesWithdrawsFromAll() async throws {
        let queue = makeQueue()
        let manager = RecordingExclusivityManager()
        queue.exclusivityManager = manager
        let holder = TestProcedure("holder", finishesItself: false)
        holder.addCondition(MutuallyExclusive(category: "x"))
        let waiter = TestProcedure("waiter")
        waiter.addCondition(MutuallyExclusive(categories: ["x", "y"]))
        let behind = TestProcedure("behind")
        behind.addCondition(MutuallyExclusive(category: "y"))
        queue.add(holder)
        try await waitUntil("holder executes") { holder.isExecuting }
        queue.add(waiter)
        try await waitUntil("waiter waits") { manager.snapshot()["y"]?.waiters.count == 1 }
        queue.add(behind)
        try await waitUntil("behind waits") { manager.snapshot()["y"]?.waiters.count == 2 }
        waiter.cancel()
        // With the waiter gone, y is free for the procedure behind it, while x stays held.
        #expect(try await finished(behind).isSucceeded)
        #expect(holder.isExecuting)
        holder.complete()
        try await allFinished(queue)
        #expect(!waiter.didExecute)
    }

    @Test func exclusionWithDependenciesDoesNotDeadlock() async throws {
        let queue = makeQueue()
        let gauge = Gauge()
        // The dependent is added first: had it taken the lock at enqueue, it would wait for
        // its dependency forever while holding the lock the dependency needs.
        let dependency = HoldingProcedure("dependency", category: "db", gauge: gauge)
        let dependent = HoldingProcedure("dependent", category: "db", gauge: gauge)
        dependent.addDependency(dependency)
        let other = HoldingProcedure("other", category: "db", gauge: gauge)
        queue.add([dependent, other, dependency])
        try await allFinished(queue)
        #expect([dependency, dependent, other].allSatisfy { $0.outcome?.isSucceeded == true })
        #expect(gauge.max == 1)
    }

    @Test func exclusiveProceduresAddedConcurrentlyFromManyThreadsRunOneAtATime() async throws {
        let queue = makeQueue()
        let gauge = Gauge()
        let procedures = (0..<60).map {
            HoldingProcedure("p\($0)", category: "db", gauge: gauge, hold: .microseconds(200))
        }
        DispatchQueue.concurrentPerform(iterations: procedures.count) { queue.add(procedures[$0]) }
        try await allFinished(queue)
        #expect(gauge.max == 1)
        #expect(gauge.total == 60)
    }

    @Test func exclusionSpansQueuesThatShareAManager() async throws {
        let manager = LocalExclusivityManager()
        let queues = (0..<3).map { index -> ProcedureQueue in
            let queue = ProcedureQueue(name: "q\(index)")
            queue.exclusivityManager = manager
            return queue
        }
        let gauge = Gauge()
        var procedures: [Procedure] = []
        for (index, queue) in queues.enumerated() {
            for n in 0..<5 {
                let procedure = HoldingProcedure("q\(index)p\(n)", category: "db", gauge: gauge)
                procedures.append(procedure)
                queue.add(procedure)
            }
        }
        for procedure in procedures { try await finished(procedure) }
        #expect(gauge.max == 1)
    }

    @Test func exclusionHoldsWhenTheQueueThatAddedThemGoesAway() async throws {
        let gauge = Gauge()
        weak var weakQueue: ProcedureQueue?
        let procedures: [HoldingProcedure] = {
            let queue = makeQueue()
            weakQueue = queue
            let procedures = (0..<8).map { HoldingProcedure("p\($0)", category: "db", gauge: gauge) }
            queue.add(procedures)
            return procedures
        }()
        for procedure in procedures { #expect(try await finished(procedure).isSucceeded) }
        #expect(gauge.max == 1)
        try await waitUntil("the queue is released") { weakQueue == nil }
    }

    @Test func fencingTokensIncreaseWithEachGrant() async throws {
        let queue = makeQueue(maxConcurrentCount: 1)
        let procedures = (0..<5).map { index -> TestProcedure in
            let procedure = TestProcedure("p\(index)")
            procedure.addCondition(MutuallyExclusive(category: "db"))
            return procedure
        }
        queue.add(procedures)
        try await allFinished(queue)
        let tokens = procedures.compactMap { $0.fencingTokens["db"] }
        #expect(Set(tokens).count == 5)
        #expect(tokens.sorted() == [1, 2, 3, 4, 5])
    }
}
