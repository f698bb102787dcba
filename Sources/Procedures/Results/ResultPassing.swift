import Synchronization

/// A procedure that takes an input, which may be injected from another procedure's output.
public protocol InputProcedure: Procedure {
    associatedtype Input: Sendable
    var input: Pending<Input> { get set }
}

/// A procedure that produces an output: ready once it has finished.
public protocol OutputProcedure: Procedure {
    associatedtype Output: Sendable
    var output: Pending<ProcedureResult<Output>> { get set }
}

extension InputProcedure {
    /// Takes `producer`'s output as this procedure's input once the producer has finished,
    /// and makes this procedure depend on it. If the producer failed, was cancelled, or
    /// succeeded without an output, this procedure is cancelled with a
    /// `requirementNotSatisfied` error that names the producer, and nothing is injected.
    @discardableResult
    public func injectResult<Producer: OutputProcedure>(from producer: Producer) -> Self
    where Producer.Output == Input {
        injectResult(from: producer) { $0 }
    }

    /// Like `injectResult(from:)`, passing the output through `transform` first
    /// (`injectResult(from: car) { $0.speed }`). A throwing transform cancels this procedure
    /// with the thrown error.
    @discardableResult
    public func injectResult<Producer: OutputProcedure>(
        from producer: Producer, via transform: @escaping @Sendable (Producer.Output) throws -> Input
    ) -> Self {
        addDependency(producer)
        addReadinessHook { [unowned producer] consumer in
            guard let consumer = consumer as? Self else { return }
            switch Self.injectedValue(from: producer, transform: transform) {
            case .success(let value): consumer.input = .ready(value)
            case .failure(let error): consumer.cancel(with: error)
            }
        }
        return self
    }

    /// Injects an optional output into a non-optional input: a nil output does not meet the
    /// requirement and cancels this procedure with an error.
    @discardableResult
    public func injectResult<Producer: OutputProcedure>(from producer: Producer) -> Self
    where Producer.Output == Input? {
        let name = producer.name
        return injectResult(from: producer) { output in
            guard let output else {
                throw ProcedureError(.requirementNotSatisfied, "\(name) produced no value (nil)")
            }
            return output
        }
    }

    /// Gathers the outputs of several producers, in order, into a collection input.
    @discardableResult
    public func injectResults<Producer: OutputProcedure>(from producers: [Producer]) -> Self
    where Input == [Producer.Output] {
        for producer in producers { addDependency(producer) }
        addReadinessHook { consumer in
            guard let consumer = consumer as? Self else { return }
            var values: [Producer.Output] = []
            for producer in producers {
                switch Self.injectedValue(from: producer, transform: { $0 }) {
                case .success(let value): values.append(value)
                case .failure(let error):
                    consumer.cancel(with: error)
                    return
                }
            }
            consumer.input = .ready(values)
        }
        return self
    }

    private static func injectedValue<Producer: OutputProcedure, Value>(
        from producer: Producer, transform: (Producer.Output) throws -> Value
    ) -> Result<Value, any Error> {
        let name = producer.name
        switch producer.outcome {
        case .failed(let error)?:
            return .failure(ProcedureError(.requirementNotSatisfied, "producer \(name) failed: \(error)"))
        case .cancelled?:
            return .failure(ProcedureError(.requirementNotSatisfied, "producer \(name) was cancelled"))
        case .succeeded?, nil:
            guard case .ready(let result) = producer.output else {
                return .failure(ProcedureError(.requirementNotSatisfied, "producer \(name) finished without an output"))
            }
            do { return .success(try transform(try result.get())) } catch { return .failure(error) }
        }
    }
}

/// Storage for the `input` and `output` of the engine's own procedures, kept inline in
/// the procedure (no extra allocation on the hot path).
struct ResultStorage<Input: Sendable, Output: Sendable>: ~Copyable, Sendable {
    let input: Mutex<Pending<Input>>
    let output = Mutex<Pending<ProcedureResult<Output>>>(.pending)

    init(input: Input?) { self.input = Mutex(Pending(input)) }
}
