/// A point in time for the state machines: nanoseconds since the Unix epoch (UTC).
///
/// The state machines never read a clock: the shell passes `now` with every event. The
/// coordinator derives it from a monotonic clock anchored to the wall clock at start, so it
/// never goes backwards and still reads as a date (`cohort status` shows RFC 3339 times).
/// Tests start anywhere (``zero``) and add durations.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanosecondsSinceEpoch: Int64

    public init(nanosecondsSinceEpoch: Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    /// 1970-01-01T00:00:00Z; a convenient origin for tests.
    public static let zero = Timestamp(nanosecondsSinceEpoch: 0)

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }

    /// `lhs` moved by `rhs` (saturating).
    public static func + (lhs: Timestamp, rhs: Duration) -> Timestamp {
        Timestamp(
            nanosecondsSinceEpoch: lhs.nanosecondsSinceEpoch.addingReportingOverflow(rhs.nanoseconds).partialValue)
    }

    /// The time from `rhs` to `lhs`.
    public static func - (lhs: Timestamp, rhs: Timestamp) -> Duration {
        .nanoseconds(lhs.nanosecondsSinceEpoch - rhs.nanosecondsSinceEpoch)
    }

    public var description: String { "t+\(Duration.nanoseconds(nanosecondsSinceEpoch))" }
}

extension Duration {
    /// Whole nanoseconds, saturating at `Int64`'s range.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
