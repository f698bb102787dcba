import CohortTestSupport
import Testing

@testable import Procedures

@Suite("Dependencies and requirements")
struct DependencyTests {
    @Test func dependentStartsOnlyAfterItsDependencyFinished() async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("dependency", finishesItself: false)
        let dependent = TestProcedure("dependent")
        dependent.addDependency(dependency)
        queue.add([dependent, dependency])
        try await waitUntil("dependency executes") { dependency.isExecuting }
        #expect(dependent.state == .pending)
        #expect(dependent.dependencies == [dependency])
        dependency.complete()
        #expect(try await finished(dependent).isSucceeded)
        #expect(dependent.didExecute)
    }

    @Test func dependencyOnAFinishedProcedureIsMetAtOnce() async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("dependency")
        queue.add(dependency)
        try await finished(dependency)
        let dependent = TestProcedure("dependent")
        dependent.addDependency(dependency)
        queue.add(dependent)
        #expect(try await finished(dependent).isSucceeded)
    }

    @Test func dependencyOnAProcedureOfAnotherQueueIsHonoured() async throws {
        let queueA = makeQueue("a")
        let queueB = makeQueue("b")
        let dependency = TestProcedure("dependency", finishesItself: false)
        let dependent = TestProcedure("dependent")
        dependent.addDependency(dependency)
        queueB.add(dependent)
        queueA.add(dependency)
        try await waitUntil("dependency executes") { dependency.isExecuting }
        #expect(!dependent.didExecute)
        dependency.complete()
        #expect(try await finished(dependent).isSucceeded)
    }

    @Test func dependencyAddedAfterEnqueueIsIgnored() async throws {
        let queue = makeQueue()
        let dependent = TestProcedure("dependent", finishesItself: false)
        queue.add(dependent)
        try await waitUntil("dependent executes") { dependent.isExecuting }
        let late = TestProcedure("late")
        dependent.addDependency(late)
        #expect(dependent.dependencies.isEmpty)
        dependent.complete()
        try await finished(dependent)
    }

    /// The documented default: dependents run whatever the outcome of their dependencies.
    @Test(arguments: ["failed", "cancelled"])
    func byDefaultDependentsRunWhateverTheOutcome(outcome: String) async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("dependency", error: TestError())
        if outcome == "cancelled" { dependency.cancel(with: TestError()) }
        let dependent = TestProcedure("dependent")
        dependent.addDependency(dependency)
        queue.add([dependency, dependent])
        #expect(try await finished(dependent).isSucceeded)
        #expect(dependent.didExecute)
    }

    enum DependencyOutcome: String, CaseIterable, Sendable {
        case succeeded, failed, cancelled, cancelledWithError
    }

    struct RequirementCase: Sendable, CustomTestStringConvertible {
        let requirements: DependencyRequirements
        let dependency: DependencyOutcome
        /// "runs", "fails" (with `dependencyFailed`) or "cancels" (with `dependencyCancelled`).
        let expected: String
        var testDescription: String { "\(requirements.rawValue) \(dependency) → \(expected)" }
    }

    static let requirementCases: [RequirementCase] = [
        .init(requirements: .noFailed, dependency: .succeeded, expected: "runs"),
        .init(requirements: .noFailed, dependency: .failed, expected: "fails"),
        .init(requirements: .noFailed, dependency: .cancelled, expected: "runs"),
        .init(requirements: .noFailed, dependency: .cancelledWithError, expected: "fails"),
        .init(requirements: .noCancelled, dependency: .failed, expected: "runs"),
        .init(requirements: .noCancelled, dependency: .cancelled, expected: "cancels"),
        .init(requirements: .noCancelled, dependency: .cancelledWithError, expected: "cancels"),
        .init(requirements: [.noFailed, .noCancelled], dependency: .failed, expected: "fails"),
        .init(requirements: [.noFailed, .noCancelled], dependency: .cancelled, expected: "cancels"),
        .init(requirements: [.noFailed, .ignoreFailedIfCancelled], dependency: .cancelledWithError, expected: "runs"),
        .init(requirements: [.noFailed, .ignoreFailedIfCancelled], dependency: .failed, expected: "fails"),
        .init(
            requirements: [.noFailed, .noCancelled, .ignoreFailedIfCancelled], dependency: .cancelledWithError,
            expected: "cancels"),
    ]

    @Test(arguments: requirementCases)
    func dependencyRequirementsDecideWhetherTheDependentRuns(_ testCase: RequirementCase) async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("dependency", error: testCase.dependency == .failed ? TestError() : nil)
        switch testCase.dependency {
        case .cancelled: dependency.cancel()
        case .cancelledWithError: dependency.cancel(with: TestError("reason"))
        default: break
        }
        let dependent = TestProcedure("dependent")
        dependent.dependencyRequirements = testCase.requirements
        dependent.addDependency(dependency)
        queue.add([dependency, dependent])
        let outcome = try await finished(dependent)
        switch testCase.expected {
        case "runs":
            #expect(outcome.isSucceeded)
            #expect(dependent.didExecute)
        case "fails":
            #expect(outcome.isFailed)
            #expect(outcome.procedureError?.code == .dependencyFailed)
            #expect(outcome.procedureError?.message.contains("dependency") == true)
            #expect(!dependent.didExecute)
        default:
            #expect(outcome.isCancelled)
            #expect(outcome.procedureError?.code == .dependencyCancelled)
            #expect(!dependent.didExecute)
        }
    }

    @Test func failedDependencyErrorNamesTheDependency() async throws {
        let queue = makeQueue()
        let dependency = TestProcedure("fetch-config", error: TestError())
        let dependent = TestProcedure("apply-config")
        dependent.dependencyRequirements = .noFailed
        dependent.addDependency(dependency)
        queue.add([dependency, dependent])
        let outcome = try await finished(dependent)
        #expect(outcome.procedureError?.message.contains("fetch-config") == true)
    }

    @Test func chainOfDependenciesRunsInOrder() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let procedures = (0..<8).map { TestProcedure("p\($0)", events: events) }
        for index in 1..<procedures.count { procedures[index].addDependency(procedures[index - 1]) }
        queue.add(procedures.reversed())
        try await allFinished(queue)
        #expect(events.all == (0..<8).map { "p\($0).execute" })
    }

    @Test func dependentWaitsForEveryDependency() async throws {
        let queue = makeQueue()
        let dependencies = (0..<4).map { TestProcedure("d\($0)", finishesItself: false) }
        let dependent = TestProcedure("dependent")
        dependent.addDependencies(dependencies)
        queue.add(dependencies + [dependent])
        try await waitUntil("dependencies execute") { dependencies.allSatisfy(\.isExecuting) }
        for dependency in dependencies.dropLast() { dependency.complete() }
        try await finished(dependencies[2])
        #expect(dependent.state == .pending)
        dependencies[3].complete()
        #expect(try await finished(dependent).isSucceeded)
    }
}
