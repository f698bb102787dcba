import Synchronization

/// What the coordinator has counted since it started; a snapshot.
public struct CoordinatorCounters: Sendable, Hashable {
    /// Messages received and decoded.
    public var messagesReceived: UInt64 = 0
    /// Messages sent (a batch counts once).
    public var messagesSent: UInt64 = 0
    /// Frames that could not be decoded (garbage, truncated, unknown kinds…).
    public var badFrames: UInt64 = 0
    /// Messages of another protocol version.
    public var wrongVersion: UInt64 = 0
    /// Well-formed messages from peers that had not said HELLO, or of the wrong role.
    public var refused: UInt64 = 0
    /// Sends that failed (peer gone or at its high-water mark).
    public var sendFailures: UInt64 = 0
    /// Attempts dispatched to workers.
    public var dispatched: UInt64 = 0
    /// Attempt results received.
    public var results: UInt64 = 0
    /// Workers declared lost.
    public var workersLost: UInt64 = 0
}

/// The live counters, written by the loop thread and read by anyone.
final class CoordinatorStatistics: Sendable {
    // Relaxed atomics: each counter is independent and only ever grows; a reader wants a
    // recent value, not a consistent cut across counters.
    let messagesReceived = Atomic<UInt64>(0)
    let messagesSent = Atomic<UInt64>(0)
    let badFrames = Atomic<UInt64>(0)
    let wrongVersion = Atomic<UInt64>(0)
    let refused = Atomic<UInt64>(0)
    let sendFailures = Atomic<UInt64>(0)
    let dispatched = Atomic<UInt64>(0)
    let results = Atomic<UInt64>(0)
    let workersLost = Atomic<UInt64>(0)

    func snapshot() -> CoordinatorCounters {
        CoordinatorCounters(
            messagesReceived: messagesReceived.load(ordering: .relaxed),
            messagesSent: messagesSent.load(ordering: .relaxed),
            badFrames: badFrames.load(ordering: .relaxed),
            wrongVersion: wrongVersion.load(ordering: .relaxed),
            refused: refused.load(ordering: .relaxed),
            sendFailures: sendFailures.load(ordering: .relaxed),
            dispatched: dispatched.load(ordering: .relaxed),
            results: results.load(ordering: .relaxed),
            workersLost: workersLost.load(ordering: .relaxed))
    }
}

extension Atomic where Value == UInt64 {
    /// Adds `amount`, relaxed.
    @inline(__always)
    func bump(_ amount: UInt64 = 1) { _ = add(amount, ordering: .relaxed) }
}
