import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/ResultInjectionTests.swift`. Its `DataProcessing`
/// (needs an input) and `Printing` (has a default input) are TransformProcedures here.
/// `inject(dependency:block:)`, `bind(to:)`/`bind(from:)` and the `.flatMap`/`.reduce`/
/// `.gathered()` shorthands are API Cohort lacks: those tests are left out, except that the
/// reduce and gather behaviours are checked through ReduceProcedure and injectResults(from:).
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
        let helloWorld = ReduceProcedure<String, String>(initial: "") { accumulator, element in
            accumulator.isEmpty ? element : "\(accumulator) \(element)"
        }.injectResults(from: [hello, world])
        #expect(try await run(hello, world, helloWorld).isSucceeded)
        #expect(helloWorld.output.success == "Hello World")
    }

    @Test func test__collection_reduce_which_throws_finishes_with_error() async throws {
        let hello = ResultProcedure { "Hello" }
        let world = ResultProcedure { "World" }
        let helloWorld = ReduceProcedure<String, String>(initial: "") { _, _ in throw TestError() }
            .injectResults(from: [hello, world])
        let outcome = try await run(hello, world, helloWorld)
        #expect(outcome.isFailed)
        #expect(outcome.error is TestError)
        #expect(helloWorld.output.success == nil)
    }

    @Test func test__collection_gather() async throws {
        let hello = ResultProcedure { "Hello" }
        let world = ResultProcedure { "World" }
        let gathered = TransformProcedure<[String], [String]> { $0 }.injectResults(from: [hello, world])
        #expect(try await run(hello, world, gathered).isSucceeded)
        #expect(gathered.output.success == ["Hello", "World"])
    }
}
