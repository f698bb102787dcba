#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A point in time on the wire: nanoseconds since the Unix epoch (UTC).
///
/// Encoded as a protobuf `sfixed64`. In fields that may be absent, the value
/// 0 means "absent" (such fields are optional in the Swift models).
public struct WireTimestamp: Hashable, Comparable, Sendable {
    public var nanosecondsSinceEpoch: Int64

    public init(nanosecondsSinceEpoch: Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    /// The timestamp of `date`, rounded to the nanosecond.
    public init(_ date: Date) {
        let seconds = date.timeIntervalSince1970
        self.nanosecondsSinceEpoch = Int64((seconds * 1_000_000_000).rounded())
    }

    /// This timestamp as a `Date` (whose precision is below a nanosecond only near 1970).
    public var date: Date {
        Date(timeIntervalSince1970: Double(nanosecondsSinceEpoch) / 1_000_000_000)
    }

    public static func < (lhs: WireTimestamp, rhs: WireTimestamp) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }
}

extension WireTimestamp {
    /// RFC 3339 in UTC with milliseconds, as every JSON of Cohort writes a time:
    /// `2025-11-21T09:30:00.125Z`.
    public var rfc3339: String {
        let nanos = nanosecondsSinceEpoch
        let millisSinceEpoch = nanos >= 0 ? nanos / 1_000_000 : (nanos - 999_999) / 1_000_000
        let seconds = millisSinceEpoch >= 0 ? millisSinceEpoch / 1000 : (millisSinceEpoch - 999) / 1000
        let millis = millisSinceEpoch - seconds * 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm, proleptic Gregorian).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(millis, 3))Z"
    }
}
