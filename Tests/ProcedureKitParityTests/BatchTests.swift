import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/BatchTests.swift`.
@Suite("BatchProcedureTests")
struct BatchProcedureTests {
    typealias Greeter = TransformProcedure<String, String>

    @Test func test__batch() async throws {
        let beatles = ResultProcedure { ["John", "Paul", "George", "Ringo"] }
        let greetings = BatchProcedure<Greeter> { _ in Greeter { "Hello \($0)" } }.injectResult(from: beatles)
        #expect(try await run(beatles, greetings).isSucceeded)
        #expect(greetings.output.success == ["Hello John", "Hello Paul", "Hello George", "Hello Ringo"])
    }

    /// Cohort: cancelled with a requirementNotSatisfied error naming the failed producer.
    @Test func test__batch_cancel_if_input_not_ready() async throws {
        let beatles = ResultProcedure<[String]> { throw TestError("unknown") }
        let greetings = BatchProcedure<Greeter> { _ in Greeter { "Hello \($0)" } }.injectResult(from: beatles)
        let outcome = try await run(beatles, greetings)
        #expect(outcome.isCancelled)
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}
