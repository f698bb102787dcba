import CohortTestSupport
import Dispatch
import Synchronization
import Testing

@testable import Procedures

/// Many procedures, many threads, random shapes from a fixed seed (so a failure reproduces),
/// checked against the engine's invariants. Each test stays within a few seconds in debug builds.
@Suite("Stress")
struct StressTests {
    /// Counts what happened to one procedure and checks the invariants as they happen.
    final class Tracker: Sendable {
        let violations = Mutex<[String]>([])
        let holders: [String: Gauge]

        init(categories: [String]) {
            holders = Dictionary(uniqueKeysWithValues: categories.map { ($0, Gauge()) })
        }

        func violation(_ message: String) {
            violations.withLock { if $0.count < 20 { $0.append(message) } }
        }
    }

    final class StressProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: every stored property is a `let` of a Sendable type.
        enum Finishing: CaseIterable { case inline, later, manual }

        let index: Int
        let categories: [String]
        let finishing: Finishing
        let tracker: Tracker
        let slots: Gauge?
        let executions = Locked(0)
        let finishes = Locked(0)

        init(index: Int, categories: [String], finishing: Finishing, tracker: Tracker, slots: Gauge? = nil) {
            self.index = index
            self.categories = categories
            self.finishing = finishing
            self.tracker = tracker
            self.slots = slots
            super.init()
            name = "s\(index)"
            if !categories.isEmpty { addCondition(MutuallyExclusive(categories: Set(categories))) }
            whenFinished { [finishes] _ in finishes.mutate { $0 += 1 } }
        }

        override func execute() {
            executions.mutate { $0 += 1 }
            slots?.enter()
            for dependency in dependencies where !dependency.isFinished {
                tracker.violation("\(name) started before its dependency \(dependency.name) finished")
            }
            for category in categories {
                let gauge = tracker.holders[category]!
                gauge.enter()
                if gauge.current > 1 { tracker.violation("\(name): two holders of \(category)") }
            }
            switch finishing {
            case .inline: done()
            case .later: DispatchQueue.global().async { self.done() }
            case .manual: break
            }
        }

        func done() {
            for category in categories { tracker.holders[category]!.leave() }
            finish()
        }

        override func procedureWillFinish(with outcome: ProcedureOutcome) {
            if executions.value > 0 { slots?.leave() }
        }
    }

    /// Threads add procedures while others cancel and finish random earlier ones.
    @Test(arguments: [7, 99] as [UInt64])
    func manyThreadsAddingCancellingAndFinishingAtOnce(seed: UInt64) async throws {
        let limit = 8
        let queue = makeQueue(maxConcurrentCount: limit)
        let tracker = Tracker(categories: [])
        let slots = Gauge()
        var random = SeededGenerator(seed: seed)
        let count = 3_000
        let procedures = (0..<count).map { index in
            StressProcedure(
                index: index, categories: [],
                finishing: StressProcedure.Finishing.allCases.randomElement(using: &random)!,
                tracker: tracker, slots: slots)
        }
        let actions = (0..<count).map { _ in
            (Int.random(in: 0..<4, using: &random), Int.random(in: 0..<count, using: &random))
        }
        DispatchQueue.concurrentPerform(iterations: count) { index in
            queue.add(procedures[index])
            let (action, target) = actions[index]
            let other = procedures[target % (index + 1)]
            switch action {
            case 0: other.cancel(with: TestError("stress"))
            case 1: other.finish()
            case 2: other.cancel()
            default: break
            }
        }
        // Whatever is still waiting to be finished by hand is cancelled, which finishes it.
        for procedure in procedures where procedure.finishing == .manual { procedure.cancel() }
        try await allFinished(queue, within: .seconds(30))

        #expect(tracker.violations.withLock { $0 } == [])
        #expect(slots.max <= limit)
        for procedure in procedures {
            #expect(procedure.isFinished)
            #expect(procedure.finishes.value == 1)
            #expect(procedure.executions.value <= 1)
            if procedure.executions.value == 0 { #expect(procedure.outcome?.isCancelled == true) }
            if procedure.outcome?.isCancelled == false { #expect(procedure.executions.value == 1) }
        }
    }

    /// 10,000 procedures with random dependencies on earlier ones (so the graph is acyclic)
    /// and random categories from a small set: no two holders of a category at once, every
    /// procedure finishes exactly once, every dependency finishes before its dependent starts.
    @Test(arguments: [2024, 77] as [UInt64])
    func tenThousandProceduresWithRandomDependenciesAndCategories(seed: UInt64) async throws {
        let categoryNames = ["a", "b", "c", "d", "e"]
        let tracker = Tracker(categories: categoryNames)
        let queue = makeQueue()
        var random = SeededGenerator(seed: seed)
        let count = 10_000
        var procedures: [StressProcedure] = []
        procedures.reserveCapacity(count)
        for index in 0..<count {
            var categories: [String] = []
            if Int.random(in: 0..<10, using: &random) < 3 {
                categories = Array(
                    Set(
                        (0..<Int.random(in: 1...2, using: &random)).map { _ in
                            categoryNames.randomElement(using: &random)!
                        })
                ).sorted()
            }
            let finishing: StressProcedure.Finishing = Bool.random(using: &random) ? .inline : .later
            let procedure = StressProcedure(
                index: index, categories: categories, finishing: finishing, tracker: tracker)
            if index > 0 {
                for _ in 0..<Int.random(in: 0...3, using: &random) {
                    let earliest = max(0, index - 300)
                    procedure.addDependency(procedures[Int.random(in: earliest..<index, using: &random)])
                }
            }
            procedures.append(procedure)
        }
        let time = try await elapsed {
            queue.add(procedures)
            try await allFinished(queue, within: .seconds(60))
        }
        #expect(tracker.violations.withLock { $0 } == [])
        for procedure in procedures {
            #expect(procedure.finishes.value == 1)
            #expect(procedure.executions.value == 1)
            #expect(procedure.outcome?.isSucceeded == true)
        }
        for gauge in tracker.holders.values { #expect(gauge.max == 1) }
        #expect(time < .seconds(30))
    }

    /// Groups, some nested, whose children share categories with the children of other
    /// groups: exclusion holds across the groups, and every group finishes.
    @Test(arguments: [5, 6] as [UInt64])
    func exclusiveChildrenOfManyGroupsExcludeEachOther(seed: UInt64) async throws {
        let categoryNames = ["x", "y", "z"]
        let tracker = Tracker(categories: categoryNames)
        let queue = makeQueue()
        var random = SeededGenerator(seed: seed)
        var groups: [GroupProcedure] = []
        var children: [StressProcedure] = []
        for groupIndex in 0..<60 {
            let members = (0..<10).map { childIndex -> StressProcedure in
                let categories = Bool.random(using: &random) ? [categoryNames.randomElement(using: &random)!] : []
                let child = StressProcedure(
                    index: groupIndex * 100 + childIndex, categories: categories,
                    finishing: Bool.random(using: &random) ? .inline : .later, tracker: tracker)
                children.append(child)
                return child
            }
            let group = GroupProcedure(children: members, maxConcurrentCount: Int.random(in: 1...4, using: &random))
            // Every third group is nested in another, built before the outer one is enqueued.
            groups.append(groupIndex % 3 == 0 ? GroupProcedure(group) : group)
        }
        queue.add(groups)
        try await allFinished(queue, within: .seconds(60))
        #expect(tracker.violations.withLock { $0 } == [])
        #expect(groups.allSatisfy { $0.outcome?.isSucceeded == true })
        #expect(children.allSatisfy { $0.finishes.value == 1 && $0.executions.value == 1 })
    }

    /// Cancelling groups while their children run and produce more children: every group
    /// finishes cancelled, exactly once, after all of its children.
    @Test func cancellingGroupsWhileChildrenRunAndProduce() async throws {
        /// Produces a sibling (which produces another, `depth` deep), then finishes later.
        final class Producing: Procedure, @unchecked Sendable {
            // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
            let depth: Int
            init(depth: Int) {
                self.depth = depth
                super.init()
            }
            override func execute() {
                if depth > 0 { produce(Producing(depth: depth - 1)) }
                DispatchQueue.global().async { self.finish() }
            }
        }
        let queue = makeQueue()
        let groups = (0..<100).map { _ in
            GroupProcedure(
                children: (0..<5).map { _ in Producing(depth: 3) }
                    + (0..<5).map { _ in
                        AsyncBlockProcedure { try await Task.sleep(for: .milliseconds(1)) }
                    })
        }
        let finishes = Locked(0)
        let childrenUnfinishedAtGroupFinish = Locked(0)
        for group in groups {
            group.addObserver(
                BlockObserver(didFinish: { group, _ in
                    finishes.mutate { $0 += 1 }
                    let unfinished = (group as! GroupProcedure).children.filter { !$0.isFinished }.count
                    childrenUnfinishedAtGroupFinish.mutate { $0 += unfinished }
                }))
        }
        queue.add(groups)
        DispatchQueue.concurrentPerform(iterations: groups.count) { index in
            groups[index].add(child: BlockProcedure {})
            groups[index].cancel()
            groups[index].add(child: BlockProcedure {})
        }
        try await allFinished(queue, within: .seconds(30))
        try await waitUntil("every did-finish delivered") { finishes.value == groups.count }
        #expect(groups.allSatisfy { $0.outcome?.isCancelled == true })
        #expect(childrenUnfinishedAtGroupFinish.value == 0)
    }
}
