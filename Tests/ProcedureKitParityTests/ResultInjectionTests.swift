import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/ResultInjectionTests.swift`. Its `DataProcessing`
/// (needs an input) and `Printing` (has a default input) are TransformProcedures here.
/// ProcedureKit's `flatMap` and `reduce` on a collection of output procedures are Cohort's
/// `compactMapOutputs` and `reduceOutputs` (see the HANDBOOK).
@Suite("ResultInjectionTests")
struct ResultInjectionTests {
    func dataProcessing() -> TransformProcedure<String, Void> { TransformProcedure { _ in } }
    func printing() -> TransformProcedure<String, Void> { TransformProcedure(input: "Default Requirement") { _ in } }

    /// A producer that succeeds without an output (ProcedureKit: `procedure.output = .pending`).
    final class NoOutputProcedure: Procedure, OutputProcedure, @unchecked Sendable {
        // @unchecked Sendable: its output is behind a lock (`Locked`).
        let storage = Locked<Pending<ProcedureResult<String>>>(.pending)
        var output: Pending<ProcedureResult<String>> {
            get { storage.value }
            set { storage.value = newValue }
        }
    }

    @Test func test__automatic_requirement_is_injected() async throws {
        let procedure = ResultProcedure { "Hello" }
        let processing = dataProcessing().injectResult(from: procedure)
        #expect(try await run(procedure, processing).isSucceeded)
        #expect(processing.input.value == "Hello")
    }

    /// Cohort: cancelled with a `requirementNotSatisfied` error naming the producer.
    @Test func test__receiver_cancels_with_error_if_dependency_errors() async throws {
        let procedure = ResultProcedure<String> { throw TestError() }
        let processing = dataProcessing().injectResult(from: procedure)
        let outcome = try await run(procedure, processing)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }

    @Test func test__receiver_cancels_with_errors_if_requirement_not_met() async throws {
        let procedure = NoOutputProcedure()
        let printing = printing().injectResult(from: procedure)
        let outcome = try await run(procedure, printing)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }

    @Test func test__receiver_cancels_if_dependency_is_cancelled() async throws {
        let procedure = ResultProcedure { "Hello" }
        let processing = dataProcessing().injectResult(from: procedure)
        procedure.cancel()
        let outcome = try await run(procedure, processing)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }

    @Test func test__automatic_unwrap_when_result_is_optional_requrement() async throws {
        let hello = ResultProcedure<String?> { "Hello, World" }
        let print = printing().injectResult(from: hello)
        #expect(try await run(hello, print).isSucceeded)
        #expect(print.input.value == "Hello, World")
    }

    @Test func test__automatic_unwrap_when_result_is_nil_optional_requrement() async throws {
        let hello = ResultProcedure<String?> { nil }
        let printer = printing().injectResult(from: hello)
        let outcome = try await run(hello, printer)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }

    @Test func test__collection_reduce() async throws {
        let hello = ResultProcedure { "Hello" }
        let world = ResultProcedure { "World" }
        let helloWorld = [hello, world].reduceOutputs("") { accumulator, element in
            accumulator.isEmpty ? element : "\(accumulator) \(element)"
        }
        #expect(try await run(hello, world, helloWorld).isSucceeded)
        #expect(helloWorld.output.success == "Hello World")
    }

    @Test func test__collection_reduce_which_throws_finishes_with_error() async throws {
        let hello = ResultProcedure { "Hello" }
        let world = ResultProcedure { "World" }
        let helloWorld = [hello, world].reduceOutputs("") { _, _ in throw TestError() }
        let outcome = try await run(hello, world, helloWorld)
        #expect(outcome.isFailed)
        #expect(outcome.error is TestError)
        #expect(helloWorld.output.success == nil)
    }

    @Test func test__collection_gather() async throws {
        let hello = ResultProcedure { "Hello" }
        let world = ResultProcedure { "World" }
        let gathered = [hello, world].gathered()
        #expect(try await run(hello, world, gathered).isSucceeded)
        #expect(gathered.output.success == ["Hello", "World"])
    }

    @Test func test__block_is_executed() async throws {
        let procedure = TestProcedure()
        let executed = Locked(false)
        let processing = dataProcessing().inject(dependency: procedure) { _, _, _ in executed.value = true }
        try await run(procedure, processing)
        #expect(executed.value)
        #expect(processing.dependencies == [procedure])
    }

    /// The block sees the dependency's own error (ProcedureKit's test hands its own error
    /// back; this one checks that the block received the dependency's).
    @Test func test__block_passes_through_errors() async throws {
        let procedure = TestProcedure(error: TestError("expected"))
        let received = Locked<TestError?>(nil)
        let processing = dataProcessing().inject(dependency: procedure) { consumer, dependency, error in
            received.value = error as? TestError
            consumer.input = .ready("from \(dependency.name)")
        }
        try await run(procedure, processing)
        #expect(received.value == TestError("expected"))
        #expect(processing.input.value == "from TestProcedure")
        #expect(processing.outcome?.isSucceeded == true, "the block decided, and did not cancel it")
    }

    @Test func test__collection_flatMap() async throws {
        let hello = ResultProcedure { "Hello" }
        let world = ResultProcedure { "World" }
        let mapped = [world, hello].compactMapOutputs { $0.uppercased() }
        #expect(try await run(hello, world, mapped).isSucceeded)
        #expect(mapped.output.success == ["WORLD", "HELLO"])
    }

    @Test func test__input_binding() async throws {
        let hello = ResultProcedure { "Hello" }
        let world = TransformProcedure<String, String> { "\($0) World" }.injectResult(from: hello)
        let dan = TransformProcedure<String, String> { "\($0) Dan" }
        world.bind(to: dan)  // the same input to another procedure
        dan.addDependency(world)  // bind sets up no dependency
        try await run(hello, world, dan)
        #expect(dan.outcome?.isSucceeded == true)
        #expect(dan.output.success == "Hello Dan")
    }

    @Test func test__binding() async throws {
        final class TestGroup: GroupProcedure, InputProcedure, OutputProcedure, @unchecked Sendable {
            // @unchecked Sendable: its input and output are behind locks (`Locked`).
            let storedInput = Locked<Pending<String>>(.pending)
            let storedOutput = Locked<Pending<ProcedureResult<String>>>(.pending)
            var input: Pending<String> {
                get { storedInput.value }
                set { storedInput.value = newValue }
            }
            var output: Pending<ProcedureResult<String>> {
                get { storedOutput.value }
                set { storedOutput.value = newValue }
            }

            init() {
                let world = TransformProcedure<String, String> { "\($0) World" }
                let result = TransformProcedure<String, String> { "\($0), we are running on Cohort" }
                    .injectResult(from: world)
                super.init(children: [world, result])
                // The children run once the group executes, after its own injection.
                bind(to: world)
                bind(from: result)
            }
        }
        let hello = ResultProcedure { "Hello" }
        let group = TestGroup().injectResult(from: hello)
        try await run(hello, group)
        #expect(group.outcome?.isSucceeded == true)
        #expect(group.output.success == "Hello World, we are running on Cohort")
    }

    /// Not in ProcedureKit's tests, in its API: the producer's error as a value on the
    /// consumer (`injectOutcome(from:)`), which decides what to do with it.
    @Test func producer_error_reaches_the_consumer_as_a_value() async throws {
        let failing = ResultProcedure<String> { throw TestError("producer") }
        let handled = TransformProcedure<ProcedureResult<String>, String> { result in
            switch result {
            case .success(let text): text
            case .failure(let error): "recovered from \(error)"
            }
        }.injectOutcome(from: failing)
        try await run(failing, handled)
        #expect(handled.outcome?.isSucceeded == true)
        #expect(handled.output.success == "recovered from TestError(producer)")
        let succeeding = ResultProcedure { "fine" }
        let passed = TransformProcedure<ProcedureResult<String>, String> { try $0.get() }.injectOutcome(
            from: succeeding)
        try await run(succeeding, passed)
        #expect(passed.output.success == "fine")
    }
}
