import Dispatch

/// Cancels a procedure with a `timedOut` error if it is still running `duration` after it
/// starts executing. With several timeouts on one procedure the earliest wins (the first
/// cancellation's reason stays); none fires once the procedure has finished. A zero or
/// negative duration cancels the procedure as it starts.
public final class TimeoutObserver: ProcedureObserver {
    public let duration: Duration
    private let timer = Protected<DispatchWorkItem?>(nil)

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
        timer.value = item
        DispatchQueue.global().asyncAfter(deadline: .now() + duration.dispatchInterval, execute: item)
    }

    public func will(finish procedure: Procedure, with outcome: ProcedureOutcome) {
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }
}
