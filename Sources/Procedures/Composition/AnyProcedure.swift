/// A procedure with an input and an output whose type names only those
/// (ProcedureKit's `AnyProcedure`): procedures of different types with the same input and
/// output can go in one array. It runs the procedure it wraps as its only child.
public final class AnyProcedure<Input: Sendable, Output: Sendable>: GroupProcedure, InputProcedure, OutputProcedure,
    @unchecked Sendable
{
    // @unchecked Sendable: adds only immutable `@Sendable` closures; the rest is GroupProcedure's.
    private let getInput: @Sendable () -> Pending<Input>
    private let setInput: @Sendable (Pending<Input>) -> Void
    private let getOutput: @Sendable () -> Pending<ProcedureResult<Output>>
    private let setOutput: @Sendable (Pending<ProcedureResult<Output>>) -> Void

    public init<Base: InputProcedure & OutputProcedure>(_ base: Base) where Base.Input == Input, Base.Output == Output {
        getInput = { base.input }
        setInput = { base.input = $0 }
        getOutput = { base.output }
        setOutput = { base.output = $0 }
        super.init(children: [base])
    }

    public var input: Pending<Input> {
        get { getInput() }
        set { setInput(newValue) }
    }

    public var output: Pending<ProcedureResult<Output>> {
        get { getOutput() }
        set { setOutput(newValue) }
    }
}

/// `AnyProcedure` for a procedure with an input (ProcedureKit's `AnyInputProcedure`).
public final class AnyInputProcedure<Input: Sendable>: GroupProcedure, InputProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds only immutable `@Sendable` closures; the rest is GroupProcedure's.
    private let getInput: @Sendable () -> Pending<Input>
    private let setInput: @Sendable (Pending<Input>) -> Void

    public init<Base: InputProcedure>(_ base: Base) where Base.Input == Input {
        getInput = { base.input }
        setInput = { base.input = $0 }
        super.init(children: [base])
    }

    public var input: Pending<Input> {
        get { getInput() }
        set { setInput(newValue) }
    }
}

/// `AnyProcedure` for a procedure with an output (ProcedureKit's `AnyOutputProcedure`).
public final class AnyOutputProcedure<Output: Sendable>: GroupProcedure, OutputProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds only immutable `@Sendable` closures; the rest is GroupProcedure's.
    private let getOutput: @Sendable () -> Pending<ProcedureResult<Output>>
    private let setOutput: @Sendable (Pending<ProcedureResult<Output>>) -> Void

    public init<Base: OutputProcedure>(_ base: Base) where Base.Output == Output {
        getOutput = { base.output }
        setOutput = { base.output = $0 }
        super.init(children: [base])
    }

    public var output: Pending<ProcedureResult<Output>> {
        get { getOutput() }
        set { setOutput(newValue) }
    }
}
