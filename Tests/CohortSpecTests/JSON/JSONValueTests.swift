import Foundation
import Testing

@testable import CohortSpec

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

    @Test(arguments: [
        (#"{"a": }"# as String, 1, 7), ("[1, 2", 1, 6), ("[1,]", 1, 4), ("{\n  \"a\": 1,\n  \"b\" 2\n}", 3, 7),
        ("01", 1, 1),
        ("1.", 1, 3), ("-", 1, 2), ("tru", 1, 1), (#""abc"#, 1, 1), ("\"a\u{7}b\"", 1, 3), (#""\x""#, 1, 3),
        (#""\ud800""#, 1, 8), ("[1] x", 1, 5), ("", 1, 1), ("NaN", 1, 1),
    ])
    func readingMalformedJSONThrowsWithAPosition(_ text: String, _ line: Int, _ column: Int) {
        do {
            let value = try JSONValue(jsonString: text)
            Issue.record("\(text) read as \(value)")
        } catch {
            #expect(error.line == line && error.column == column, "\(text): \(error)")
        }
    }

    @Test func readingJSONRoundsDoublesCorrectly() throws {
        // Foundation's JSONSerialization on Linux reads this one unit off.
        #expect(try JSONValue(jsonString: "[13.428571428571429]") == [.double(13.428571428571429)])
        let values = (0..<2_000).map { JSONValue.double(Double($0) / 7) }
        #expect(try JSONValue(jsonBytes: JSONValue.array(values).jsonBytes()) == .array(values))
    }

    @Test func readingJSONDecodesEscapesAndSurrogatePairs() throws {
        #expect(try JSONValue(jsonString: #""a\"b\\c\/d\n\u00e9\ud83d\ude00""#) == "a\"b\\c/d\né😀")
    }

    @Test func readingJSONRejectsInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONValue(jsonBytes: [0x22, 0xFF, 0xFE, 0x22]) }
    }

    @Test func readingJSONRejectsExcessiveNesting() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParseError.self) { try JSONValue(jsonString: deep) }
    }

    @Test func aRepeatedObjectKeyKeepsItsLastValue() throws {
        #expect(try JSONValue(jsonString: #"{"a": 1, "a": 2}"#) == ["a": 2])
    }

    static let roundTripValues: [JSONValue] = [
        .null, true, false, 0, -7, .int(.max), .int(.min), 1.5, -0.25, 1e-7, 1e300, "",
        "héllo \"quoted\" \\ / \n\t\u{1}",
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
