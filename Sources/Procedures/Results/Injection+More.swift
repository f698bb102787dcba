// ProcedureKit's other ways of passing results: a general injection that sees the finished
// dependency, the producer's outcome as a value, and bindings.

extension Procedure {
    /// Makes this procedure depend on `dependency` and runs `block` with this procedure, the
    /// finished dependency and its error (a failure's error, or a cancellation's reason; nil
    /// for a success) once it has finished and before this procedure's conditions are
    /// evaluated (ProcedureKit's `inject(dependency:block:)`). The block decides: it may set
    /// an input, cancel this procedure, or do nothing.
    @discardableResult
    public final func inject<Dependency: Procedure>(
        dependency: Dependency, block: @escaping @Sendable (Self, Dependency, (any Error)?) -> Void
    ) -> Self {
        precondition(dependency !== self, "\(name) cannot inject its own result into itself")
        addDependency(dependency)
        addReadinessHook { [unowned dependency] procedure in
            guard let procedure = procedure as? Self else { return }
            block(procedure, dependency, dependency.outcome?.error)
        }
        return self
    }
}

extension InputProcedure {
    /// Takes `producer`'s result as this procedure's input, success or failure: its output,
    /// or the error it failed with (or was cancelled with), as a value. Unlike
    /// `injectResult(from:)`, a failed producer does not cancel this procedure; it decides
    /// what to do with the failure. A producer that succeeded without an output gives a
    /// `requirementNotSatisfied` error.
    @discardableResult
    public func injectOutcome<Producer: OutputProcedure>(from producer: Producer) -> Self
    where Input == ProcedureResult<Producer.Output> {
        let name = producer.name
        addDependency(producer)
        addReadinessHook { [unowned producer] consumer in
            guard let consumer = consumer as? Self else { return }
            let result: ProcedureResult<Producer.Output>
            switch producer.outcome {
            case .failed(let error)?:
                result = .failure(error)
            case .cancelled(let reason)?:
                result = .failure(
                    reason ?? ProcedureError(.requirementNotSatisfied, "producer \(name) was cancelled"))
            case .succeeded?, nil:
                result =
                    producer.output.value
                    ?? .failure(ProcedureError(.requirementNotSatisfied, "producer \(name) finished without an output"))
            }
            consumer.input = .ready(result)
        }
        return self
    }

    /// Gives this procedure's input to `target` too (ProcedureKit's `bind(to:)`): `target`
    /// takes it as it gets ready to run, so an input injected into this procedure after the
    /// binding is the one it gets. It adds no dependency: make `target` run after this
    /// procedure's input is set (after it, or inside it as a group's child) yourself.
    public func bind<Target: InputProcedure>(to target: Target) where Target.Input == Input {
        target.addReadinessHook { [weak self] target in
            guard let self, let target = target as? Target, !self.input.isPending else { return }
            target.input = self.input
        }
    }
}

extension OutputProcedure {
    /// Takes `source`'s output as this procedure's output as `source` finishes (ProcedureKit's
    /// `bind(from:)`): a group can so publish one of its children's output.
    public func bind<Source: OutputProcedure>(from source: Source) where Source.Output == Output {
        source.addObserver(
            BlockObserver(willFinish: { [weak self] finishing, _ in
                guard let source = finishing as? Source else { return }
                self?.output = source.output
            }))
    }
}
