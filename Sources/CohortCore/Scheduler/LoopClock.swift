import Foundation

/// The I/O loops' time (the coordinator's and the worker's; the state machines never read a
/// clock, their shells pass this `now`): a monotonic clock anchored to the wall clock at start, so that `now`
/// never goes backwards and still reads as a date in status replies (RFC 3339 in the CLI).
public struct LoopClock: Sendable {
    private let wallAnchor: Int64
    private let monotonicAnchor: ContinuousClock.Instant

    public init() {
        wallAnchor = Int64((Date().timeIntervalSince1970 * 1_000_000_000).rounded())
        monotonicAnchor = ContinuousClock.now
    }

    /// One `now` per loop turn.
    public func now() -> Timestamp {
        Timestamp(nanosecondsSinceEpoch: wallAnchor) + (ContinuousClock.now - monotonicAnchor)
    }
}
