import Testing

@testable import Procedures

/// ProcedureKit's `Foo`, `Bar` and `Baz`: an input (default "") and an output "<input><suffix>".
final class SuffixProcedure: Procedure, InputProcedure, OutputProcedure, @unchecked Sendable {
    // @unchecked Sendable: its input and output are behind locks (`Locked`); `suffix` is a `let`.
    let suffix: String
    let storedInput = Locked<Pending<String>>(.ready(""))
    let storedOutput = Locked<Pending<ProcedureResult<String>>>(.pending)

    init(_ suffix: String) {
        self.suffix = suffix
        super.init()
    }

    var input: Pending<String> {
        get { storedInput.value }
        set { storedInput.value = newValue }
    }

    var output: Pending<ProcedureResult<String>> {
        get { storedOutput.value }
        set { storedOutput.value = newValue }
    }

    override func execute() {
        if let input = input.value {
            output = .ready(.success("\(input)\(suffix)"))
        } else {
            output = .ready(.failure(ProcedureError(.requirementNotSatisfied, "no input")))
        }
        finish()
    }
}

/// ProcedureKit's `ProcedureKitTestCase.procedure` with an output: "Hello World".
func helloWorld() -> ResultProcedure<String> { ResultProcedure { "Hello World" } }

/// ProcedureKit's `Tests/ProcedureKitTests/AnyProcedureTests.swift`: `AnyProcedure`,
/// `AnyInputProcedure` and `AnyOutputProcedure`. (ProcedureKit's `procedure` there is a
/// TestProcedure with an input and an output; here a SuffixProcedure or a ResultProcedure.)
@Suite("AnyProcedureTests")
struct AnyProcedureTests {
    @Test func test__any_procedure() async throws {
        let procedure = SuffixProcedure("Foo")
        let any = AnyProcedure(procedure)
        #expect(try await run(any).isSucceeded)
        #expect(procedure.outcome?.isSucceeded == true)
    }

    @Test func test__any_procedure_get_correct_result() async throws {
        let procedure = SuffixProcedure(" World")
        procedure.input = .ready("Hello")
        let any = AnyProcedure(procedure)
        #expect(try await run(any).isSucceeded)
        #expect(any.output.success == "Hello World")
    }

    @Test func test__array_of_any_procedures() async throws {
        let procedures = [
            AnyProcedure(SuffixProcedure("Foo")), AnyProcedure(SuffixProcedure("Bar")),
            AnyProcedure(SuffixProcedure("Baz")),
        ]
        #expect(try await run(GroupProcedure(children: procedures)).isSucceeded)
        #expect(procedures.map { $0.output.success ?? "" } == ["Foo", "Bar", "Baz"])
    }

    @Test func test__setting_requirement() async throws {
        let foo = SuffixProcedure("Foo")
        let any = AnyProcedure(foo)
        any.input = .ready("Hello ")
        #expect(try await run(any).isSucceeded)
        #expect(foo.input.value == "Hello ")
        #expect(any.output.success == "Hello Foo")
    }

    @Test func test__not_setting_requirement() async throws {
        let foo = SuffixProcedure("Foo")
        let any = AnyProcedure(foo)
        any.input = .pending
        #expect(try await run(any).isSucceeded)
        #expect(foo.input.isPending)
        #expect(any.output.failure != nil, "the boxed procedure saw no input")
    }

    /// An `AnyProcedure` is an input procedure: an injection reaches the procedure it wraps.
    @Test func any_procedure_takes_an_injected_input() async throws {
        let hello = ResultProcedure { "Hello " }
        let any = AnyProcedure(SuffixProcedure("Foo")).injectResult(from: hello)
        try await run(hello, any)
        #expect(any.output.success == "Hello Foo")
    }
}

@Suite("AnyInputProcedureTests")
struct AnyInputProcedureTests {
    @Test func test__any_procedure() async throws {
        let procedure = SuffixProcedure("Foo")
        let any = AnyInputProcedure(procedure)
        #expect(try await run(any).isSucceeded)
        #expect(procedure.outcome?.isSucceeded == true)
    }

    @Test func test__setting_requirement() async throws {
        let foo = SuffixProcedure("Foo")
        let any = AnyInputProcedure(foo)
        any.input = .ready("Hello ")
        #expect(try await run(any).isSucceeded)
        #expect(foo.output.success == "Hello Foo")
    }

    @Test func test__not_setting_requirement() async throws {
        let foo = SuffixProcedure("Foo")
        let any = AnyInputProcedure(foo)
        any.input = .pending
        #expect(try await run(any).isSucceeded)
        #expect(foo.input.isPending)
    }
}

@Suite("AnyOutputProcedureTests")
struct AnyOutputProcedureTests {
    @Test func test__any_procedure() async throws {
        let procedure = helloWorld()
        let any = AnyOutputProcedure(procedure)
        #expect(try await run(any).isSucceeded)
        #expect(procedure.outcome?.isSucceeded == true)
    }

    @Test func test__any_procedure_get_correct_result() async throws {
        let any = AnyOutputProcedure(helloWorld())
        #expect(try await run(any).isSucceeded)
        #expect(any.output.success == "Hello World")
    }

    @Test func test__array_of_any_procedures() async throws {
        let procedures = [
            AnyOutputProcedure(SuffixProcedure("Foo")), AnyOutputProcedure(SuffixProcedure("Bar")),
            AnyOutputProcedure(SuffixProcedure("Baz")),
        ]
        #expect(try await run(GroupProcedure(children: procedures)).isSucceeded)
        #expect(procedures.map { $0.output.success ?? "" } == ["Foo", "Bar", "Baz"])
    }
}
