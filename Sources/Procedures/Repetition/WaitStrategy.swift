/// How long to wait before the next attempt of a `RepeatProcedure` or `RetryProcedure`
/// (ProcedureKit's `WaitStrategy`). `delay(beforeAttempt:)` gives the wait before attempt n;
/// the first attempt never waits.
public enum WaitStrategy: Sendable, Equatable {
    /// No wait.
    case immediate
    /// The same wait before every attempt (ProcedureKit's `.constant`).
    case fixed(Duration)
    /// `initial + increment × (n − 1)` before attempt n: 3 s, 6 s, 9 s… for an increment of
    /// 3 s from 0.
    case incrementing(initial: Duration, increment: Duration)
    /// `period × fib(n − 1)` before attempt n, capped at `maximum`: 1, 1, 2, 3, 5, 8… periods.
    case fibonacci(period: Duration, maximum: Duration? = nil)
    /// A wait drawn uniformly from `minimum...maximum` before each attempt.
    case random(minimum: Duration, maximum: Duration)
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
        case .incrementing(let initial, let increment):
            return initial + increment * (attempt - 1)
        case .fibonacci(let period, let maximum):
            let wait = period * Double(Self.fibonacci(attempt - 1))
            if let maximum, wait > maximum { return maximum }
            return wait
        case .random(let minimum, let maximum):
            guard maximum > minimum else { return minimum }
            return minimum + (maximum - minimum) * min(max(random(), 0), 1)
        case .exponential(let initial, let multiplier, let maximum, let jitter):
            var wait = initial * Double.pow(multiplier, attempt - 2)
            if let maximum, wait > maximum { wait = maximum }
            let spread = min(max(jitter, 0), 1)
            if spread > 0 { wait = wait * (1 - spread * random()) }
            return wait
        }
    }

    /// fib(0) = 0, fib(1) = 1, fib(k) = fib(k − 1) + fib(k − 2); saturates rather than overflows.
    static func fibonacci(_ k: Int) -> Int {
        var (previous, current) = (0, 1)
        if k <= 0 { return 0 }
        for _ in 1..<k {
            let (next, overflow) = previous.addingReportingOverflow(current)
            if overflow { return .max }
            (previous, current) = (current, next)
        }
        return current
    }
}

extension Double {
    fileprivate static func pow(_ base: Double, _ exponent: Int) -> Double {
        var result = 1.0
        for _ in 0..<max(exponent, 0) { result *= base }
        return result
    }
}
