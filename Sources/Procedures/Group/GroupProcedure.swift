import Synchronization

/// A procedure made of child procedures that run on the group's own queue
/// (ProcedureKit's `GroupProcedure`; CompositeOperations' transactional operation).
///
/// - Children start when the group executes; until then its queue is suspended.
/// - Children may be added while the group runs, until it starts finishing, and children may
///   produce more children (`produce(_:)`); the group waits for all of them.
/// - The group finishes after every child has finished: failed with a `GroupError` when a
///   child failed (see `child(_:willFinishWithError:)`), cancelled when it was cancelled.
/// - Cancelling the group cancels every child, and children added later; the group finishes
///   once they have all finished.
/// - Its `maxConcurrentCount` and `isSuspended` act on its children.
/// - Its events never overlap: each child's will-finish (`child(_:willFinishWithError:)`)
///   and did-finish are events of the group, run one at a time with its own (a finishing
///   child waits until the group has heard its will-finish). Observers attached before the
///   group executes hear will-add and did-add, as it executes, for the children added before.
/// - Exclusivity: the categories a group holds are held from its start until it finishes;
///   a descendant may ask for the same categories and gets them from the group's own table,
///   so siblings still exclude each other and a group never deadlocks with its children.
open class GroupProcedure: Procedure, ProcedureQueueDelegate, @unchecked Sendable {
    // @unchecked Sendable: the group's own state is in `group`, behind a Mutex.

    struct GroupState {
        var children: [Procedure] = []
        var unfinishedChildren = 0
        var executed = false
        var finishingStarted = false
        var errors: [GroupError.ChildError] = []
        var userSuspended = false
        var childExclusivity: LocalExclusivityManager?
        var rejected: Set<ObjectIdentifier> = []
        /// Children added before the group executed: announced (will-add, did-add) as it executes.
        var unannounced: [Procedure] = []
        /// Children whose will-add was announced as they were added, awaiting their did-add.
        var announcedAtAdd: Set<ObjectIdentifier> = []
        /// While the group cancels its children, its queue stays suspended.
        var cancelling = false
        /// Set by the event after execute() that announces the first children and resumes the queue.
        var childrenStarted = false
        var transformChildError: (@Sendable (Procedure, inout (any Error)?) -> Void)?

        /// Whether the children's queue must be suspended. The group decides it from its own
        /// state, never from reading the queue back, so that racing calls cannot leave the
        /// queue suspended for good.
        var queueShouldBeSuspended: Bool { !childrenStarted || userSuspended || cancelling }
    }

    let groupState = Mutex(GroupState())

    /// The queue the children run on.
    public let queue: ProcedureQueue

    public init(children: [Procedure], maxConcurrentCount: Int = ProcedureQueue.unlimited) {
        queue = ProcedureQueue(name: "GroupProcedure", maxConcurrentCount: maxConcurrentCount, isSuspended: true)
        super.init()
        isAutomaticFinishingDisabled = true
        queue.delegate = self
        add(children: children)
    }

    public convenience init(_ children: Procedure...) { self.init(children: children) }

    /// Every child added so far, in the order they were added.
    public var children: [Procedure] { groupState.withLock { $0.children } }

    /// The errors collected from children so far.
    public var childErrors: [GroupError.ChildError] { groupState.withLock { $0.errors } }

    /// How many children may execute at once.
    public var maxConcurrentCount: Int {
        get { queue.maxConcurrentCount }
        set { queue.maxConcurrentCount = newValue }
    }

    /// While true, the group starts no further children.
    public var isSuspended: Bool {
        get { groupState.withLock { $0.userSuspended } }
        set { updateGroupState { $0.userSuspended = newValue } }
    }

    /// Changes the group's state and applies the queue suspension it implies, under the
    /// group's lock; the children released by a resume move on after the lock is let go.
    private func updateGroupState(_ change: (inout GroupState) -> Void) {
        let released = groupState.withLock { state -> [Procedure]? in
            change(&state)
            return queue.setSuspended(state.queueShouldBeSuspended)
        }
        if let released { queue.finishResuming(released) }
    }

    /// Adds a child. Allowed until the group starts finishing; a child added after that is
    /// cancelled with an `invalidUse` error and not waited for.
    open func add(child: Procedure) { queue.add(child) }

    public func add(children: [Procedure]) {
        for child in children { add(child: child) }
    }

    /// Adds a child, then releases `event` once the group's observers have heard will-add
    /// and did-add for it (ProcedureKit's `addChild(_:before:)`): the held event, of any
    /// procedure, comes after the child is in the group. For a group that has not executed
    /// yet, whose observers hear of its children as it executes, the event is released once
    /// the child is added.
    public final func add(child: Procedure, before event: PendingEvent?) {
        add(child: child)
        guard let event else { return }
        // Behind the child's will-add and did-add, which are the group's events too.
        runEvent { event.release() }
    }

    /// Called with each child as it will finish, and the error the group attributes to it
    /// (nil for a success), before `child(_:willFinishWithError:)`; it may change the error
    /// (clear it, so the group does not fail for this child, or replace it). Runs as one of
    /// the group's events (ProcedureKit's `transformChildErrorsBlock`; one error per child
    /// in Cohort, as a procedure ends with one error).
    public var transformChildErrorBlock: (@Sendable (Procedure, inout (any Error)?) -> Void)? {
        get { groupState.withLock { $0.transformChildError } }
        set { groupState.withLock { $0.transformChildError = newValue } }
    }

    // MARK: Hooks

    /// Called as each child finishes with the error it failed with (or the reason it was
    /// cancelled with, unless the group itself was cancelled). The default collects the error;
    /// override to decide differently (ProcedureKit's branching example: add a recovery
    /// child instead, without calling super, and the group will not fail).
    open func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
        if let error { collect(error, from: child) }
    }

    /// Records a child's error, so the group fails with it.
    public final func collect(_ error: any Error, from child: Procedure) {
        let name = child.name
        groupState.withLock { $0.errors.append(GroupError.ChildError(child: name, error: error)) }
    }

    /// Called once every child has finished, just before the group finishes. The default
    /// finishes failed with the collected errors, or succeeded.
    open func groupDidFinishChildren(with errors: [GroupError.ChildError]) {
        finish(with: errors.isEmpty ? nil : GroupError(errors: errors))
    }

    // MARK: Procedure

    open override func execute() {
        let unannounced = groupState.withLock { state -> [Procedure] in
            state.executed = true
            defer { state.unannounced = [] }
            return state.unannounced
        }
        // Starting the children is the group's next event, right after this one: it first
        // announces the children added before now to the observers the group has now, so
        // they hear of each before it can start (later children are announced as they are
        // added), then resumes the children's queue.
        runEvent {
            if !unannounced.isEmpty {
                let observers = self.observers
                for child in unannounced {
                    for observer in observers {
                        observer.deliver(waits: true) { observer.procedure(self, willAdd: child) }
                    }
                    for observer in observers {
                        observer.deliver(waits: false) { observer.procedure(self, didAdd: child) }
                    }
                }
            }
            self.updateGroupState { $0.childrenStarted = true }
            // Children finish in the group's own events, which never overlap this one.
            if self.groupState.withLock({ $0.unfinishedChildren == 0 }) { self.finishIfDone() }
        }
    }

    open override var executesWhenCancelledBeforeStart: Bool { true }

    open override func procedureDidCancel(with reason: (any Error)?) {
        // Hold every start while the children are cancelled one by one, so that a child
        // freed by another's cancellation (a lock released, a dependency finished) cannot
        // start executing before its own cancel reaches it. The hold is part of the group's
        // state, not a suspension read back from the queue: a read racing execute()'s resume
        // once left the queue suspended for good, and the group never finished.
        updateGroupState { $0.cancelling = true }
        queue.cancelAll(with: ProcedureError(.parentCancelled, "parent group \(name) was cancelled"))
        updateGroupState { $0.cancelling = false }
    }

    override func willEnqueue(on parentQueue: ProcedureQueue) {
        useExclusivityManager(parentQueue.exclusivityManager)
    }

    /// Gives the group's queue the manager of the queue the group joins, and passes it down
    /// to the groups already nested in it: they were added to this group's queue before it
    /// had that manager, and would otherwise keep the default.
    private func useExclusivityManager(_ manager: any ExclusivityManager) {
        queue.exclusivityManager = manager
        for case let child as GroupProcedure in children { child.useExclusivityManager(manager) }
    }

    /// The categories this group holds while it runs.
    var heldCategories: Set<String> { Set(fencingTokens.keys) }

    /// The table that grants this group's held categories to its descendants.
    var childExclusivity: LocalExclusivityManager {
        groupState.withLock { state in
            if let manager = state.childExclusivity { return manager }
            let manager = LocalExclusivityManager()
            state.childExclusivity = manager
            return manager
        }
    }

    // MARK: Children bookkeeping (from the group's queue delegate)

    func childWillBeAdded(_ child: Procedure) -> Bool {
        let (accepted, announce) = groupState.withLock { state -> (Bool, Bool) in
            guard !state.finishingStarted else {
                state.rejected.insert(ObjectIdentifier(child))
                return (false, false)
            }
            state.children.append(child)
            state.unfinishedChildren += 1
            if state.executed {
                state.announcedAtAdd.insert(ObjectIdentifier(child))
            } else {
                state.unannounced.append(child)
            }
            return (true, state.executed)
        }
        child.core.withLock { $0.parent = self }
        if !accepted {
            log.error("child \(child.name) added after group \(name) started finishing; cancelled")
            child.cancel(
                with: ProcedureError(.invalidUse, "\(child.name) was added to \(name) after it started finishing"))
            return false
        }
        if isCancelled { child.cancel(with: ProcedureError(.parentCancelled, "parent group \(name) was cancelled")) }
        if announce {
            runEvent {
                for observer in self.observers {
                    observer.deliver(waits: true) { observer.procedure(self, willAdd: child) }
                }
            }
        }
        return true
    }

    func childWasAdded(_ child: Procedure) {
        guard groupState.withLock({ $0.announcedAtAdd.remove(ObjectIdentifier(child)) != nil }) else { return }
        runEvent {
            for observer in self.observers {
                observer.deliver(waits: false) { observer.procedure(self, didAdd: child) }
            }
        }
    }

    /// A child's will-finish, as an event of the group: the child waits until the group has
    /// heard it, so `child(_:willFinishWithError:)` runs before the child's dependents can
    /// start, and never at the same time as another of the group's events.
    func childWillFinish(_ child: Procedure, with outcome: ProcedureOutcome) {
        // Usually the group's serialiser is free, or soon is: run the event here, with no
        // closure to allocate and no thread to wake.
        if tryEnterEvents(yields: 4) {
            childWillFinishEvent(child, with: outcome)
            drainEvents()
        } else {
            runEventAndWait { self.childWillFinishEvent(child, with: outcome) }
        }
    }

    private func childWillFinishEvent(_ child: Procedure, with outcome: ProcedureOutcome) {
        var error: (any Error)?
        switch outcome {
        case .succeeded:
            error = nil
        case .failed(let failure):
            error = failure
        case .cancelled(let reason):
            // A child cancelled because the group was cancelled reports nothing new.
            error = isCancelled ? nil : reason
        }
        if let transform = groupState.withLock({ $0.transformChildError }) { transform(child, &error) }
        self.child(child, willFinishWithError: error)
    }

    /// A child's did-finish. The count is kept at once: the child's will-finish has been
    /// heard by now (or is queued ahead, when a group event finished the child). Only the
    /// last child's posts an event, the one that finishes the group, so that
    /// `groupDidFinishChildren(with:)` runs after every queued will-finish and never at the
    /// same time as another of the group's events. (It re-checks the count, in case a child
    /// was added meanwhile.)
    func childDidFinish(_ child: Procedure) {
        let done = groupState.withLock { state -> Bool in
            if state.rejected.remove(ObjectIdentifier(child)) != nil { return false }
            state.unfinishedChildren -= 1
            return state.unfinishedChildren == 0 && state.childrenStarted
        }
        if done { runEvent { self.finishIfDone() } }
    }

    private func finishIfDone() {
        let errors = groupState.withLock { state -> [GroupError.ChildError]? in
            guard state.childrenStarted, state.unfinishedChildren == 0, !state.finishingStarted else { return nil }
            state.finishingStarted = true
            return state.errors
        }
        if let errors { groupDidFinishChildren(with: errors) }
    }
}

// MARK: ProcedureQueueDelegate

extension GroupProcedure {
    // The group is its own queue's delegate; calls about any other queue are ignored.

    public func procedureQueue(_ queue: ProcedureQueue, willAdd procedure: Procedure) {
        guard queue === self.queue else { return }
        _ = childWillBeAdded(procedure)
    }

    public func procedureQueue(_ queue: ProcedureQueue, didAdd procedure: Procedure) {
        guard queue === self.queue else { return }
        childWasAdded(procedure)
    }

    public func procedureQueue(_ queue: ProcedureQueue, willFinish procedure: Procedure, with outcome: ProcedureOutcome)
    {
        guard queue === self.queue else { return }
        childWillFinish(procedure, with: outcome)
    }

    public func procedureQueue(_ queue: ProcedureQueue, didFinish procedure: Procedure, with outcome: ProcedureOutcome)
    {
        guard queue === self.queue else { return }
        childDidFinish(procedure)
    }
}
