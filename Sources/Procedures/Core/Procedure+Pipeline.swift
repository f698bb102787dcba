/// The stages between "added to a queue" and "ready for a slot": dependencies, readiness
/// hooks (result injection, dependency requirements), produced dependencies, conditions,
/// and exclusivity. The queue's suspension holds a procedure before any of them.
extension Procedure {
    /// Records the queue. Returns true when the procedure is ready at once (the fast path:
    /// no dependencies, hooks, requirements, conditions, and the queue is running), in which
    /// case the caller puts it on the ready list and `advance()` is not needed.
    func attach(to queue: ProcedureQueue) -> Bool {
        willEnqueue(on: queue)
        return core.withLock { core in
            precondition(
                core.queue == nil && core.state == .pending, "\(core.name ?? "procedure") was already added to a queue")
            core.queue = queue
            guard core.unfinishedDependencies == 0, core.readinessHooks.isEmpty, core.conditions.isEmpty,
                core.dependencyRequirements.isEmpty, !core.isCancelled, !queue.isSuspended
            else { return false }
            core.pipelineStarted = true
            core.state = .ready
            return true
        }
    }

    /// Moves a pending procedure on if nothing holds it back. Called when it is added to a
    /// queue, when its last dependency finishes, when it is cancelled, and when its queue resumes.
    func advance() {
        enum Step {
            case wait
            case ready(ProcedureQueue)
            case deferred(ProcedureQueue)
            case prepare(ProcedureQueue)
        }
        while true {
            let step = core.withLock { core -> Step in
                guard core.state == .pending, !core.pipelineStarted, let queue = core.queue else { return .wait }
                if core.isCancelled {
                    core.pipelineStarted = true
                    core.state = .ready
                    return .ready(queue)
                }
                guard core.unfinishedDependencies == 0 else { return .wait }
                if queue.isSuspended { return .deferred(queue) }
                core.pipelineStarted = true
                return .prepare(queue)
            }
            switch step {
            case .wait:
                return
            case .ready(let queue):
                queue.procedureIsReady(self)
                return
            case .deferred(let queue):
                if queue.deferUntilResumed(self) { return }
            // The queue resumed in between: look again.
            case .prepare(let queue):
                prepare(on: queue)
                return
            }
        }
    }

    /// Runs the readiness hooks, then either becomes ready at once (the fast path: no
    /// conditions, no categories) or starts the asynchronous preparation.
    private func prepare(on queue: ProcedureQueue) {
        let hooks = core.withLock { core in
            defer { core.readinessHooks = [] }
            return core.readinessHooks
        }
        for hook in hooks { hook(self) }
        if let violation = checkDependencyRequirements() {
            if violation.cancel { cancel(with: violation.error) } else { failBeforeExecution(violation.error) }
        }

        let plan = core.withLock { core -> (conditions: [Condition], categories: Set<String>, hold: ExclusivityHold)? in
            if core.isCancelled || core.failureBeforeExecution != nil || core.conditions.isEmpty { return nil }
            let categories = core.conditions.reduce(into: Set<String>()) {
                $0.formUnion($1.mutuallyExclusiveCategories)
            }
            let hold = ExclusivityHold()
            core.state = .evaluatingConditions
            core.exclusivity = hold
            return (core.conditions, categories, hold)
        }
        guard let plan else {
            becomeReady(on: queue)
            return
        }
        // Only categories to take (MutuallyExclusive alone, nothing produced or awaited):
        // nothing to evaluate, so no task; the procedure queues for its slot at once.
        if plan.conditions.allSatisfy({
            $0 is MutuallyExclusive && $0.producedDependencies.isEmpty && $0.dependencies.isEmpty
        }) {
            decide(.satisfied, categories: plan.categories, on: queue)
            return
        }
        let task = Task { await self.evaluate(plan.conditions, plan.categories, plan.hold, on: queue) }
        core.withLock { $0.preparation = task }
    }

    private func evaluate(
        _ conditions: [Condition], _ categories: Set<String>, _ hold: ExclusivityHold, on queue: ProcedureQueue
    ) async {
        // Every produced dependency joins the queue now; each condition waits only for its
        // own (Condition.decide), so one that fails at once decides while another's
        // long-running dependency still runs, and that dependency is then cancelled.
        let conditions = Condition.unique(conditions)
        var seen = Set<ObjectIdentifier>()
        let produced = conditions.flatMap(\.producedDependencies).filter { seen.insert(ObjectIdentifier($0)).inserted }
        if !produced.isEmpty {
            core.withLock { $0.producedDependencies = produced }
            if isCancelled { for dependency in produced { dependency.cancel() } }
            for dependency in produced { queue.add(dependency) }
        }
        let toEvaluate = conditions.filter {
            !($0 is MutuallyExclusive) || !$0.dependenciesToAwait.isEmpty || !$0.dependencies.isEmpty
        }
        var result = ConditionResult.satisfied
        if !isCancelled, !toEvaluate.isEmpty {
            result = await Condition.evaluateAll(toEvaluate, for: self, producedDependencies: produced)
        }
        decide(result, categories: categories, on: queue)
    }

    /// Acts on the conditions' result: cancels or fails the procedure, or queues it for its
    /// slot (then to take `categories`), or makes it ready.
    private func decide(_ result: ConditionResult, categories: Set<String>, on queue: ProcedureQueue) {
        // A cancel while the conditions were evaluated has already made the procedure ready
        // (it does not wait for a condition that ignores cancellation): nothing is left to do.
        let decides = core.withLock { core -> Bool in
            defer { core.conditionsDecided = true }
            return !core.conditionsDecided
        }
        guard decides else { return }
        switch result {
        case .satisfied: break
        case .ignored: cancel()
        case .failed(let error): failBeforeExecution(error)
        }
        let waitsForCategories =
            !categories.isEmpty
            && core.withLock { core in
                guard !core.isCancelled, core.failureBeforeExecution == nil else { return false }
                core.pendingCategories = categories
                return true
            }
        // One that must take categories queues for a slot still `evaluatingConditions`: it
        // is `ready` only once it holds them (see start()).
        if waitsForCategories { queue.procedureIsReady(self) } else { becomeReady(on: queue) }
    }

    /// In its slot, takes the categories it waited for (see `start()`), then starts again.
    /// Taking them only with a slot held means a lock holder never waits for a slot, so the
    /// slot a waiter holds is always given back by a holder that can run.
    private func takeCategoriesInSlot(_ categories: Set<String>, _ hold: ExclusivityHold, queue: ProcedureQueue) {
        let levels = exclusivityLevels(categories, on: queue)
        let startInSlot: @Sendable () -> Void = {
            self.core.withLock { core in if core.state < .ready { core.state = .ready } }
            queue.startInReservedSlot(self)
        }
        // One level (no ancestor group holds any of them), the usual case: the manager's
        // answer starts the procedure, with no task in between.
        if levels.count == 1, let (manager, requested, inherited) = levels.first {
            guard !isCancelled else { return startInSlot() }
            hold.request(requested, from: manager, for: self) { grant in
                if let grant {
                    let tokens = inherited ?? grant.fencingTokens
                    self.core.withLock { $0.fencingTokens.merge(tokens) { _, new in new } }
                }
                startInSlot()
            }
            return
        }
        Task {
            if !self.isCancelled { await self.acquireExclusivity(levels, hold) }
            startInSlot()
        }
    }

    /// The levels to take `categories` at: first those no ancestor group holds, from the
    /// queue's manager; then, outermost first, those an ancestor group already holds, from
    /// that group's own table, so that siblings inside it still exclude each other. The
    /// fixed order (outer before inner) keeps the levels free of deadlock. Each level: the
    /// manager, the categories, and the tokens that stand for them (a descendant granted a
    /// category by its group acts under the group's lease, so it carries the group's fencing
    /// token, which the world outside the group has seen).
    private func exclusivityLevels(_ categories: Set<String>, on queue: ProcedureQueue) -> [(
        any ExclusivityManager, Set<String>, [String: UInt64]?
    )] {
        var remaining = categories
        // Each level: the manager, the categories, and the tokens that stand for them. A
        // descendant granted a category by its group acts under the group's lease, so it
        // carries the group's fencing token, which the world outside the group has seen.
        var levels: [(any ExclusivityManager, Set<String>, [String: UInt64]?)] = []
        var ancestor = parent
        while let group = ancestor, !remaining.isEmpty {
            let held = remaining.intersection(group.heldCategories)
            if !held.isEmpty {
                levels.append((group.childExclusivity, held, group.fencingTokens.filter { held.contains($0.key) }))
                remaining.subtract(held)
            }
            ancestor = group.parent
        }
        if !remaining.isEmpty { levels.append((queue.exclusivityManager, remaining, nil)) }
        return levels.reversed()
    }

    /// Takes the levels in order, each once the one before is granted.
    private func acquireExclusivity(
        _ levels: [(any ExclusivityManager, Set<String>, [String: UInt64]?)], _ hold: ExclusivityHold
    ) async {
        for (manager, requested, inherited) in levels {
            guard !isCancelled else { return }
            let grant = await hold.acquire(requested, from: manager, for: self)
            guard let grant else { return }
            let tokens = inherited ?? grant.fencingTokens
            core.withLock { $0.fencingTokens.merge(tokens) { _, new in new } }
        }
    }

    func becomeReady(on queue: ProcedureQueue) {
        let changed = core.withLock { core -> Bool in
            guard core.state < .ready else { return false }
            core.state = .ready
            return true
        }
        if changed { queue.procedureIsReady(self) }
    }

    func failBeforeExecution(_ error: any Error) {
        core.withLock { core in
            if core.failureBeforeExecution == nil { core.failureBeforeExecution = error }
        }
    }

    /// Adds work to run once the dependencies have finished and before conditions are
    /// evaluated; result injection uses it.
    func addReadinessHook(_ hook: @escaping @Sendable (Procedure) -> Void) {
        core.withLock { $0.readinessHooks.append(hook) }
    }

    /// Called by the queue's runner when it gives the procedure a slot: executes it, or
    /// finishes it at once if it was cancelled or failed before it could start; one still
    /// to take its categories takes them first, in that slot.
    func start() {
        let executesAnyway = executesWhenCancelledBeforeStart
        enum Action {
            case fail(any Error)
            case finishCancelled
            case execute([any ProcedureObserver])
            case executeLater
            case takeCategories(Set<String>, ExclusivityHold, ProcedureQueue)
        }
        let action = core.withLock { core -> Action in
            if let categories = core.pendingCategories, let hold = core.exclusivity, let queue = core.queue {
                core.pendingCategories = nil
                return .takeCategories(categories, hold, queue)
            }
            precondition(core.state == .ready, "\(core.name ?? "procedure") started in state \(core.state)")
            core.state = .executing
            if let error = core.failureBeforeExecution { return .fail(error) }
            if core.isCancelled && !executesAnyway { return .finishCancelled }
            // The execute event; taking the serialiser here costs the hot path no extra lock.
            return core.events.enter() ? .execute(core.observers) : .executeLater
        }
        switch action {
        case .takeCategories(let categories, let hold, let queue):
            takeCategoriesInSlot(categories, hold, queue: queue)
        case .fail(let error):
            finish(with: error)
        case .finishCancelled:
            finish()
        case .execute(let observers):
            executeEvent(observers)
            drainEvents()
        case .executeLater:
            // Another event (a did-cancel racing the start) runs: execute after it.
            runEvent { self.executeEvent(self.observers) }
        }
    }

    /// The execute event: will-execute observers, `execute()`, did-execute observers. A
    /// `finish()` made meanwhile is queued behind it, so did-execute always comes before
    /// will-finish. An observer that postponed the execute (`postpone(.execute)`) parks the
    /// rest of the event until its hold is released (then `executeBody`).
    private func executeEvent(_ observers: [any ProcedureObserver]) {
        for observer in observers { observer.deliver(waits: true) { observer.will(execute: self) } }
        let step = core.withLock { core -> ExecuteStep in
            if core.holds.execute > 0 {
                core.holds.parkedExecute = observers
                return .parked
            }
            return ExecuteStep(state: core.state, isCancelled: core.isCancelled)
        }
        run(step, observers)
    }

    /// The execute event after its will-execute observers, once a postponed execute is released.
    final func executeBody(_ observers: [any ProcedureObserver]) {
        run(core.withLock { ExecuteStep(state: $0.state, isCancelled: $0.isCancelled) }, observers)
    }

    private enum ExecuteStep {
        case parked, skip, finishCancelled, execute

        /// A will-execute observer may have finished or cancelled the procedure (a zero
        /// timeout does): its work must not run.
        init(state: State, isCancelled: Bool) {
            if state != .executing {
                self = .skip
            } else if isCancelled {
                self = .finishCancelled
            } else {
                self = .execute
            }
        }
    }

    private func run(_ step: ExecuteStep, _ observers: [any ProcedureObserver]) {
        switch step {
        case .parked, .skip:
            return
        case .finishCancelled where !executesWhenCancelledBeforeStart:
            // Finished now, even with automatic finishing disabled, as nothing else would.
            finish()
        case .finishCancelled, .execute:
            execute()
            for observer in observers { observer.deliver(waits: false) { observer.did(execute: self) } }
        }
    }
}
