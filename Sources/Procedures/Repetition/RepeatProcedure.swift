/// Runs a procedure again and again (ProcedureKit's `RepeatProcedure`): `body(n)` makes
/// attempt n; the next attempt is added when the previous one succeeded, after the wait of
/// `wait`, until `maxCount` attempts have run or `body` returns nil. A failed attempt ends
/// the repetition with its error. Cancelling the repeat cancels the running attempt and
/// starts no other.
open class RepeatProcedure<Attempt: Procedure>: GroupProcedure, @unchecked Sendable {
    // @unchecked Sendable: adds immutable `let`s and a `Protected` progress record; the rest is GroupProcedure's.
    public typealias Body = @Sendable (_ attempt: Int) -> Attempt?

    public let maxCount: Int?
    public let wait: WaitStrategy
    private let body: Body
    private let progress = Protected<(count: Int, current: Attempt?)>((0, nil))

    public init(maxCount: Int? = nil, wait: WaitStrategy = .immediate, body: @escaping Body) {
        precondition(maxCount.map { $0 > 0 } ?? true, "maxCount must be at least 1")
        self.maxCount = maxCount
        self.wait = wait
        self.body = body
        super.init(children: [])
    }

    /// How many attempts have been made so far.
    public var count: Int { progress.value.count }

    /// The latest attempt.
    public var current: Attempt? { progress.value.current }

    /// Whether to make another attempt after one ended with `outcome`. Repeats continue after
    /// successes; `RetryProcedure` continues after failures.
    open func shouldContinue(after outcome: ProcedureOutcome) -> Bool { outcome.isSucceeded }

    /// The next attempt to run after `previous` ended; by default `body(n)`.
    open func nextAttempt(number: Int, after previous: Attempt?) -> Attempt? { body(number) }

    open override func execute() {
        if !isCancelled { _ = addNextAttempt(after: nil) }
        super.execute()
    }

    /// Adds the next attempt, after a delay if the strategy asks for one. Returns false when
    /// there is none (limit reached, or the body ended the sequence).
    func addNextAttempt(after previous: Attempt?) -> Bool {
        let number = progress.value.count + 1
        if let maxCount, number > maxCount { return false }
        guard let attempt = nextAttempt(number: number, after: previous) else { return false }
        progress.value = (number, attempt)
        let delay = wait.delay(beforeAttempt: number)
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
