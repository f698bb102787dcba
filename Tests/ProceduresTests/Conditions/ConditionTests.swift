import CohortTestSupport
import Testing

@testable import Procedures

@Suite("Conditions")
struct ConditionTests {
    /// A condition that returns a fixed result, counting its evaluations.
    final class FixedCondition: Condition, @unchecked Sendable {
        // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
        let result: ConditionResult
        let evaluations = Locked(0)
        init(_ result: ConditionResult, name: String? = nil) {
            self.result = result
            super.init()
            if let name { self.name = name }
        }
        override func evaluate(for procedure: Procedure) async -> ConditionResult {
            evaluations.mutate { $0 += 1 }
            return result
        }
    }

    static func satisfied() -> FixedCondition { FixedCondition(.satisfied, name: "satisfied") }
    static func ignored() -> FixedCondition { FixedCondition(.ignored, name: "ignored") }
    static func failing() -> FixedCondition { FixedCondition(.failed(TestError("condition")), name: "failing") }

    func run(_ conditions: [Condition]) async throws -> (ProcedureOutcome, TestProcedure) {
        let queue = makeQueue()
        let procedure = TestProcedure("guarded")
        for condition in conditions { procedure.addCondition(condition) }
        queue.add(procedure)
        return (try await finished(procedure), procedure)
    }

    @Test func satisfiedConditionLetsTheProcedureRun() async throws {
        let condition = Self.satisfied()
        let (outcome, procedure) = try await run([condition])
        #expect(outcome.isSucceeded)
        #expect(procedure.didExecute)
        #expect(condition.evaluations.value == 1)
    }

    @Test func failingConditionFinishesFailedWithoutExecuting() async throws {
        let (outcome, procedure) = try await run([Self.failing()])
        #expect(outcome.isFailed)
        #expect(outcome.error as? TestError == TestError("condition"))
        #expect(!procedure.didExecute)
    }

    @Test func ignoredConditionCancelsWithoutError() async throws {
        let (outcome, procedure) = try await run([Self.ignored()])
        guard case .cancelled(let reason) = outcome else {
            Issue.record("expected cancelled, got \(outcome)")
            return
        }
        #expect(reason == nil)
        #expect(!procedure.didExecute)
    }

    @Test func blockConditionReturningTrueSatisfies() async throws {
        let (outcome, procedure) = try await run([BlockCondition { true }])
        #expect(outcome.isSucceeded)
        #expect(procedure.didExecute)
    }

    @Test func blockConditionReturningFalseCancelsWithoutError() async throws {
        let (outcome, procedure) = try await run([BlockCondition { false }])
        #expect(outcome.isCancelled)
        #expect(outcome.error == nil)
        #expect(!procedure.didExecute)
    }

    @Test func blockConditionThrowingFailsWithTheError() async throws {
        let (outcome, procedure) = try await run([BlockCondition { throw TestError("thrown") }])
        #expect(outcome.isFailed)
        #expect(outcome.error as? TestError == TestError("thrown"))
        #expect(!procedure.didExecute)
    }

    @Test func negatedSatisfiedConditionFails() async throws {
        let (outcome, procedure) = try await run([NegatedCondition(Self.satisfied())])
        #expect(outcome.procedureError?.code == .conditionFailed)
        #expect(outcome.procedureError?.message.contains("satisfied") == true)
        #expect(!procedure.didExecute)
    }

    @Test func negatedIgnoredConditionSucceeds() async throws {
        let (outcome, procedure) = try await run([NegatedCondition(BlockCondition { false })])
        #expect(outcome.isSucceeded)
        #expect(procedure.didExecute)
    }

    @Test func negatedFailingConditionSucceeds() async throws {
        let (outcome, _) = try await run([NegatedCondition(Self.failing())])
        #expect(outcome.isSucceeded)
    }

    @Test func silentConditionEvaluatesWithoutProducingItsDependencies() async throws {
        let queue = makeQueue()
        let produced = TestProcedure("produced")
        let inner = FixedCondition(.satisfied)
        inner.produceDependency(produced)
        let silent = SilentCondition(inner)
        #expect(silent.producedDependencies.isEmpty)
        let procedure = TestProcedure("guarded")
        procedure.addCondition(silent)
        queue.add(procedure)
        #expect(try await finished(procedure).isSucceeded)
        #expect(inner.evaluations.value == 1)
        #expect(!produced.didExecute)
        #expect(produced.state == .pending)
    }

    @Test func silentConditionKeepsTheInnerResult() async throws {
        let (outcome, _) = try await run([SilentCondition(Self.failing())])
        #expect(outcome.isFailed)
    }

    struct Combination: Sendable, CustomTestStringConvertible {
        let kind: String
        let parts: [String]
        let expected: String
        var testDescription: String { "\(kind)(\(parts.joined(separator: ","))) → \(expected)" }
    }

    static let combinations: [Combination] = [
        .init(kind: "all", parts: ["satisfied", "satisfied"], expected: "succeeded"),
        .init(kind: "all", parts: ["satisfied", "failing"], expected: "failed"),
        .init(kind: "all", parts: ["satisfied", "ignored"], expected: "cancelled"),
        .init(kind: "all", parts: [], expected: "succeeded"),
        .init(kind: "any", parts: ["failing", "satisfied"], expected: "succeeded"),
        .init(kind: "any", parts: ["ignored", "satisfied"], expected: "succeeded"),
        .init(kind: "any", parts: ["failing", "ignored"], expected: "failed"),
        .init(kind: "any", parts: ["ignored", "ignored"], expected: "cancelled"),
        .init(kind: "any", parts: ["failing", "failing"], expected: "failed"),
    ]

    @Test(arguments: combinations)
    func allOfAndAnyOfCombineResults(_ combination: Combination) async throws {
        let parts: [Condition] = combination.parts.map {
            switch $0 {
            case "satisfied": Self.satisfied()
            case "ignored": Self.ignored()
            default: Self.failing()
            }
        }
        let condition: Condition = combination.kind == "all" ? AllOfCondition(parts) : AnyOfCondition(parts)
        let (outcome, procedure) = try await run([condition])
        switch combination.expected {
        case "succeeded":
            #expect(outcome.isSucceeded)
            #expect(procedure.didExecute)
        case "failed":
            #expect(outcome.isFailed)
            #expect(!procedure.didExecute)
        default:
            #expect(outcome.isCancelled)
            #expect(outcome.error == nil)
            #expect(!procedure.didExecute)
        }
    }

    @Test func severalConditionsMustAllBeSatisfied() async throws {
        let (outcome, procedure) = try await run([Self.satisfied(), Self.failing(), Self.satisfied()])
        #expect(outcome.isFailed)
        #expect(!procedure.didExecute)
    }

    /// A long-running condition is cancelled once another has decided the result.
    @Test func longRunningConditionIsCancelledWhenAnotherDecides() async throws {
        let sawCancellation = Locked(false)
        let slow = BlockCondition {
            do {
                try await Task.sleep(for: .seconds(60))
            } catch {
                sawCancellation.value = true
                throw error
            }
            return true
        }
        let start = ContinuousClock.now
        let (outcome, procedure) = try await run([slow, Self.failing()])
        #expect(outcome.isFailed)
        #expect(outcome.error as? TestError == TestError("condition"))
        #expect(sawCancellation.value)
        #expect(!procedure.didExecute)
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    @Test func anyOfCancelsTheRestOnceOneIsSatisfied() async throws {
        let sawCancellation = Locked(false)
        let slow = BlockCondition {
            do { try await Task.sleep(for: .seconds(60)) } catch {
                sawCancellation.value = true
                throw error
            }
            return false
        }
        let (outcome, _) = try await run([AnyOfCondition([slow, Self.satisfied()])])
        #expect(outcome.isSucceeded)
        #expect(sawCancellation.value)
    }

    @Test func conditionsAreEvaluatedAfterDependenciesFinish() async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("dependency", finishesItself: false)
        let dependencyStateAtEvaluation = Locked<Procedure.State?>(nil)
        let procedure = TestProcedure("guarded")
        procedure.addCondition(
            BlockCondition {
                dependencyStateAtEvaluation.value = dependency.state
                return true
            })
        procedure.addDependency(dependency)
        queue.add([procedure, dependency])
        try await waitUntil("dependency executes") { dependency.isExecuting }
        #expect(dependencyStateAtEvaluation.value == nil)
        dependency.complete()
        try await finished(procedure)
        #expect(dependencyStateAtEvaluation.value == .finished)
    }

    @Test func producedDependencyRunsBeforeTheConditionIsEvaluated() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let produced = TestProcedure("produced", events: events)
        let condition = BlockCondition {
            events.record("evaluate")
            return true
        }
        condition.produceDependency(produced)
        let procedure = TestProcedure("guarded", events: events)
        procedure.addCondition(condition)
        queue.add(procedure)
        try await finished(procedure)
        #expect(events.all == ["produced.execute", "evaluate", "guarded.execute"])
        #expect(produced.isFinished)
    }

    @Test func dependenciesRunBeforeTheDependenciesConditionsProduce() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let dependency = TestProcedure("dependency", events: events)
        let produced = TestProcedure("produced", events: events)
        let condition = Self.satisfied()
        condition.produceDependency(produced)
        let procedure = TestProcedure("guarded", events: events)
        procedure.addDependency(dependency)
        procedure.addCondition(condition)
        queue.add([procedure, dependency])
        try await finished(procedure)
        #expect(events.all == ["dependency.execute", "produced.execute", "guarded.execute"])
    }

    @Test func cancellingWhileConditionsEvaluateCancelsTheProducedDependencies() async throws {
        let queue = makeQueue()
        let produced = TestProcedure("produced", finishesItself: false)
        produced.isAutomaticFinishingDisabled = true
        let condition = Self.satisfied()
        condition.produceDependency(produced)
        let procedure = TestProcedure("guarded")
        procedure.addCondition(condition)
        queue.add(procedure)
        try await waitUntil("produced executes") { produced.isExecuting }
        #expect(procedure.state == .evaluatingConditions)
        procedure.cancel()
        #expect(produced.isCancelled)
        produced.complete()
        #expect(try await finished(procedure).isCancelled)
        #expect(condition.evaluations.value == 0)
        #expect(!procedure.didExecute)
    }

    @Test func conditionAddedAfterEnqueueIsIgnored() async throws {
        let queue = makeQueue()
        let procedure = TestProcedure("p", finishesItself: false)
        queue.add(procedure)
        try await waitUntil("executing") { procedure.isExecuting }
        procedure.addCondition(Self.failing())
        #expect(procedure.conditions.isEmpty)
        procedure.complete()
        #expect(try await finished(procedure).isSucceeded)
    }

    @Test func noFailedDependenciesConditionFailsWhenADependencyFailed() async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("broken", error: TestError())
        let procedure = TestProcedure("guarded")
        procedure.addDependency(dependency)
        procedure.addCondition(NoFailedDependenciesCondition())
        queue.add([dependency, procedure])
        let outcome = try await finished(procedure)
        #expect(outcome.procedureError?.code == .dependencyFailed)
        #expect(outcome.procedureError?.message.contains("broken") == true)
        #expect(!procedure.didExecute)
    }

    @Test func noFailedDependenciesConditionFailsWhenADependencyGroupHadAFailedChild() async throws {
        let queue = makeQueue()
        let group = GroupProcedure(TestProcedure("ok"), TestProcedure("bad", error: TestError()))
        group.name = "dependency-group"
        let procedure = TestProcedure("guarded")
        procedure.addDependency(group)
        procedure.addCondition(NoFailedDependenciesCondition())
        queue.add([group, procedure])
        let outcome = try await finished(procedure)
        #expect(outcome.procedureError?.code == .dependencyFailed)
        #expect(outcome.procedureError?.message.contains("dependency-group") == true)
        #expect(!procedure.didExecute)
    }

    @Test(arguments: [false, true])
    func noFailedDependenciesConditionWithACancelledDependency(ignoringCancellations: Bool) async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("cancelled")
        dependency.cancel()
        let procedure = TestProcedure("guarded")
        procedure.addDependency(dependency)
        procedure.addCondition(NoFailedDependenciesCondition(ignoringCancellations: ignoringCancellations))
        queue.add([dependency, procedure])
        let outcome = try await finished(procedure)
        if ignoringCancellations {
            #expect(outcome.isCancelled)
            #expect(outcome.error == nil)
        } else {
            #expect(outcome.procedureError?.code == .dependencyCancelled)
        }
        #expect(!procedure.didExecute)
    }

    @Test func noFailedDependenciesConditionIsSatisfiedWhenAllSucceeded() async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("fine")
        let procedure = TestProcedure("guarded")
        procedure.addDependency(dependency)
        procedure.addCondition(NoFailedDependenciesCondition())
        queue.add([dependency, procedure])
        #expect(try await finished(procedure).isSucceeded)
    }

    @Test func conditionNamesDescribeWhatTheyWrap() {
        let inner = BlockCondition { true }
        inner.name = "inner"
        #expect(NegatedCondition(inner).name == "Not<inner>")
        #expect(SilentCondition(inner).name == "Silent<inner>")
        #expect(MutuallyExclusive(category: "db").name == "MutuallyExclusive<db>")
        #expect(MutuallyExclusive(categories: ["b", "a"]).mutuallyExclusiveCategories == ["a", "b"])
        struct Printer {}
        #expect(MutuallyExclusive(Printer.self).mutuallyExclusiveCategories == ["Printer"])
    }
}
