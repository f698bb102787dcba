import CohortClient
import Foundation

extension WireTimestamp {
    /// RFC 3339 in UTC with milliseconds: `2025-11-21T09:30:00.125Z`.
    var rfc3339: String {
        let nanos = nanosecondsSinceEpoch
        var seconds = time_t(nanos >= 0 ? nanos / 1_000_000_000 : (nanos - 999_999_999) / 1_000_000_000)
        let millis = Int((nanos - Int64(seconds) * 1_000_000_000) / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))"
            + "T\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }

    /// The timestamp of now.
    static var now: WireTimestamp { WireTimestamp(Date()) }

    /// Seconds from `self` to `later`.
    func seconds(until later: WireTimestamp) -> Double {
        Double(later.nanosecondsSinceEpoch - nanosecondsSinceEpoch) / 1e9
    }
}

/// `0.4s`, `12.3s`, `4m05s`, `2h03m`.
func formatElapsed(_ seconds: Double) -> String {
    let seconds = max(0, seconds)
    if seconds < 60 { return "\((seconds * 10).rounded(.down) / 10)s" }
    let whole = Int(seconds)
    if whole < 3600 { return "\(whole / 60)m\(whole % 60 < 10 ? "0" : "")\(whole % 60)s" }
    let minutes = (whole % 3600) / 60
    return "\(whole / 3600)h\(minutes < 10 ? "0" : "")\(minutes)m"
}

/// An age as `cohort workers` and `cohort locks` show it: `3.2 s` under a minute (tenths,
/// rounded down), then as ``formatElapsed(_:)`` (`2m05s`).
func formatAge(_ age: Duration) -> String {
    let seconds = age.inSeconds
    guard seconds < 60 else { return formatElapsed(seconds) }
    let tenths = (max(seconds, 0) * 10).rounded(.down) / 10
    return "\(tenths) s"
}

extension Duration {
    /// In seconds, as a `Double` (`--json`'s ages).
    var inSeconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
