/// A group of one procedure (ProcedureKit's `ComposedProcedure`): observers, conditions and
/// a place in a queue for a procedure that is built elsewhere. It takes the input and gives
/// the output of the procedure it wraps, when that procedure has them.
open class ComposedProcedure<Wrapped: Procedure>: GroupProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds only a `let` of a Sendable procedure; the rest is GroupProcedure's.
    /// The procedure it wraps.
    public let procedure: Wrapped

    public init(_ procedure: Wrapped) {
        self.procedure = procedure
        super.init(children: [procedure])
    }
}

extension ComposedProcedure: InputProcedure where Wrapped: InputProcedure {
    public var input: Pending<Wrapped.Input> {
        get { procedure.input }
        set { procedure.input = newValue }
    }
}

extension ComposedProcedure: OutputProcedure where Wrapped: OutputProcedure {
    public var output: Pending<ProcedureResult<Wrapped.Output>> {
        get { procedure.output }
        set { procedure.output = newValue }
    }
}

/// A composed procedure that runs only if `gate` says so (ProcedureKit's `GatedProcedure`):
/// false, or an error thrown, and it is cancelled without an error, never running what it
/// wraps. The gate is asked after the dependencies finish.
open class GatedProcedure<Wrapped: Procedure>: ComposedProcedure<Wrapped>, @unchecked Sendable {
    // @unchecked Sendable: adds no stored state; the rest is ComposedProcedure's.
    public init(_ procedure: Wrapped, gate: @escaping @Sendable () throws -> Bool) {
        super.init(procedure)
        addCondition(IgnoredCondition(BlockCondition(gate)))
    }
}

/// A composed procedure that succeeds even if what it wraps fails (ProcedureKit's
/// `IgnoreErrorsProcedure`): the error is logged, not collected. A cancel still cancels.
public final class IgnoreErrorsProcedure<Wrapped: Procedure>: ComposedProcedure<Wrapped>, @unchecked Sendable {
    // @unchecked Sendable: adds no stored state; the rest is ComposedProcedure's.
    public override func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
        guard let error else { return super.child(child, willFinishWithError: nil) }
        log.notice("ignoring the error of \(child.name): \(error)")
    }
}
