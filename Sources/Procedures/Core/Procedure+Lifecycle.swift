extension Procedure {
    // MARK: Building

    /// Makes this procedure wait until `dependency` has finished. Add dependencies before
    /// the procedure is added to a queue.
    public final func addDependency(_ dependency: Procedure) {
        precondition(dependency !== self, "\(name) cannot depend on itself")
        let accepted = core.withLock { core -> Bool in
            guard core.state == .pending, !core.pipelineStarted else { return false }
            core.unfinishedDependencies += 1
            core.dependencies.append(dependency)
            return true
        }
        guard accepted else {
            log.warning("dependency \(dependency.name) added after \(name) left pending; ignored")
            return
        }
        let alreadyFinished = dependency.core.withLock { other -> Bool in
            if other.state == .finished { return true }
            other.dependents.append(self)
            return false
        }
        if alreadyFinished { dependencyDidFinish() }
    }

    public final func addDependencies(_ dependencies: [Procedure]) {
        for dependency in dependencies { addDependency(dependency) }
    }

    /// The procedures this one waits for.
    public var dependencies: [Procedure] { core.withLock { $0.dependencies } }

    /// Adds a condition, evaluated after the dependencies finish. Add conditions before the
    /// procedure is added to a queue.
    public final func addCondition(_ condition: Condition) {
        let accepted = core.withLock { core -> Bool in
            guard core.state == .pending, !core.pipelineStarted else { return false }
            core.conditions.append(condition)
            return true
        }
        if !accepted { log.warning("condition \(condition.name) added after \(name) left pending; ignored") }
    }

    public var conditions: [Condition] { core.withLock { $0.conditions } }

    /// Attaches an observer; it sees every event from now on.
    public final func addObserver(_ observer: any ProcedureObserver) {
        core.withLock { $0.observers.append(observer) }
        runEvent { observer.deliver(waits: true) { observer.didAttach(to: self) } }
    }

    public var observers: [any ProcedureObserver] { core.withLock { $0.observers } }

    /// Runs `handler` exactly once with the outcome when the procedure has finished; at once
    /// (on the caller's thread) if it already has.
    public final func whenFinished(_ handler: @escaping @Sendable (ProcedureOutcome) -> Void) {
        let outcome = core.withLock { core -> ProcedureOutcome? in
            if core.state == .finished { return core.outcome }
            core.finishHandlers.append(handler)
            return nil
        }
        if let outcome { handler(outcome) }
    }

    /// Suspends until the procedure has finished, and returns its outcome.
    @discardableResult
    public final func waitUntilFinished() async -> ProcedureOutcome {
        await withCheckedContinuation { continuation in
            whenFinished { continuation.resume(returning: $0) }
        }
    }

    /// Adds a procedure that this one produces to the same queue (for a child of a group:
    /// to the group, which then waits for it too). It is one of this procedure's events:
    /// called from `execute()`, the procedure is added once `execute()` has returned (before
    /// the procedure finishes).
    public final func produce(_ procedure: Procedure) {
        produce(procedure, before: nil)
    }

    /// Produces `procedure` (see `produce(_:)`) and then releases `event`, so the held
    /// event (this procedure's, or another's) comes after the procedure was added and its
    /// will-add and did-add observers ran (ProcedureKit's `produce(operation:before:)`).
    /// From a will-execute observer, for example:
    ///
    ///     let pending = procedure.postpone(.execute)
    ///     fetchToken { token in procedure.produce(Refresh(token), before: pending) }
    public final func produce(_ procedure: Procedure, before event: PendingEvent?) {
        guard let queue = core.withLock({ $0.queue }) else {
            event?.release()
            preconditionFailure("\(name) can only produce procedures while it is on a queue")
        }
        // An event of this procedure: from inside `execute()` it runs once `execute()`
        // returns, and before a `finish()` made after it.
        runEvent {
            let observers = self.observers
            for observer in observers { observer.deliver(waits: true) { observer.procedure(self, willAdd: procedure) } }
            queue.add(procedure)
            for observer in observers { observer.deliver(waits: false) { observer.procedure(self, didAdd: procedure) } }
            event?.release()
        }
    }

    // MARK: Cancelling and finishing

    /// Cancels the procedure. Idempotent: only the first call has an effect, and its reason
    /// is kept. A pending procedure becomes ready at once and finishes cancelled without
    /// executing (once its queue starts it); one waiting for a lock withdraws its request;
    /// an executing one finishes at once unless automatic finishing is disabled.
    /// `isCancelled` is true when this returns; `procedureDidCancel(with:)` and did-cancel
    /// observers run as the procedure's next event (after `execute()`, if it is running).
    public final func cancel(with reason: (any Error)? = nil) {
        let snapshot = core.withLock {
            core -> (State, Task<Void, Never>?, ExclusivityHold?, [Procedure], Bool, ProcedureQueue?)? in
            guard !core.isCancelled, core.state < .finishing else { return nil }
            core.isCancelled = true
            core.cancellationReason = reason
            // Still evaluating conditions: the cancel decides, and the procedure is ready at
            // once rather than when the evaluation (cooperatively cancelled) returns.
            var takeOver: ProcedureQueue?
            if core.state == .evaluatingConditions, !core.conditionsDecided {
                core.conditionsDecided = true
                takeOver = core.queue
            }
            return (
                core.state, core.preparation, core.exclusivity, core.producedDependencies,
                core.isAutomaticFinishingDisabled, takeOver
            )
        }
        guard let (state, preparation, hold, produced, manualFinish, takeOver) = snapshot else { return }
        runEvent {
            self.procedureDidCancel(with: reason)
            for observer in self.observers {
                observer.deliver(waits: false) { observer.did(cancel: self, with: reason) }
            }
        }
        switch state {
        case .pending:
            advance()
        case .evaluatingConditions:
            preparation?.cancel()
            for dependency in produced { dependency.cancel() }
            hold?.withdrawWaiting()
            if let takeOver { becomeReady(on: takeOver) }
        case .executing where !manualFinish:
            finish()
        default:
            break
        }
    }

    /// Finishes the procedure: succeeded, or failed with `error` (cancelled if it was
    /// cancelled). Only the first call while executing counts; later calls, and calls made
    /// before the procedure started executing, are ignored. The outcome is decided when this
    /// is called; the finish events run as the procedure's next event, so a `finish()` from
    /// inside `execute()` (or from another thread while `execute()` runs) delivers did-execute
    /// first, then will-finish and did-finish.
    public final func finish(with error: (any Error)? = nil) {
        let begun = core.withLock { core -> (ProcedureOutcome, [any ProcedureObserver], ProcedureQueue?)? in
            guard core.state == .executing else { return nil }
            core.state = .finishing
            let outcome: ProcedureOutcome =
                if core.isCancelled { .cancelled(core.cancellationReason ?? error) } else if let error {
                    .failed(error)
                } else { .succeeded }
            core.outcome = outcome
            guard core.events.enter() else {
                core.events.finishAfter = core.events.pending.count
                return nil
            }
            return (outcome, core.observers, core.queue)
        }
        guard let (outcome, observers, queue) = begun else { return }
        finishEvent(outcome, observers, queue)
        drainEvents()
    }

    /// The finish event: will-finish, finished, did-finish, then the dependents and the queue.
    final func finishEvent(_ outcome: ProcedureOutcome, _ observers: [any ProcedureObserver], _ queue: ProcedureQueue?)
    {
        procedureWillFinish(with: outcome)
        for observer in observers { observer.deliver(waits: true) { observer.will(finish: self, with: outcome) } }
        queue?.procedureWillFinish(self, with: outcome)
        completeFinish(outcome, observers, queue)
    }

    /// The finish event after its will-finish observers: finished, did-finish, then the
    /// dependents and the queue. Parked while a `postpone(.finish)` hold is not released.
    final func completeFinish(
        _ outcome: ProcedureOutcome, _ observers: [any ProcedureObserver], _ queue: ProcedureQueue?
    ) {
        let finished = core.withLock {
            core -> ([Procedure], [@Sendable (ProcedureOutcome) -> Void], ExclusivityHold?)? in
            if core.holds.finish > 0 {
                core.holds.parkedFinish = (outcome, observers, queue)
                return nil
            }
            core.state = .finished
            core.queue = nil
            core.preparation = nil
            core.producedDependencies = []
            defer {
                core.dependents = []
                core.finishHandlers = []
                core.exclusivity = nil
            }
            return (core.dependents, core.finishHandlers, core.exclusivity)
        }
        guard let (dependents, handlers, hold) = finished else { return }
        hold?.releaseAll()
        procedureDidFinish(with: outcome)
        for observer in observers { observer.deliver(waits: false) { observer.did(finish: self, with: outcome) } }
        for handler in handlers { handler(outcome) }
        for dependent in dependents { dependent.dependencyDidFinish() }
        queue?.procedureDidFinish(self, with: outcome)
    }

    func dependencyDidFinish() {
        let ready = core.withLock { core -> Bool in
            core.unfinishedDependencies -= 1
            return core.unfinishedDependencies == 0
        }
        if ready { advance() }
    }
}
