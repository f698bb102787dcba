import Dispatch

/// How long a `DelayProcedure` waits (ProcedureKit's `Delay`): for a duration, or until an
/// instant of the continuous clock.
public enum Delay: Sendable, Equatable, Comparable {
    /// Waits this long from when the procedure executes; zero or less does not wait.
    case by(Duration)
    /// Waits until this instant; one already passed does not wait.
    case until(ContinuousClock.Instant)

    /// The wait left at `now`, never negative.
    public func remaining(at now: ContinuousClock.Instant = .now) -> Duration {
        switch self {
        case .by(let duration): max(duration, .zero)
        case .until(let instant): max(instant - now, .zero)
        }
    }

    /// Orders delays by the wait they leave now.
    public static func < (lhs: Delay, rhs: Delay) -> Bool {
        let now = ContinuousClock.now
        return lhs.remaining(at: now) < rhs.remaining(at: now)
    }
}

/// Waits, then succeeds. Cancelling it while it waits finishes it at once.
///
/// Its delay may be given at creation (`DelayProcedure(by:)`, `DelayProcedure(until:)`) or
/// injected, as its input, from another procedure's output (a `Delay`, or a `Duration`
/// through `injectResult(from:via:)`); one that starts without a delay fails with a
/// `requirementNotSatisfied` error.
open class DelayProcedure: Procedure, InputProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds a `Protected` input and a `Protected` timer; the rest is Procedure's.
    private let given: Protected<Pending<Delay>>
    private let timer = Protected<DispatchWorkItem?>(nil)

    /// Waits `delay` once it executes.
    public init(by delay: Duration) {
        given = Protected(.ready(.by(delay)))
        super.init()
    }

    /// Waits until `instant` (of the continuous clock: `.now + .seconds(5)`).
    public init(until instant: ContinuousClock.Instant) {
        given = Protected(.ready(.until(instant)))
        super.init()
    }

    /// Waits for a delay given later, as its input (injected, say).
    public init(delay: Delay? = nil) {
        given = Protected(Pending(delay))
        super.init()
    }

    /// The delay, once it is known.
    public var input: Pending<Delay> {
        get { given.value }
        set { given.value = newValue }
    }

    /// The wait given at creation or injected, as a duration from when it executes; nil
    /// while unknown (an `until` delay counts from now).
    public var delay: Duration? { given.value.value?.remaining() }

    open override func execute() {
        guard let delay = given.value.value else {
            finish(with: ProcedureError(.requirementNotSatisfied, "\(name) started without a delay"))
            return
        }
        let wait = delay.remaining()
        guard wait > .zero else {
            finish()
            return
        }
        let item = DispatchWorkItem { [weak self] in self?.finish() }
        timer.value = item
        DispatchQueue.global().asyncAfter(deadline: .now() + wait.dispatchInterval, execute: item)
    }

    open override func procedureDidCancel(with reason: (any Error)?) {
        timer.value?.cancel()
    }
}

extension Duration {
    /// The duration as a Dispatch interval, in nanoseconds.
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
