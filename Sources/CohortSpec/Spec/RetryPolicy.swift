/// How often and how patiently a failed procedure is tried again.
public struct RetryPolicy: Sendable, Hashable {
    /// How the wait between attempts grows.
    public enum Strategy: String, Sendable, Hashable, Codable, CaseIterable {
        /// The same `backoff` before every retry.
        case fixed
        /// `backoff`, then twice that, four times… up to `maxBackoff`.
        case exponential
    }

    /// Attempts in all, the first included: 3 means up to two retries. At least 1.
    public var attempts: Int
    /// The wait before the first retry.
    public var backoff: Duration
    public var strategy: Strategy
    /// The longest wait, for `exponential`; `nil` for no cap.
    public var maxBackoff: Duration?
    /// How much of each wait is random, from 0 (none) to 1: the wait is drawn from
    /// `[wait × (1 − jitter), wait]`, so retries of many children spread out.
    public var jitter: Double

    public init(
        attempts: Int, backoff: Duration = .zero, strategy: Strategy = .fixed, maxBackoff: Duration? = nil,
        jitter: Double = 0
    ) {
        self.attempts = attempts
        self.backoff = backoff
        self.strategy = strategy
        self.maxBackoff = maxBackoff
        self.jitter = jitter
    }

    /// The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed.
    ///
    /// - Parameter unitRandom: a number in `0..<1` from the caller's random source (passed in so
    ///   the scheduler stays deterministic under test); ignored when `jitter` is 0.
    public func delay(afterFailedAttempt attempt: Int, unitRandom: Double) -> Duration {
        var wait = backoff
        if strategy == .exponential {
            let doublings = max(0, min(attempt - 1, 62))
            for _ in 0..<doublings {
                if let cap = maxBackoff, wait >= cap { break }
                if wait > .seconds(Int64.max / 4) { break }
                wait = wait * 2
            }
        }
        if let cap = maxBackoff, wait > cap { wait = cap }
        if jitter > 0 {
            let fraction = 1 - min(1, jitter) * min(max(unitRandom, 0), 1)
            wait = wait * fraction
        }
        return wait
    }
}
