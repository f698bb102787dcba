/// What a `RetryProcedure`'s handler decides after a failed attempt.
public enum RetryDecision<Attempt: Procedure> {
    /// Make the next attempt as usual.
    case retry
    /// Make this attempt next instead.
    case retryWith(Attempt)
    /// Stop, finishing with the failure.
    case stop
}

/// A failed attempt, as a `RetryProcedure`'s handler sees it.
public struct RetryFailure<Attempt: Procedure> {
    public let attempt: Int
    public let procedure: Attempt
    public let error: any Error
}

/// Runs a procedure until it succeeds, at most `maxAttempts` times (ProcedureKit's
/// `RetryProcedure`), waiting between attempts as `wait` says. After a failure the handler,
/// if any, decides whether and how to try again. Ends succeeded with the first successful
/// attempt, or failed with the last attempt's error; `attemptErrors` holds every error.
open class RetryProcedure<Attempt: Procedure>: RepeatProcedure<Attempt>, @unchecked Sendable {
    // @unchecked Sendable: adds an immutable handler and a `Protected` list; the rest is RepeatProcedure's.
    public typealias Handler = @Sendable (RetryFailure<Attempt>) -> RetryDecision<Attempt>

    private let handler: Handler?
    private let errors = Protected<[any Error]>([])

    public init(
        maxAttempts: Int, wait: WaitStrategy = .immediate, handler: Handler? = nil,
        body: @escaping RepeatProcedure<Attempt>.Body
    ) {
        self.handler = handler
        super.init(maxCount: maxAttempts, wait: wait, body: body)
    }

    /// Takes the attempts from `iterator` (ProcedureKit's `RetryProcedure(max:wait:iterator:retry:)`).
    public convenience init<Attempts: IteratorProtocol>(
        maxAttempts: Int, wait: WaitStrategy = .immediate, iterator: Attempts, handler: Handler? = nil
    ) where Attempts.Element == Attempt {
        let attempts = IteratorBox(AnyIterator(iterator))
        self.init(maxAttempts: maxAttempts, wait: wait, handler: handler) { _ in attempts.next() }
    }

    /// The error of every failed attempt so far, in order.
    public var attemptErrors: [any Error] { errors.value }

    open override func shouldContinue(after outcome: ProcedureOutcome) -> Bool { outcome.isFailed }

    open override func nextAttempt(number: Int, after previous: Attempt?) -> Attempt? {
        guard let previous, let handler, let error = previous.outcome?.error else {
            return super.nextAttempt(number: number, after: previous)
        }
        switch handler(RetryFailure(attempt: number - 1, procedure: previous, error: error)) {
        case .retry: return super.nextAttempt(number: number, after: previous)
        case .retryWith(let attempt): return attempt
        case .stop: return nil
        }
    }

    open override func child(_ child: Procedure, willFinishWithError error: (any Error)?) {
        if child === current, case .failed(let error)? = child.outcome { errors.withLock { $0.append(error) } }
        super.child(child, willFinishWithError: error)
    }

    /// Finishes with the last attempt's own error, not a `GroupError` around it.
    open override func groupDidFinishChildren(with errors: [GroupError.ChildError]) {
        if errors.count == 1, let last = errors.first, last.child == current?.name {
            finish(with: last.error)
        } else {
            super.groupDidFinishChildren(with: errors)
        }
    }
}
