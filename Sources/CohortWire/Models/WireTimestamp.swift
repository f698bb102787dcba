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
