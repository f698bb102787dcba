/// A group whose children run one after another, in the order they were added
/// (CompositeOperations' cascade). When a child fails or is cancelled, the children after
/// it are cancelled and never execute: the group finishes failed with that child's error,
/// or cancelled. Nest sequences and parallel groups in each other freely.
open class SequenceProcedure: GroupProcedure, @unchecked Sendable {
    // @unchecked Sendable: its one added property is a `Protected` (locked); the rest is GroupProcedure's.
    private let chain = Protected<(last: Procedure?, stopped: Bool)>((nil, false))

    public override init(children: [Procedure], maxConcurrentCount: Int = ProcedureQueue.unlimited) {
        super.init(children: [], maxConcurrentCount: 1)
        add(children: children)
    }

    public convenience init(_ children: Procedure...) { self.init(children: children) }

    /// Appends a child after the last one added.
    public override func add(child: Procedure) {
        let (previous, stopped) = chain.withLock { chain in
            defer { chain.last = child }
            return (chain.last, chain.stopped)
        }
        if let previous { child.addDependency(previous) }
        if stopped { child.cancel() }
        super.add(child: child)
    }

    open override func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
        super.child(child, willFinishWithError: error)
        guard let outcome = child.outcome, !outcome.isSucceeded else { return }
        let alreadyStopped = chain.withLock { chain in
            defer { chain.stopped = true }
            return chain.stopped
        }
        guard !alreadyStopped else { return }
        if outcome.isCancelled && !isCancelled {
            cancel(with: outcome.error)
        } else {
            for later in children where !later.isFinished && later !== child { later.cancel() }
        }
    }
}
