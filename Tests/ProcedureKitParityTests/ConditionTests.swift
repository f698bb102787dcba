import Dispatch
import Testing

@testable import Procedures

/// A procedure's outcome under `conditions`, as ProcedureKit's `procedure.addCondition(…); wait(for: procedure)`.
func outcome(with conditions: Condition..., within timeout: Duration = Deadline.event) async throws -> (
    ProcedureOutcome, TestProcedure
) {
    let procedure = TestProcedure()
    for condition in conditions { procedure.addCondition(condition) }
    let outcome = try await run(procedure, within: timeout)
    return (outcome, procedure)
}

/// ProcedureKit's `PKAssertProcedureFinished`, `…CancelledWithError`, `…Cancelled`, in
/// Cohort's terms: a failed condition finishes the procedure failed, not cancelled with the
/// error (see HANDBOOK "Differences from ProcedureKit"); an ignored one cancels it without an error.
func expectSucceeded(_ result: (ProcedureOutcome, TestProcedure), sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(result.0.isSucceeded, "\(result.0)", sourceLocation: sourceLocation)
    #expect(result.1.didExecute, sourceLocation: sourceLocation)
}

func expectFailedWithFalseCondition(
    _ result: (ProcedureOutcome, TestProcedure), sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(result.0.isFailed && result.0.error is FalseConditionError, "\(result.0)", sourceLocation: sourceLocation)
    #expect(!result.1.didExecute, sourceLocation: sourceLocation)
}

func expectCancelledWithoutError(
    _ result: (ProcedureOutcome, TestProcedure), sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(result.0.isCancelled && result.0.error == nil, "\(result.0)", sourceLocation: sourceLocation)
    #expect(!result.1.didExecute, sourceLocation: sourceLocation)
}

/// ProcedureKit's `Tests/ProcedureKitTests/ConditionTests.swift`.
@Suite("ConditionTests")
struct ConditionTests {
    // MARK: Condition properties

    @Test func test__condition__produce_dependency() {
        let condition = TestCondition.satisfied()
        let dependency = TestProcedure()
        condition.produceDependency(dependency)
        #expect(condition.producedDependencies.count == 1)
        #expect(condition.producedDependencies.first === dependency)
    }

    @Test func test__condition__name() {
        let condition = TestCondition.satisfied()
        condition.name = "Test Name"
        #expect(condition.name == "Test Name")
    }

    @Test func test__condition__mutually_exclusive_categories() {
        let condition = TestCondition.satisfied()
        #expect(condition.mutuallyExclusiveCategories.isEmpty)
        condition.mutuallyExclusiveCategories.insert("Test Category")
        #expect(condition.mutuallyExclusiveCategories == ["Test Category"])
        condition.mutuallyExclusiveCategories.insert("Test Category B")
        #expect(condition.mutuallyExclusiveCategories == ["Test Category", "Test Category B"])
    }

    /// Cohort's conditions are compared by identity (`===`); they are not `Equatable`.
    @Test func test__condition__equality() {
        let condition1 = TestCondition.satisfied()
        let condition1alias = condition1
        let condition2 = TestCondition.satisfied()
        #expect(condition1 === condition1alias)
        #expect(condition1 !== condition2)
    }

    // MARK: Condition unit tests

    @Test func test__true_condition_is_satisfied() async {
        guard case .satisfied = await TestCondition.satisfied().evaluate(for: TestProcedure()) else {
            Issue.record("TrueCondition did not evaluate as satisfied")
            return
        }
    }

    @Test func test__false_condition_is_failed() async {
        guard case .failed(let error) = await TestCondition.failing().evaluate(for: TestProcedure()) else {
            Issue.record("FalseCondition did not evaluate as failed")
            return
        }
        #expect(error is FalseConditionError)
    }

    // MARK: Single and multiple attachment

    @Test func test__single_condition_which_is_satisfied() async throws {
        expectSucceeded(try await outcome(with: TestCondition.satisfied()))
    }

    @Test func test__single_condition_which_is_failed() async throws {
        expectFailedWithFalseCondition(try await outcome(with: TestCondition.failing()))
    }

    @Test func test__multiple_conditions_where_all_are_satisfied() async throws {
        expectSucceeded(
            try await outcome(with: TestCondition.satisfied(), TestCondition.satisfied(), TestCondition.satisfied()))
    }

    @Test func test__multiple_conditions_where_all_fail() async throws {
        expectFailedWithFalseCondition(
            try await outcome(with: TestCondition.failing(), TestCondition.failing(), TestCondition.failing()))
    }

    @Test func test__multiple_conditions_where_one_succeeds() async throws {
        expectFailedWithFalseCondition(
            try await outcome(with: TestCondition.satisfied(), TestCondition.failing(), TestCondition.failing()))
    }

    @Test func test__multiple_conditions_where_one_fails() async throws {
        expectFailedWithFalseCondition(
            try await outcome(with: TestCondition.satisfied(), TestCondition.satisfied(), TestCondition.failing()))
    }

    // MARK: Shortcut processing

    /// Never finishes by itself; cancelling it finishes it (automatic finishing).
    final class LongRunningProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only a `let` Signal (Sendable).
        let started = Signal()
        override func execute() { started.fire() }
    }

    /// Defect 1: a condition that fails at once decides, while another condition's produced
    /// dependency still runs; that dependency is then cancelled. (It used to hang: every
    /// produced dependency was awaited before any condition was evaluated.)
    @Test
    func test__long_running_condition_with_dependency_is_cancelled_if_a_result_is_determined_by_another_condition()
        async throws
    {
        let longRunningCondition = TestCondition.satisfied("long running")
        let longRunningDependency = LongRunningProcedure()
        longRunningCondition.produceDependency(longRunningDependency)
        let failSecondCondition = TestCondition(name: "fails once the dependency runs") {
            // Fail only once the long-running dependency is known to run, as ProcedureKit does.
            try? await longRunningDependency.started.wait("the long-running dependency starting")
            return .failed(FalseConditionError())
        }
        let result = try await outcome(with: longRunningCondition, failSecondCondition, within: .seconds(10))
        expectFailedWithFalseCondition(result)
        #expect(try await finished(longRunningDependency, within: .seconds(10)).isCancelled)
    }

    // MARK: Dependencies and conditions

    @Test func test__dependencies_execute_before_condition_dependencies() async throws {
        let dependency1 = TestProcedure(name: "Dependency 1")
        let dependency2 = TestProcedure(name: "Dependency 2")
        let procedure = TestProcedure()
        procedure.addDependencies([dependency1, dependency2])
        let seenUnfinished = Locked(0)
        let conditionDependency1 = BlockProcedure {
            if !dependency1.isFinished || !dependency2.isFinished { seenUnfinished.mutate { $0 += 1 } }
        }
        let condition1 = TestCondition.satisfied("Condition 1")
        condition1.produceDependency(conditionDependency1)
        let conditionDependency2 = BlockProcedure {
            if !dependency1.isFinished || !dependency2.isFinished { seenUnfinished.mutate { $0 += 1 } }
        }
        let condition2 = TestCondition.satisfied("Condition 2")
        condition2.produceDependency(conditionDependency2)
        procedure.addCondition(condition1)
        procedure.addCondition(condition2)
        #expect(try await run(dependency1, dependency2, procedure).isSucceeded)
        #expect(conditionDependency1.isFinished && conditionDependency2.isFinished)
        #expect(seenUnfinished.value == 0)
    }

    @Test func test__procedure_dependencies_only_contain_direct_dependencies() async throws {
        let dependency1 = TestProcedure()
        let dependency2 = TestProcedure()
        let condition1 = TestCondition.satisfied("Condition 1")
        condition1.produceDependency(TestProcedure())
        let condition2 = TestCondition.satisfied("Condition 2")
        condition2.produceDependency(TestProcedure())
        let procedure = TestProcedure()
        procedure.addDependency(dependency1)
        procedure.addDependency(dependency2)
        procedure.addCondition(condition1)
        procedure.addCondition(condition2)
        try await run(dependency1, dependency2, procedure)
        #expect(procedure.dependencies.count == 2)
    }

    // MARK: Ignored conditions (Cohort: a condition that answers `.ignored`)

    @Test func test__ignored_failing_condition_does_not_result_in_failure() async throws {
        expectCancelledWithoutError(try await outcome(with: TestCondition.ignored()))
        expectFailedWithFalseCondition(try await outcome(with: TestCondition.failing()))
    }

    /// Cohort: an ignored condition cancels the procedure whatever the other conditions say
    /// (ProcedureKit's IgnoredCondition of a failure counts as "not satisfied, no error").
    @Test func test__ignored_failing_condition_plus_successful_condition_succeeds() async throws {
        expectCancelledWithoutError(try await outcome(with: TestCondition.ignored(), TestCondition.satisfied()))
    }

    // MARK: Compound conditions

    /// Defect 3: a compound condition's own produced dependency is kept (it was dropped,
    /// only its conditions' were). Cohort's `producedDependencies` of a compound lists its
    /// own and then its conditions'.
    @Test func test__compound_condition_produced_dependencies() async throws {
        let conditions: [Condition] = (0..<3).map {
            let condition = TestCondition.satisfied("Condition \($0)")
            condition.produceDependency(TestProcedure())
            return condition
        }
        let compoundCondition = AllOfCondition(conditions)
        #expect(conditions.flatMap(\.producedDependencies).count == 3)
        #expect(compoundCondition.producedDependencies.count == 3)
        let producedDependency = TestProcedure(name: "compound's own")
        compoundCondition.produceDependency(producedDependency)
        #expect(compoundCondition.producedDependencies.count == 4)
        #expect(compoundCondition.producedDependencies.first === producedDependency)
        // And it runs before the procedure, like any produced dependency.
        expectSucceeded(try await outcome(with: compoundCondition))
        #expect(producedDependency.didExecute)
    }

    @Test func test__compound_condition_mutually_exclusive_categories() {
        let conditions: [Condition] = (0..<3).map {
            let condition = TestCondition.satisfied("Condition \($0)")
            condition.mutuallyExclusiveCategories = ["test"]
            return condition
        }
        #expect(AllOfCondition(conditions).mutuallyExclusiveCategories == ["test"])
        let conditions2: [Condition] = (0..<3).map {
            let condition = TestCondition.satisfied("Condition \($0)")
            condition.mutuallyExclusiveCategories = ["test\($0)"]
            return condition
        }
        #expect(AllOfCondition(conditions2).mutuallyExclusiveCategories == ["test0", "test1", "test2"])
    }

    /// Defect 4: the same instance listed three times is evaluated once.
    @Test func test__compound_condition_and_predicate_filters_duplicates() async throws {
        let evaluationCount = Locked(0)
        let condition1 = TestCondition {
            evaluationCount.mutate { $0 += 1 }
            return .satisfied
        }
        expectSucceeded(try await outcome(with: AllOfCondition([condition1, condition1, condition1])))
        #expect(evaluationCount.value == 1)
    }

    /// Defect 4: the same instance listed three times is evaluated once.
    @Test func test__compound_condition_or_predicate_filters_duplicates() async throws {
        let evaluationCount = Locked(0)
        let condition1 = TestCondition {
            evaluationCount.mutate { $0 += 1 }
            return .ignored
        }
        expectCancelledWithoutError(try await outcome(with: AnyOfCondition([condition1, condition1, condition1])))
        #expect(evaluationCount.value == 1)
    }

    // MARK: Compound conditions: and

    /// Cohort: all of no conditions is satisfied (ProcedureKit cancels).
    @Test func test__and_condition__with_no_conditions_cancels_without_errors() async throws {
        expectSucceeded(try await outcome(with: AllOfCondition([])))
    }

    @Test func test__and_condition__with_single_successful_condition__succeeds() async throws {
        expectSucceeded(try await outcome(with: AllOfCondition([TestCondition.satisfied()])))
    }

    @Test func test__and_condition__with_single_failing_condition__fails() async throws {
        expectFailedWithFalseCondition(try await outcome(with: AllOfCondition([TestCondition.failing()])))
    }

    @Test func test__and_condition__with_single_ignored_condition__does_not_fail() async throws {
        expectCancelledWithoutError(try await outcome(with: AllOfCondition([TestCondition.ignored()])))
    }

    @Test func test__and_condition__with_two_successful_conditions__succeeds() async throws {
        expectSucceeded(
            try await outcome(with: AllOfCondition([TestCondition.satisfied(), TestCondition.satisfied()])))
    }

    @Test func test__and_condition__with_successful_and_failing_conditions__fails() async throws {
        expectFailedWithFalseCondition(
            try await outcome(with: AllOfCondition([TestCondition.satisfied(), TestCondition.failing()])))
    }

    @Test func test__and_condition__with_failing_and_successful_conditions__fails() async throws {
        expectFailedWithFalseCondition(
            try await outcome(with: AllOfCondition([TestCondition.failing(), TestCondition.satisfied()])))
    }

    /// Cohort: an ignored condition cancels without an error.
    @Test func test__and_condition__with_successful_and_ignored_condition__does_not_fail() async throws {
        expectCancelledWithoutError(
            try await outcome(with: AllOfCondition([TestCondition.ignored(), TestCondition.satisfied()])))
    }

    /// Defect 2: failed wins over ignored whatever the order of arrival; here the ignored
    /// answer comes first (it used to decide, so the procedure ended cancelled without error).
    @Test(arguments: [true, false])
    func test__and_condition__with_failing_and_ignored_condition__fails(ignoredAnswersFirst: Bool) async throws {
        let ignoredAnswered = Signal()
        let ignored = TestCondition(name: "ignored") {
            defer { ignoredAnswered.fire() }
            return .ignored
        }
        let failing = TestCondition(name: "failing") {
            if ignoredAnswersFirst {
                try? await ignoredAnswered.wait("the ignored condition answering")
                for _ in 0..<100 { await Task.yield() }
            }
            return .failed(FalseConditionError())
        }
        expectFailedWithFalseCondition(try await outcome(with: AllOfCondition([ignored, failing])))
        // Listed directly on the procedure, the conditions combine the same way.
        let ignoredAnsweredAgain = Signal()
        let ignoredAgain = TestCondition(name: "ignored") {
            defer { ignoredAnsweredAgain.fire() }
            return .ignored
        }
        let failingAgain = TestCondition(name: "failing") {
            if ignoredAnswersFirst {
                try? await ignoredAnsweredAgain.wait("the ignored condition answering")
                for _ in 0..<100 { await Task.yield() }
            }
            return .failed(FalseConditionError())
        }
        expectFailedWithFalseCondition(try await outcome(with: ignoredAgain, failingAgain))
    }

    @Test func test__and_condition__with_two_ignored_conditions__does_not_fail() async throws {
        expectCancelledWithoutError(
            try await outcome(with: AllOfCondition([TestCondition.ignored(), TestCondition.ignored()])))
    }

    @Test func test__nested_successful_and_conditions() async throws {
        expectSucceeded(
            try await outcome(
                with: AllOfCondition([
                    AllOfCondition([TestCondition.satisfied(), TestCondition.satisfied()]),
                    AllOfCondition([TestCondition.satisfied(), TestCondition.satisfied()]),
                ])))
    }

    @Test func test__nested_failing_and_conditions() async throws {
        expectFailedWithFalseCondition(
            try await outcome(
                with: AllOfCondition([
                    AllOfCondition([TestCondition.satisfied(), TestCondition.satisfied()]),
                    AllOfCondition([TestCondition.satisfied(), TestCondition.failing()]),
                ])))
    }

    // MARK: Compound conditions: or

    @Test func test__or_condition__with_no_conditions_cancels_without_errors() async throws {
        expectCancelledWithoutError(try await outcome(with: AnyOfCondition([])))
    }

    @Test func test__or_condition__with_single_successful_condition__succeeds() async throws {
        expectSucceeded(try await outcome(with: AnyOfCondition([TestCondition.satisfied()])))
    }

    @Test func test__or_condition__with_single_failing_condition__fails() async throws {
        expectFailedWithFalseCondition(try await outcome(with: AnyOfCondition([TestCondition.failing()])))
    }

    @Test func test__or_condition__with_single_ignored_condition__does_not_fail() async throws {
        expectCancelledWithoutError(try await outcome(with: AnyOfCondition([TestCondition.ignored()])))
    }

    @Test func test__or_condition__with_two_successful_conditions__succeeds() async throws {
        expectSucceeded(
            try await outcome(with: AnyOfCondition([TestCondition.satisfied(), TestCondition.satisfied()])))
    }

    @Test func test__or_condition__with_successful_and_failing_conditions__succeeds() async throws {
        expectSucceeded(try await outcome(with: AnyOfCondition([TestCondition.satisfied(), TestCondition.failing()])))
    }

    @Test func test__or_condition__with_failing_and_successful_conditions__succeeds() async throws {
        expectSucceeded(try await outcome(with: AnyOfCondition([TestCondition.failing(), TestCondition.satisfied()])))
    }

    @Test func test__or_condition__with_successful_and_ignored_condition__succeeds() async throws {
        expectSucceeded(try await outcome(with: AnyOfCondition([TestCondition.ignored(), TestCondition.satisfied()])))
    }

    @Test func test__or_condition__with_failing_and_ignored_condition__fails() async throws {
        expectFailedWithFalseCondition(
            try await outcome(with: AnyOfCondition([TestCondition.ignored(), TestCondition.failing()])))
    }

    @Test func test__or_condition__with_two_ignored_conditions__does_not_fail() async throws {
        expectCancelledWithoutError(
            try await outcome(with: AnyOfCondition([TestCondition.ignored(), TestCondition.ignored()])))
    }

    @Test func test__nested_successful_or_conditions() async throws {
        expectSucceeded(
            try await outcome(
                with: AnyOfCondition([
                    AnyOfCondition([TestCondition.failing(), TestCondition.satisfied()]),
                    AnyOfCondition([TestCondition.failing(), TestCondition.failing()]),
                ])))
    }

    @Test func test__nested_failing_or_conditions() async throws {
        expectFailedWithFalseCondition(
            try await outcome(
                with: AnyOfCondition([
                    AnyOfCondition([TestCondition.failing(), TestCondition.failing()]),
                    AnyOfCondition([TestCondition.failing(), TestCondition.failing()]),
                ])))
    }

    // MARK: Cancelling while conditions evaluate

    @Test func test__procedure_cancelled_while_conditions_are_being_evaluated_finishes_before_blocked_condition()
        async throws
    {
        let release = Signal()
        let evaluating = Signal()
        let condition = TestCondition {
            evaluating.fire()
            // Blocked until the test releases it (after the procedure has finished).
            try? await release.wait("the test releasing the condition")
            return .satisfied
        }
        let procedure = TestProcedure()
        procedure.addCondition(condition)
        let queue = makeQueue()
        queue.add(procedure)
        try await evaluating.wait("the condition being evaluated")
        #expect(!procedure.isFinished)
        procedure.cancel()
        let outcome = try await finished(procedure)
        #expect(outcome.isCancelled)
        #expect(!procedure.didExecute)
        release.fire()
    }

    @Test func test__procedure_cancelled_while_conditions_are_being_evaluated_cancels_condition_produced_dependencies()
        async throws
    {
        let procedure = TestProcedure()
        let conditionProducedDependency = LongRunningProcedure()
        let cancelsProcedureCondition = TestCondition {
            try? await conditionProducedDependency.started.wait("the produced dependency starting")
            procedure.cancel()
            return .satisfied
        }
        let dependentCondition = TestCondition.satisfied()
        dependentCondition.produceDependency(conditionProducedDependency)
        procedure.addCondition(
            AllOfCondition([TestCondition.satisfied(), dependentCondition, cancelsProcedureCondition]))
        let outcome = try await run(procedure)
        #expect(outcome.isCancelled)
        #expect(try await finished(conditionProducedDependency).isCancelled)
    }

    @Test func test__conditions_are_not_evaluated_while_associated_procedurequeue_is_suspended() async throws {
        let queue = makeQueue()
        queue.isSuspended = true
        let evaluated = Locked(false)
        let procedure = TestProcedure()
        procedure.addCondition(
            TestCondition {
                evaluated.value = true
                return .satisfied
            })
        queue.add(procedure)
        // Nothing can happen while the queue is suspended: an idle wait is what is checked.
        try await Task.sleep(for: .milliseconds(200))
        #expect(!evaluated.value, "the condition was evaluated while the queue was suspended")
        queue.isSuspended = false
        #expect(try await finished(procedure).isSucceeded)
        #expect(evaluated.value)
    }

    @Test func test__conditions_on_added_children_are_not_evaluated_before_parent_group_executes() async throws {
        let evaluated = Locked(false)
        let procedure = TestProcedure()
        procedure.addCondition(
            TestCondition {
                evaluated.value = true
                return .satisfied
            })
        let group = GroupProcedure(children: [])
        group.add(child: procedure)
        try await Task.sleep(for: .milliseconds(200))
        #expect(!evaluated.value, "the condition was evaluated before the group executed")
        #expect(try await run(group).isSucceeded)
        #expect(procedure.isFinished)
        #expect(evaluated.value)
    }
}

/// ProcedureKit's `ConditionTests` for a condition's own (not produced) dependencies, its
/// dependency requirements, and `TrueCondition`, `FalseCondition` and `IgnoredCondition`.
@Suite("ConditionTests: dependencies, requirements, ignored")
struct ConditionDependencyTests {
    @Test func test__condition__add_dependency() {
        let condition = TrueCondition()
        let dependency = TestProcedure()
        condition.addDependency(dependency)
        #expect(condition.dependencies == [dependency])
        #expect(condition.producedDependencies.isEmpty)
    }

    @Test func test__condition__remove_dependency() {
        let condition = TrueCondition()
        let dependency = TestProcedure()
        let producedDependency = TestProcedure()
        condition.addDependency(dependency)
        condition.produceDependency(producedDependency)
        #expect(condition.dependencies == [dependency])
        #expect(condition.producedDependencies == [producedDependency])
        condition.removeDependency(producedDependency)
        #expect(condition.producedDependencies.isEmpty, "produced dependency not removed")
        condition.removeDependency(dependency)
        #expect(condition.dependencies.isEmpty, "dependency not removed")
    }

    @Test func test__compound_condition_added_dependencies() {
        let conditions: [Condition] = (0..<3).map {
            let condition = TrueCondition(name: "Condition \($0)")
            condition.addDependency(TestProcedure())
            return condition
        }
        let compound = AllOfCondition(conditions)
        #expect(conditions.flatMap(\.dependencies).count == 3)
        #expect(compound.dependencies.isEmpty)
        let dependency = TestProcedure()
        compound.addDependency(dependency)
        #expect(compound.dependencies == [dependency])
    }

    /// A condition waits for its own dependency, which something else runs.
    @Test func test__target_and_condition_have_same_dependency() async throws {
        let dependency = TestProcedure(name: "Dependency")
        let condition = TrueCondition(name: "Condition")
        condition.addDependency(dependency)
        let procedure = TestProcedure()
        procedure.addCondition(condition)
        procedure.addDependency(dependency)
        try await run(dependency, procedure)
        #expect(dependency.didExecute && procedure.didExecute)
        #expect(procedure.outcome?.isSucceeded == true)
    }

    /// ProcedureKit's OPR-386.
    @Test func test__procedure_is_direct_dependency_and_indirect_of_different_procedures() async throws {
        let dependency = TestProcedure(name: "Dependency")
        let condition1 = TrueCondition(name: "Condition 1")
        condition1.addDependency(dependency)
        let procedure1 = TestProcedure(name: "Procedure 1")
        procedure1.addCondition(condition1)
        procedure1.addDependency(dependency)
        let condition2 = TrueCondition(name: "Condition 2")
        condition2.addDependency(dependency)
        let procedure2 = TestProcedure(name: "Procedure 2")
        procedure2.addCondition(condition2)
        procedure2.addDependency(procedure1)
        try await run(procedure1, dependency, procedure2)
        for procedure in [dependency, procedure1, procedure2] { #expect(procedure.outcome?.isSucceeded == true) }
    }

    /// A condition's (not produced) dependency is waited for before it is evaluated, even
    /// when nothing else makes the procedure wait for it.
    @Test func condition_waits_for_its_added_dependency() async throws {
        let release = Signal()
        let dependency = AsyncBlockProcedure { try? await release.wait("the test releasing the dependency") }
        let evaluated = Signal()
        let condition = TestCondition {
            evaluated.fire()
            return .satisfied
        }
        condition.addDependency(dependency)
        let procedure = TestProcedure()
        procedure.addCondition(condition)
        let queue = makeQueue()
        queue.add([procedure, dependency])
        try await waitUntil("the dependency executing") { dependency.isExecuting }
        #expect(!evaluated.isFired && !procedure.didExecute)
        release.fire()
        try await finished(procedure)
        #expect(evaluated.isFired && procedure.didExecute)
    }

    /// Whether `condition`'s evaluate ran, and the procedure's outcome, for requirements on
    /// its produced dependency (ProcedureKit's `conditionDependencyRequirementTest`).
    private func requirementTest(_ requirements: DependencyRequirements, dependency: Procedure) async throws -> (
        evaluated: Bool, outcome: ProcedureOutcome
    ) {
        let evaluated = Locked(false)
        let condition = TestCondition {
            evaluated.value = true
            return .satisfied
        }
        condition.produceDependency(dependency)
        condition.dependencyRequirements = requirements
        let procedure = TestProcedure()
        procedure.addCondition(condition)
        let outcome = try await run(procedure)
        return (evaluated.value, outcome)
    }

    @Test func test__condition_dependency_requirement_none_still_evaluates_when_dependency_fails() async throws {
        let result = try await requirementTest([], dependency: TestProcedure(error: TestError()))
        #expect(result.evaluated)
        #expect(result.outcome.isSucceeded)
    }

    /// ProcedureKit cancels with `ConditionDependenciesFailed`; Cohort fails with `dependencyFailed`.
    @Test func test__condition_dependency_requirement_noFailed_skips_evaluate_when_dependency_fails() async throws {
        let result = try await requirementTest(.noFailed, dependency: TestProcedure(error: TestError()))
        #expect(!result.evaluated)
        #expect((result.outcome.error as? ProcedureError)?.code == .dependencyFailed, "\(result.outcome)")
    }

    @Test func test__condition_dependency_requirement_noFailed_ignores_dependency_cancelled_without_errors()
        async throws
    {
        let dependency = TestProcedure()
        dependency.cancel()
        let result = try await requirementTest(.noFailed, dependency: dependency)
        #expect(result.evaluated)
        #expect(result.outcome.isSucceeded)
    }

    @Test func test__condition_dependency_requirement_noFailed_skips_evaluate_when_dependency_iscancelled_with_errors()
        async throws
    {
        let dependency = TestProcedure()
        dependency.cancel(with: TestError())
        let result = try await requirementTest(.noFailed, dependency: dependency)
        #expect(!result.evaluated)
        #expect((result.outcome.error as? ProcedureError)?.code == .dependencyFailed, "\(result.outcome)")
    }

    @Test func test__condition_dependency_requirement_noFailed_with_ignoreCancellations() async throws {
        let cancelled = TestProcedure()
        cancelled.cancel(with: TestError())
        let ignoring = try await requirementTest([.noFailed, .ignoreFailedIfCancelled], dependency: cancelled)
        #expect(ignoring.evaluated)
        #expect(ignoring.outcome.isSucceeded)
        let failing = try await requirementTest(
            [.noFailed, .ignoreFailedIfCancelled], dependency: TestProcedure(error: TestError()))
        #expect(!failing.evaluated)
        #expect((failing.outcome.error as? ProcedureError)?.code == .dependencyFailed)
    }

    /// ProcedureKit cancels with `ConditionDependenciesCancelled`; Cohort fails with `dependencyCancelled`.
    @Test func test__condition_dependency_requirement_noCancelled_skips_evaluate_when_dependency_is_cancelled()
        async throws
    {
        let dependency = TestProcedure(error: TestError())
        dependency.cancel()
        let result = try await requirementTest(.noCancelled, dependency: dependency)
        #expect(!result.evaluated)
        #expect((result.outcome.error as? ProcedureError)?.code == .dependencyCancelled, "\(result.outcome)")
    }

    @Test func test__condition_dependency_requirement_noCancelled_ignores_non_cancelled_failures() async throws {
        let result = try await requirementTest(.noCancelled, dependency: TestProcedure(error: TestError()))
        #expect(result.evaluated)
        #expect(result.outcome.isSucceeded)
    }

    /// A dependency added (in another dependency's will-finish) before the procedure left
    /// pending delays its conditions too.
    @Test func test__dependency_added_before_another_dependency_finishes_also_affects_conditions() async throws {
        let procedure = TestProcedure()
        let evaluated = Signal()
        procedure.addCondition(
            TestCondition {
                evaluated.fire()
                return .satisfied
            })
        let release = Signal()
        let additional = AsyncBlockProcedure { try? await release.wait("the test releasing the additional dependency") }
        additional.name = "Additional"
        let dependency = TestProcedure(name: "Dependency")
        dependency.addObserver(BlockObserver(willFinish: { _, _ in procedure.addDependency(additional) }))
        procedure.addDependency(dependency)
        let queue = makeQueue()
        queue.add([procedure, dependency, additional])
        try await finished(dependency)
        try await waitUntil("the additional dependency executing") { additional.isExecuting }
        #expect(procedure.isPending)
        #expect(!evaluated.isFired, "the condition was evaluated before the additional dependency finished")
        release.fire()
        try await finished(procedure)
        #expect(evaluated.isFired && procedure.didExecute)
    }

    /// ProcedureKit's delegate answers will-add with a future and adds the dependency later;
    /// Cohort's delegate is synchronous, so it adds the dependency within will-add.
    @Test func test__dependency_added_by_queue_delegate_will_add_also_affects_evaluating_conditions() async throws {
        final class AddingDelegate: ProcedureQueueDelegate {
            let target: Procedure
            let dependency: Procedure
            init(target: Procedure, dependency: Procedure) {
                self.target = target
                self.dependency = dependency
            }
            func procedureQueue(_ queue: ProcedureQueue, willAdd procedure: Procedure) {
                if procedure === target { procedure.addDependency(dependency) }
            }
        }
        let release = Signal()
        let dependency = AsyncBlockProcedure { try? await release.wait("the test releasing the dependency") }
        let procedure = TestProcedure()
        let evaluated = Signal()
        procedure.addCondition(
            TestCondition {
                evaluated.fire()
                return .satisfied
            })
        let delegate = AddingDelegate(target: procedure, dependency: dependency)
        let queue = makeQueue()
        queue.delegate = delegate
        queue.add([procedure, dependency])
        try await waitUntil("the dependency executing") { dependency.isExecuting }
        #expect(procedure.isPending && procedure.dependencies == [dependency])
        #expect(!evaluated.isFired, "the condition was evaluated before the dependency finished")
        release.fire()
        try await finished(procedure)
        #expect(evaluated.isFired && procedure.didExecute)
        withExtendedLifetime(delegate) {}
    }

    @Test func test__ignored_satisfied_condition_does_not_result_in_failure() async throws {
        expectSucceeded(try await outcome(with: IgnoredCondition(TrueCondition())))
        expectSucceeded(try await outcome(with: TrueCondition()))
    }

    @Test func test__ignored_ignored_condition_does_not_result_in_failure() async throws {
        expectCancelledWithoutError(try await outcome(with: IgnoredCondition(IgnoredCondition(FalseCondition()))))
    }

    @Test func test__ignored_and_condition_does_not_fail() async throws {
        expectCancelledWithoutError(
            try await outcome(with: IgnoredCondition(AllOfCondition([TrueCondition(), FalseCondition()]))))
    }

    @Test func test__ignored_or_condition_does_not_fail() async throws {
        expectCancelledWithoutError(try await outcome(with: IgnoredCondition(AnyOfCondition([FalseCondition()]))))
    }

    /// ProcedureKit's `FalseCondition` cancels with its error; Cohort's fails with `conditionFailed`.
    @Test func false_condition_fails_with_condition_failed() async throws {
        let (result, procedure) = try await outcome(with: FalseCondition())
        #expect((result.error as? ProcedureError)?.code == .conditionFailed, "\(result)")
        #expect(!procedure.didExecute)
    }
}
