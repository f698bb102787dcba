import Dispatch

/// Where an observer's callbacks run.
public enum ObserverDelivery: Sendable {
    /// On the thread where the event happens, before the procedure moves on.
    case immediate
    /// On a dispatch queue. "Will" events (`will(execute:)`, `will(finish:)`) wait for the
    /// callback, so the procedure does not move on before the observer has seen it; "did"
    /// events are delivered asynchronously, in order.
    case on(DispatchQueue)
}

/// Watches a procedure's life. Every method has an empty default, so an observer
/// implements only what it needs. Callbacks for one procedure never run at the same time
/// as each other when delivery is `.immediate` and events come from the engine.
public protocol ProcedureObserver: Sendable {
    /// Where callbacks run; `.immediate` by default.
    var delivery: ObserverDelivery { get }
    func didAttach(to procedure: Procedure)
    func will(execute procedure: Procedure)
    func did(execute procedure: Procedure)
    func did(cancel procedure: Procedure, with error: (any Error)?)
    /// The procedure is about to add (produce) another procedure, e.g. a group adding a child.
    func procedure(_ procedure: Procedure, willAdd newProcedure: Procedure)
    func procedure(_ procedure: Procedure, didAdd newProcedure: Procedure)
    func will(finish procedure: Procedure, with outcome: ProcedureOutcome)
    func did(finish procedure: Procedure, with outcome: ProcedureOutcome)
}

extension ProcedureObserver {
    public var delivery: ObserverDelivery { .immediate }
    public func didAttach(to procedure: Procedure) {}
    public func will(execute procedure: Procedure) {}
    public func did(execute procedure: Procedure) {}
    public func did(cancel procedure: Procedure, with error: (any Error)?) {}
    public func procedure(_ procedure: Procedure, willAdd newProcedure: Procedure) {}
    public func procedure(_ procedure: Procedure, didAdd newProcedure: Procedure) {}
    public func will(finish procedure: Procedure, with outcome: ProcedureOutcome) {}
    public func did(finish procedure: Procedure, with outcome: ProcedureOutcome) {}
}

extension ProcedureObserver {
    /// Runs `event` where this observer wants it: waiting for it when `waits` is true.
    func deliver(waits: Bool, _ event: @escaping @Sendable () -> Void) {
        switch delivery {
        case .immediate:
            event()
        case .on(let queue):
            if waits { queue.sync(execute: event) } else { queue.async(execute: event) }
        }
    }
}

/// An observer made of closures, ProcedureKit's `BlockObserver`.
public struct BlockObserver: ProcedureObserver {
    public var delivery: ObserverDelivery
    public var didAttach: (@Sendable (Procedure) -> Void)?
    public var willExecute: (@Sendable (Procedure) -> Void)?
    public var didExecute: (@Sendable (Procedure) -> Void)?
    public var didCancel: (@Sendable (Procedure, (any Error)?) -> Void)?
    public var willAdd: (@Sendable (Procedure, Procedure) -> Void)?
    public var didAdd: (@Sendable (Procedure, Procedure) -> Void)?
    public var willFinish: (@Sendable (Procedure, ProcedureOutcome) -> Void)?
    public var didFinish: (@Sendable (Procedure, ProcedureOutcome) -> Void)?

    public init(
        delivery: ObserverDelivery = .immediate,
        didAttach: (@Sendable (Procedure) -> Void)? = nil,
        willExecute: (@Sendable (Procedure) -> Void)? = nil,
        didExecute: (@Sendable (Procedure) -> Void)? = nil,
        didCancel: (@Sendable (Procedure, (any Error)?) -> Void)? = nil,
        willAdd: (@Sendable (Procedure, Procedure) -> Void)? = nil,
        didAdd: (@Sendable (Procedure, Procedure) -> Void)? = nil,
        willFinish: (@Sendable (Procedure, ProcedureOutcome) -> Void)? = nil,
        didFinish: (@Sendable (Procedure, ProcedureOutcome) -> Void)? = nil
    ) {
        self.delivery = delivery
        self.didAttach = didAttach
        self.willExecute = willExecute
        self.didExecute = didExecute
        self.didCancel = didCancel
        self.willAdd = willAdd
        self.didAdd = didAdd
        self.willFinish = willFinish
        self.didFinish = didFinish
    }

    public func didAttach(to procedure: Procedure) { didAttach?(procedure) }
    public func will(execute procedure: Procedure) { willExecute?(procedure) }
    public func did(execute procedure: Procedure) { didExecute?(procedure) }
    public func did(cancel procedure: Procedure, with error: (any Error)?) { didCancel?(procedure, error) }
    public func procedure(_ procedure: Procedure, willAdd newProcedure: Procedure) { willAdd?(procedure, newProcedure) }
    public func procedure(_ procedure: Procedure, didAdd newProcedure: Procedure) { didAdd?(procedure, newProcedure) }
    public func will(finish procedure: Procedure, with outcome: ProcedureOutcome) { willFinish?(procedure, outcome) }
    public func did(finish procedure: Procedure, with outcome: ProcedureOutcome) { didFinish?(procedure, outcome) }
}
