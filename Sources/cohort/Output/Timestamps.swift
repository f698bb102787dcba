import CohortClient
import Foundation

extension WireTimestamp {
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
