/// How long to wait before the next attempt of a `RepeatProcedure` or `RetryProcedure`.
public enum WaitStrategy: Sendable, Equatable {
    /// No wait.
    case immediate
    /// The same wait before every attempt.
    case fixed(Duration)
    /// `initial`, then multiplied by `multiplier` for each further attempt, capped at
    /// `maximum`. With `jitter` j in 0...1, each wait is scaled by a random factor in
    /// (1 − j)...1, so that many retriers do not wake in step.
    case exponential(initial: Duration, multiplier: Double = 2, maximum: Duration? = nil, jitter: Double = 0)

    /// The wait before attempt `attempt` (2 for the first repeat). `random` yields numbers in 0..<1.
    public func delay(beforeAttempt attempt: Int, random: () -> Double = { Double.random(in: 0..<1) }) -> Duration {
        guard attempt > 1 else { return .zero }
        switch self {
        case .immediate:
            return .zero
        case .fixed(let wait):
            return wait
        case .exponential(let initial, let multiplier, let maximum, let jitter):
            var wait = initial * Double.pow(multiplier, attempt - 2)
            if let maximum, wait > maximum { wait = maximum }
            let spread = min(max(jitter, 0), 1)
            if spread > 0 { wait = wait * (1 - spread * random()) }
            return wait
        }
    }
}

extension Double {
    fileprivate static func pow(_ base: Double, _ exponent: Int) -> Double {
        var result = 1.0
        for _ in 0..<max(exponent, 0) { result *= base }
        return result
    }
}
