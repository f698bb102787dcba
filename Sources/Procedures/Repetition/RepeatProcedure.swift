/// One step of a `RepeatProcedure`'s iterator (ProcedureKit's `RepeatProcedurePayload`):
/// the attempt, a wait before it that overrides the repeat's strategy, and a configure block
/// that replaces the repeat's own from this attempt on.
public struct RepeatPayload<Attempt: Procedure>: Sendable {
    public typealias Configure = @Sendable (Attempt) -> Void

    public let attempt: Attempt
    public let wait: Duration?
    public let configure: Configure?

    public init(_ attempt: Attempt, wait: Duration? = nil, configure: Configure? = nil) {
        self.attempt = attempt
        self.wait = wait
        self.configure = configure
    }
}

/// Runs a procedure again and again (ProcedureKit's `RepeatProcedure`): `body(n)` makes
/// attempt n (or an iterator gives the attempts); the next attempt is added when the
/// previous one succeeded, after the wait of `wait`, until `maxCount` attempts have run or
/// `body` returns nil. A failed attempt ends the repetition with its error. Cancelling the
/// repeat cancels the running attempt and starts no other.
///
/// Each attempt goes through the configure block (`appendConfigureBlock`,
/// `replaceConfigureBlock`) before it is added. When `Attempt` takes an input, so does the
/// repeat: an input set or injected on it is given to every attempt; when `Attempt` has an
/// output, the repeat's is the latest attempt's.
open class RepeatProcedure<Attempt: Procedure>: GroupProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds immutable `let`s and `Protected` state; the rest is GroupProcedure's.
    public typealias Body = @Sendable (_ attempt: Int) -> Attempt?
    public typealias Payload = RepeatPayload<Attempt>

    public let maxCount: Int?
    public let wait: WaitStrategy
    private let source: @Sendable (_ attempt: Int) -> Payload?
    private let progress = Protected<(count: Int, current: Attempt?)>((0, nil))
    private let configureBlock = Protected<Payload.Configure?>(nil)
    /// The wait and configure block of the payload `nextAttempt` just took from `source`.
    private let taken = Protected<(wait: Duration?, configure: Payload.Configure?)>((nil, nil))
    /// An input given to the repeat itself (type-erased `Pending<Attempt.Input>`).
    let givenInput = Protected<(any Sendable)?>(nil)

    public init(maxCount: Int? = nil, wait: WaitStrategy = .immediate, body: @escaping Body) {
        precondition(maxCount.map { $0 > 0 } ?? true, "maxCount must be at least 1")
        self.maxCount = maxCount
        self.wait = wait
        self.source = { body($0).map { Payload($0) } }
        super.init(children: [])
    }

    /// Takes the attempts from `iterator` (ProcedureKit's `RepeatProcedure(max:wait:iterator:)`).
    public convenience init<Attempts: IteratorProtocol>(
        maxCount: Int? = nil, wait: WaitStrategy = .immediate, iterator: Attempts
    ) where Attempts.Element == Attempt {
        let attempts = IteratorBox(AnyIterator(iterator))
        self.init(maxCount: maxCount, wait: wait) { _ in attempts.next() }
    }

    /// Takes payloads from `iterator`: each attempt with its own wait (instead of the
    /// strategy's) and, from the second on, a configure block that replaces the repeat's.
    public init<Payloads: IteratorProtocol>(maxCount: Int? = nil, wait: WaitStrategy = .immediate, payloads: Payloads)
    where Payloads.Element == Payload {
        precondition(maxCount.map { $0 > 0 } ?? true, "maxCount must be at least 1")
        self.maxCount = maxCount
        self.wait = wait
        let payloads = IteratorBox(AnyIterator(payloads))
        self.source = { _ in payloads.next() }
        super.init(children: [])
    }

    /// How many attempts have been made so far.
    public var count: Int { progress.value.count }

    /// The latest attempt.
    public var current: Attempt? { progress.value.current }

    /// Runs the configure block on `attempt` (as the repeat does on each attempt it adds).
    public func configure(_ attempt: Attempt) {
        configureBlock.value?(attempt)
    }

    /// Adds `block` after the configure block so far.
    public func appendConfigureBlock(_ block: @escaping Payload.Configure) {
        configureBlock.withLock { existing in
            if let before = existing {
                existing = {
                    before($0)
                    block($0)
                }
            } else {
                existing = block
            }
        }
    }

    /// Replaces the configure block.
    public func replaceConfigureBlock(_ block: @escaping Payload.Configure) {
        configureBlock.value = block
    }

    /// Whether to make another attempt after one ended with `outcome`. Repeats continue after
    /// successes; `RetryProcedure` continues after failures.
    open func shouldContinue(after outcome: ProcedureOutcome) -> Bool { outcome.isSucceeded }

    /// The next attempt to run after `previous` ended; by default `body(n)` (or the iterator's next).
    open func nextAttempt(number: Int, after previous: Attempt?) -> Attempt? {
        guard let payload = source(number) else { return nil }
        taken.value = (payload.wait, payload.configure)
        return payload.attempt
    }

    open override func execute() {
        if !isCancelled { _ = addNextAttempt(after: nil) }
        super.execute()
    }

    /// Adds the next attempt, after a delay if the strategy (or its payload) asks for one.
    /// Returns false when there is none (limit reached, or the body ended the sequence).
    func addNextAttempt(after previous: Attempt?) -> Bool {
        let number = progress.value.count + 1
        if let maxCount, number > maxCount { return false }
        taken.value = (nil, nil)
        guard let attempt = nextAttempt(number: number, after: previous) else { return false }
        let (payloadWait, payloadConfigure) = taken.value
        // As in ProcedureKit, the first payload's block does not replace the repeat's own.
        if number > 1, let payloadConfigure { replaceConfigureBlock(payloadConfigure) }
        configure(attempt)
        progress.value = (number, attempt)
        let delay = payloadWait ?? wait.delay(beforeAttempt: number)
        if delay > .zero {
            let pause = DelayProcedure(by: delay)
            pause.name = "\(name) wait before attempt \(number)"
            attempt.addDependency(pause)
            add(child: pause)
        }
        add(child: attempt)
        return true
    }

    open override func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
        guard let attempt = child as? Attempt, attempt === current, let outcome = child.outcome else {
            super.child(child, willFinishWithError: error)
            return
        }
        if !isCancelled, shouldContinue(after: outcome), addNextAttempt(after: attempt) {
            attemptWasSuperseded(attempt, error: error)
            return
        }
        super.child(child, willFinishWithError: error)
    }

    /// Called for an attempt that ended and was followed by another; its error is not collected.
    func attemptWasSuperseded(_ attempt: Attempt, error: (any Error)?) {}
}

extension RepeatProcedure: InputProcedure where Attempt: InputProcedure {
    /// The input given to every attempt: set (or injected) on the repeat, it goes to the
    /// current attempt and, through the configure block, to every later one.
    public var input: Pending<Attempt.Input> {
        get { current?.input ?? (givenInput.value as? Pending<Attempt.Input>) ?? .pending }
        set {
            givenInput.value = newValue
            current?.input = newValue
            appendConfigureBlock { $0.input = newValue }
        }
    }
}

extension RepeatProcedure: OutputProcedure where Attempt: OutputProcedure {
    /// The output of the latest attempt.
    public var output: Pending<ProcedureResult<Attempt.Output>> {
        get { current?.output ?? .pending }
        set { current?.output = newValue }
    }
}

/// An iterator behind a lock, so a repeat can take attempts from it on any thread.
final class IteratorBox<Base: IteratorProtocol>: @unchecked Sendable {
    // @unchecked Sendable: `base` is touched only inside `lock`.
    private let lock = Protected(())
    private var base: Base

    init(_ base: Base) { self.base = base }

    func next() -> Base.Element? { lock.withLock { _ in base.next() } }
}
