import Dispatch
import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/MutualExclusivityTests.swift`. (Its internal-API
/// contract test subclasses ProcedureQueue's internals and is left out; Cohort's own
/// contract test is ProceduresTests' MutualExclusionTests.)
@Suite("MutualExclusiveTests")
struct MutualExclusiveTests {
    /// Cohort: `MutuallyExclusive(Procedure.self)` rather than a generic type.
    @Test func test__mutual_exclusive_name() {
        #expect(MutuallyExclusive(Procedure.self).name == "MutuallyExclusive<Procedure>")
    }

    @Test func test__mutual_exclusive_category() {
        #expect(MutuallyExclusive(category: "testing").mutuallyExclusiveCategories == ["testing"])
    }

    @Test func test__alert_presentation_evaluation_satisfied() async {
        guard case .satisfied = await MutuallyExclusive(Procedure.self).evaluate(for: TestProcedure()) else {
            Issue.record("the condition should evaluate satisfied")
            return
        }
    }

    @Test func test__mutually_exclusive_operations_can_be_executed() async throws {
        let procedure1 = TestProcedure(name: "Procedure 1")
        procedure1.addCondition(MutuallyExclusive(TestProcedure.self))
        let procedure2 = TestProcedure(name: "Procedure 2")
        procedure2.addCondition(MutuallyExclusive(TestProcedure.self))
        try await run(procedure1, procedure2)
        #expect(procedure1.didExecute && procedure2.didExecute)
    }
}

/// ProcedureKit's `MutualExclusiveConcurrencyTests`.
@Suite("MutualExclusiveConcurrencyTests")
struct MutualExclusiveConcurrencyTests {
    /// Executes for `duration` (the work being measured), counting how many run at once.
    final class TrackingProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only `let`s of Sendable types.
        let gauge: Locked<(current: Int, max: Int)>
        let duration: Duration
        init(gauge: Locked<(current: Int, max: Int)>, duration: Duration) {
            self.gauge = gauge
            self.duration = duration
            super.init()
        }
        override func execute() {
            gauge.mutate {
                $0.current += 1
                $0.max = max($0.max, $0.current)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + duration.dispatch) {
                self.gauge.mutate { $0.current -= 1 }
                self.finish()
            }
        }
    }

    func exclusiveProcedures(_ count: Int, gauge: Locked<(current: Int, max: Int)>) -> [TrackingProcedure] {
        (0..<count).map { _ in
            let procedure = TrackingProcedure(gauge: gauge, duration: .milliseconds(200))
            procedure.addCondition(MutuallyExclusive(TrackingProcedure.self))
            return procedure
        }
    }

    @Test func test__mutually_exclusive_operation_are_run_exclusively() async throws {
        let gauge = Locked<(current: Int, max: Int)>((0, 0))
        let procedures = exclusiveProcedures(3, gauge: gauge)
        let queue = makeQueue(maxConcurrentCount: 3)
        let start = ContinuousClock.now
        queue.add(procedures)
        for procedure in procedures { #expect(try await finished(procedure).isSucceeded) }
        #expect(gauge.value.max == 1)
        #expect(ContinuousClock.now - start >= .milliseconds(600))
    }

    @Test func test__mutually_exclusive_operations_added_concurrently_are_run_exclusively() async throws {
        let gauge = Locked<(current: Int, max: Int)>((0, 0))
        let procedures = exclusiveProcedures(3, gauge: gauge)
        let queue = makeQueue(maxConcurrentCount: 3)
        let start = ContinuousClock.now
        for procedure in procedures { DispatchQueue.global(qos: .userInitiated).async { queue.add(procedure) } }
        for procedure in procedures { #expect(try await finished(procedure).isSucceeded) }
        #expect(gauge.value.max == 1)
        #expect(ContinuousClock.now - start >= .milliseconds(600))
    }

    @Test func test__mutual_exclusivity_with_dependencies() async throws {
        let procedure1 = TestProcedure()
        procedure1.addCondition(MutuallyExclusive(TestProcedure.self))
        let procedure2 = TestProcedure()
        procedure2.addCondition(MutuallyExclusive(TestProcedure.self))
        procedure2.addDependency(procedure1)
        let queue = makeQueue()
        queue.add(procedure2)
        queue.add(procedure1)
        #expect(try await finished(procedure1).isSucceeded)
        #expect(try await finished(procedure2).isSucceeded)
    }

    final class DoesNotFinishByItselfProcedure: Procedure, @unchecked Sendable {
        // @unchecked Sendable: adds only a `let` Signal (Sendable).
        let executing = Signal()
        override func execute() { executing.fire() }
    }

    @Test func test__mutual_exclusivity_when_initial_reference_to_queue_goes_away() async throws {
        let procedure1 = DoesNotFinishByItselfProcedure()
        procedure1.addCondition(MutuallyExclusive(TestProcedure.self))
        weak var weakQueue: ProcedureQueue?
        do {
            let queue = makeQueue()
            queue.add(procedure1)
            weakQueue = queue
        }
        try await procedure1.executing.wait("execute")
        #expect(weakQueue != nil, "the executing procedure's queue was released")
        procedure1.finish()
        #expect(try await finished(procedure1).isSucceeded)
    }
}
