/// A procedure whose work is a synchronous, throwing closure; its output is the closure's
/// return value (ProcedureKit's `ResultProcedure`).
open class ResultProcedure<Output: Sendable>: Procedure, OutputProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds a ResultStorage (locked inside) and an immutable `@Sendable` closure.
    private let storage = ResultStorage<Void, Output>(input: ())
    private let block: @Sendable () throws -> Output

    public init(block: @escaping @Sendable () throws -> Output) {
        self.block = block
        super.init()
    }

    public var output: Pending<ProcedureResult<Output>> {
        get { storage.output.withLock { $0 } }
        set { storage.output.withLock { $0 = newValue } }
    }

    open override func execute() {
        do {
            let value = try block()
            output = .ready(.success(value))
            finish()
        } catch {
            output = .ready(.failure(error))
            finish(with: error)
        }
    }
}

/// A procedure that runs a synchronous, throwing closure (ProcedureKit's `BlockProcedure`).
/// A thrown error fails it. (Not generic, so the hot path pays no generic-metadata lookups.)
open class BlockProcedure: Procedure, @unchecked Sendable {
    // @unchecked Sendable: adds only an immutable `@Sendable` closure; the rest is Procedure's.
    private let block: @Sendable () throws -> Void

    public init(block: @escaping @Sendable () throws -> Void) {
        self.block = block
        super.init()
    }

    open override func execute() {
        do {
            try block()
            finish()
        } catch {
            finish(with: error)
        }
    }
}

/// A procedure whose work is an `async throws` closure, run as a Swift task. Cancelling the
/// procedure cancels the task (cooperatively: the closure sees `Task.isCancelled` or a
/// `CancellationError` from the APIs it awaits), and the procedure finishes when the closure
/// returns, so a cancelled procedure has really stopped when it finishes.
open class AsyncResultProcedure<Output: Sendable>: Procedure, OutputProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds a locked ResultStorage, an immutable closure and a `Protected` task handle.
    private let storage = ResultStorage<Void, Output>(input: ())
    private let block: @Sendable () async throws -> Output
    private let task = Protected<Task<Void, Never>?>(nil)

    public init(block: @escaping @Sendable () async throws -> Output) {
        self.block = block
        super.init()
        isAutomaticFinishingDisabled = true
    }

    public var output: Pending<ProcedureResult<Output>> {
        get { storage.output.withLock { $0 } }
        set { storage.output.withLock { $0 = newValue } }
    }

    open override func execute() {
        let running = Task {
            do {
                let value = try await block()
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

    open override func procedureDidCancel(with reason: (any Error)?) {
        task.value?.cancel()
    }
}

/// The `Void` form of `AsyncResultProcedure`.
public typealias AsyncBlockProcedure = AsyncResultProcedure<Void>
