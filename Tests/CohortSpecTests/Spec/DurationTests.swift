import Testing

@testable import CohortSpec

@Suite struct DurationTests {
    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("2s", .seconds(2)), ("5m", .seconds(300)), ("1h", .seconds(3600)),
        ("1m30s", .seconds(90)), ("1.5h", .seconds(5400)), ("0.5s", .milliseconds(500)), ("250us", .microseconds(250)),
        ("250µs", .microseconds(250)), ("10ns", .nanoseconds(10)), ("1d", .seconds(86_400)), ("0s", .zero),
        ("1h2m3s4ms", .seconds(3723) + .milliseconds(4)), (".5s", .milliseconds(500)),
    ])
    func parsesSpecDurations(_ text: String, _ expected: Duration) throws {
        #expect(try Duration(specString: text) == expected)
    }

    @Test(arguments: ["30", "1.5"])
    func aBareNumberIsRejectedWithASuggestedUnit(_ text: String) {
        #expect(throws: SpecDurationError.missingUnit(text)) { try Duration(specString: text) }
        #expect(SpecDurationError.missingUnit(text).description.contains("write \"\(text)s\""))
    }

    @Test(arguments: [
        ("", SpecDurationError.empty), ("-5s", .negative), ("5w", .unknownUnit("w")), ("s", .malformed("s")),
        ("1m30", .malformed("1m30")), ("1 s", .malformed("1 s")), ("1..5s", .malformed("1..5s")),
        ("99999999999999999999h", .tooLarge), ("200000d", .tooLarge),
    ])
    func malformedDurationsAreRejected(_ text: String, _ error: SpecDurationError) {
        #expect(throws: error) { try Duration(specString: text) }
    }

    @Test(arguments: [
        (Duration.seconds(90), "1m30s"), (.milliseconds(500), "500ms"), (.seconds(3600), "1h"), (.zero, "0s"),
        (.seconds(86_400 * 2), "48h"), (.nanoseconds(1_500), "1us500ns"),
        (.seconds(3661) + .milliseconds(1), "1h1m1s1ms"),
    ])
    func specStringIsCanonicalAndParsesBack(_ duration: Duration, _ text: String) throws {
        #expect(duration.specString == text)
        #expect(try Duration(specString: duration.specString) == duration)
    }
}
