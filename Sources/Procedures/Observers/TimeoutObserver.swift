import Dispatch

/// Cancels a procedure with a `timedOut` error if it is still running `duration` after it
/// starts executing. With several timeouts on one procedure the earliest wins (the first
/// cancellation's reason stays); none fires once the procedure has finished. A zero or
/// negative duration cancels the procedure as it starts.
public final class TimeoutObserver: ProcedureObserver {
    public let duration: Duration
    /// One timer per observed procedure: the same observer may be attached to several.
    private let timers = Protected<[ObjectIdentifier: DispatchWorkItem]>([:])

    public init(by duration: Duration) { self.duration = duration }

    public func will(execute procedure: Procedure) {
        guard duration > .zero else {
            procedure.cancel(with: ProcedureError.timedOut(after: duration))
            return
        }
        let duration = self.duration
        let item = DispatchWorkItem { [weak procedure] in
            procedure?.cancel(with: ProcedureError.timedOut(after: duration))
        }
        timers.withLock { $0[ObjectIdentifier(procedure)] = item }
        DispatchQueue.global().asyncAfter(deadline: .now() + duration.dispatchInterval, execute: item)
    }

    public func will(finish procedure: Procedure, with outcome: ProcedureOutcome) {
        timers.withLock { $0.removeValue(forKey: ObjectIdentifier(procedure)) }?.cancel()
    }
}
