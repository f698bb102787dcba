import CohortCore
import Foundation

/// The loop's time: a monotonic clock anchored to the wall clock at start, so that `now`
/// never goes backwards and still reads as a date in status replies (RFC 3339 in the CLI).
struct LoopClock {
    private let wallAnchor: Int64
    private let monotonicAnchor: ContinuousClock.Instant

    init() {
        wallAnchor = Int64((Date().timeIntervalSince1970 * 1_000_000_000).rounded())
        monotonicAnchor = ContinuousClock.now
    }

    /// One `now` per loop turn.
    func now() -> Timestamp {
        Timestamp(nanosecondsSinceEpoch: wallAnchor) + (ContinuousClock.now - monotonicAnchor)
    }
}
