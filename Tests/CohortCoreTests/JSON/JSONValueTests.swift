import Foundation
import Testing

@testable import CohortCore

@Suite struct JSONValueTests {
    @Test func integerAndEqualDoubleAreEqualAndHashAlike() {
        #expect(JSONValue.int(1) == .double(1.0))
        #expect(Set<JSONValue>([.int(1), .double(1.0)]).count == 1)
        #expect(JSONValue.int(1) != .double(1.5))
        #expect(JSONValue.int(1) != .bool(true))
    }

    @Test func readingJSONKeepsBooleansApartFromNumbers() throws {
        let value = try JSONValue(jsonString: #"{"yes": true, "no": false, "one": 1, "zero": 0}"#)
        #expect(value["yes"] == .bool(true))
        #expect(value["no"] == .bool(false))
        #expect(value["one"] == .int(1))
        #expect(value["zero"] == .int(0))
        if case .bool = value["one"]! { Issue.record("1 was read as a boolean") }
    }

    @Test func readingJSONKeepsIntegersExact() throws {
        let value = try JSONValue(jsonString: "[9223372036854775807, -9223372036854775808, 12345678901234567]")
        #expect(value == [.int(.max), .int(.min), .int(12_345_678_901_234_567)])
    }

    @Test func readingJSONMakesFractionsAndHugeIntegersDoubles() throws {
        let value = try JSONValue(jsonString: "[1.5, 1e3, 18446744073709551616]")
        #expect(value[0] == .double(1.5))
        #expect(value[1]?.doubleValue == 1000)
        guard case .double(let huge)? = value[2] else {
            Issue.record("expected a double, got \(String(describing: value[2]))")
            return
        }
        #expect(huge == 18_446_744_073_709_551_616)
    }

    @Test func readingJSONAcceptsScalarsAtTheTopLevel() throws {
        #expect(try JSONValue(jsonString: #""text""#) == "text")
        #expect(try JSONValue(jsonString: "null") == .null)
        #expect(try JSONValue(jsonString: "42") == 42)
    }

    @Test func readingMalformedJSONThrows() {
        #expect(throws: JSONParseError.self) { try JSONValue(jsonString: #"{"a": }"#) }
    }

    static let roundTripValues: [JSONValue] = [
        .null, true, false, 0, -7, .int(.max), .int(.min), 1.5, -0.25, 1e-7, 1e300, "", "héllo \"quoted\" \\ / \n\t\u{1}",
        [], [1, "two", [3]], [:], ["b": 1, "a": ["nested": [true, nil]]],
    ]

    @Test(arguments: roundTripValues)
    func jsonBytesReadBackToTheSameValue(_ value: JSONValue) throws {
        #expect(try JSONValue(jsonBytes: value.jsonBytes()) == value)
        #expect(try JSONValue(jsonBytes: value.jsonBytes(pretty: true)) == value)
    }

    @Test func writerSortsKeysSoEqualValuesGiveEqualBytes() {
        let value: JSONValue = ["zebra": 1, "apple": 2, "mango": ["y": 1, "x": 2]]
        #expect(value.jsonString() == #"{"apple":2,"mango":{"x":2,"y":1},"zebra":1}"#)
    }

    @Test func writerEscapesControlCharactersButNotSlashes() {
        #expect(JSONValue.string("a/b\n\u{7}\"").jsonString() == #""a/b\n\u0007\"""#)
    }

    @Test func writerWritesNonFiniteDoublesAsNull() {
        #expect(JSONValue.array([.double(.infinity), .double(.nan)]).jsonString() == "[null,null]")
    }

    @Test func writerWritesIntegersWithoutAFraction() {
        #expect(JSONValue.int(3).jsonString() == "3")
        #expect(JSONValue.double(2.5).jsonString() == "2.5")
    }

    @Test(arguments: roundTripValues)
    func codableRoundTripsThroughFoundationCoders(_ value: JSONValue) throws {
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
    }

    @Test func codableEncodesPlainJSONNotATaggedEnum() throws {
        struct Wrapper: Codable { var input: JSONValue }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(Wrapper(input: ["n": 1, "s": "x", "b": true]))
        #expect(String(decoding: data, as: UTF8.self) == #"{"input":{"b":true,"n":1,"s":"x"}}"#)
    }

    @Test func literalsBuildValues() {
        let value: JSONValue = ["a": [1, 2.5, "x", true, nil]]
        #expect(value == .object(["a": .array([.int(1), .double(2.5), .string("x"), .bool(true), .null])]))
    }
}
