/// Turns an input into an output with a synchronous, throwing closure. The input may be
/// given at creation or injected; a procedure that starts without one finishes failed with
/// a `requirementNotSatisfied` error.
open class TransformProcedure<Input: Sendable, Output: Sendable>: Procedure, InputProcedure, OutputProcedure,
    @unchecked Sendable
{
    // @unchecked Sendable: its added state is a ResultStorage (locked inside) and an immutable `@Sendable` closure.
    /// The work: synchronous here, `async` for ``AsyncTransformProcedure``.
    enum Transform: Sendable {
        case sync(@Sendable (Input) throws -> Output)
        case async(@Sendable (Input) async throws -> Output)
    }

    private let storage: ResultStorage<Input, Output>
    private let transform: Transform
    /// The running closure of an `async` transform, to cancel it.
    private let task = Protected<Task<Void, Never>?>(nil)

    public init(input: Input? = nil, transform: @escaping @Sendable (Input) throws -> Output) {
        storage = ResultStorage(input: input)
        self.transform = .sync(transform)
        super.init()
    }

    /// For ``AsyncTransformProcedure``: it finishes when its closure returns.
    init(input: Input?, asyncTransform: @escaping @Sendable (Input) async throws -> Output) {
        storage = ResultStorage(input: input)
        self.transform = .async(asyncTransform)
        super.init()
        isAutomaticFinishingDisabled = true
    }

    public var input: Pending<Input> {
        get { storage.input.withLock { $0 } }
        set { storage.input.withLock { $0 = newValue } }
    }

    public var output: Pending<ProcedureResult<Output>> {
        get { storage.output.withLock { $0 } }
        set { storage.output.withLock { $0 = newValue } }
    }

    open override func execute() {
        guard let input = input.value else {
            let error = ProcedureError(.requirementNotSatisfied, "\(name) has no input")
            output = .ready(.failure(error))
            finish(with: error)
            return
        }
        switch transform {
        case .sync(let transform):
            do {
                output = .ready(.success(try transform(input)))
                finish()
            } catch {
                output = .ready(.failure(error))
                finish(with: error)
            }
        case .async(let transform):
            let running = Task {
                do {
                    let value = try await transform(input)
                    output = .ready(.success(value))
                    finish()
                } catch {
                    output = .ready(.failure(error))
                    finish(with: error)
                }
            }
            task.value = running
            if isCancelled { running.cancel() }
        }
    }

    open override func procedureDidCancel(with reason: (any Error)?) {
        task.value?.cancel()
    }
}

/// Turns an input into an output with an `async throws` closure, cancelled cooperatively
/// like `AsyncResultProcedure`: cancelling the procedure cancels the closure's task, and the
/// procedure finishes when the closure returns. Input, output and a missing input behave as
/// in ``TransformProcedure``, whose machinery it shares.
open class AsyncTransformProcedure<Input: Sendable, Output: Sendable>: TransformProcedure<Input, Output>,
    @unchecked Sendable
{
    // @unchecked Sendable: adds a `Protected` task handle; the rest is TransformProcedure's.
    public init(input: Input? = nil, transform: @escaping @Sendable (Input) async throws -> Output) {
        super.init(input: input, asyncTransform: transform)
    }
}
