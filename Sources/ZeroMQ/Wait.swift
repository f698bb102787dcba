/// How long a send or receive may wait.
///
/// Thread-safety: a plain `Sendable` value.
public enum Wait: Sendable, Hashable {
    /// Block until the operation completes (or the socket's `SNDTIMEO`/`RCVTIMEO`
    /// expires, which returns like ``never`` would).
    case forever
    /// Do not block: return "would block" (`nil` or `false`) at once.
    case never
    /// Block at most this long, then return "would block".
    case upTo(Duration)
}

extension Duration {
    /// Whole milliseconds, rounded up so that a short positive wait never
    /// becomes a busy `0`. Saturates at `Int32.max`; negative durations give -1
    /// (libzmq's "no limit").
    var zmqMilliseconds: Int32 {
        if self < .zero { return -1 }
        let (seconds, attoseconds) = components
        let subMillis = attoseconds % 1_000_000_000_000_000
        let millis = seconds.multipliedReportingOverflow(by: 1000)
        if millis.overflow { return Int32.max }
        let total = millis.partialValue + attoseconds / 1_000_000_000_000_000 + (subMillis > 0 ? 1 : 0)
        return Int32(clamping: total)
    }

    /// A duration from libzmq's milliseconds; -1 ("no limit") becomes `.milliseconds(-1)`.
    init(zmqMilliseconds ms: Int32) {
        self = .milliseconds(Int64(ms))
    }
}
