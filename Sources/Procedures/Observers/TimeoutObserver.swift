import Dispatch

/// Cancels a procedure with a `timedOut` error if it is still running `duration` after it
/// starts executing (or, with `until:`, at an instant of the continuous clock). With
/// several timeouts on one procedure the earliest wins (the first cancellation's reason
/// stays); none fires once the procedure has finished. A zero or negative duration (an
/// instant already passed) cancels the procedure as it starts.
public final class TimeoutObserver: ProcedureObserver {
    private enum Deadline {
        case after(Duration)
        case at(ContinuousClock.Instant)
    }

    private let deadline: Deadline
    /// One timer per observed procedure: the same observer may be attached to several.
    private let timers = Protected<[ObjectIdentifier: DispatchWorkItem]>([:])

    /// Times out `duration` after the procedure starts executing.
    public init(by duration: Duration) { deadline = .after(duration) }

    /// Times out at `instant`, whenever the procedure started.
    public init(until instant: ContinuousClock.Instant) { deadline = .at(instant) }

    /// The budget from the procedure's start: the duration given, or what is left until the
    /// instant given (at the time it is read).
    public var duration: Duration {
        switch deadline {
        case .after(let duration): duration
        case .at(let instant): instant - .now
        }
    }

    public func will(execute procedure: Procedure) {
        let duration = self.duration
        guard duration > .zero else {
            procedure.cancel(with: ProcedureError.timedOut(after: max(duration, .zero)))
            return
        }
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
