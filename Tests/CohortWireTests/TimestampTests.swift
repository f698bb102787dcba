import CohortWire
import Testing

/// `WireTimestamp.rfc3339`, the form every JSON of Cohort writes a time in, against dates
/// worked out by another implementation (Python's `datetime`).
struct TimestampTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (951_800_400_123_456_789, "2000-02-29T05:00:00.123Z"),
        (4_102_444_799_999_000_000, "2099-12-31T23:59:59.999Z"),
        (1_764_147_600_125_000_000, "2025-11-26T09:00:00.125Z"),
    ])
    func rfc3339(nanoseconds: Int64, expected: String) {
        #expect(WireTimestamp(nanosecondsSinceEpoch: nanoseconds).rfc3339 == expected)
    }
}
