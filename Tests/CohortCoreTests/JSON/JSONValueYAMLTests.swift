import Testing
import Yams

@testable import CohortCore

@Suite struct JSONValueYAMLTests {
    func convert(_ yaml: String) throws -> JSONValue {
        let node = try #require(try Yams.compose(yaml: yaml))
        return try JSONValue(yamlNode: node)
    }

    @Test(arguments: [
        ("v: 123", JSONValue.int(123)),
        ("v: \"123\"", "123"),
        ("v: '123'", "123"),
        ("v: 1.5", 1.5),
        ("v: true", true),
        ("v: yes", true),
        ("v: off", false),
        ("v: ~", nil),
        ("v: null", nil),
        ("v:", nil),
        ("v: hello", "hello"),
        ("v: 2001-12-14", "2001-12-14"),
        ("v: 0x1F", 31),
        ("v: 9223372036854775807", .int(.max)),
    ])
    func yamlScalarsBecomeJSONTypes(_ yaml: String, _ expected: JSONValue) throws {
        let value = try convert(yaml)
        #expect(value["v"] == expected)
        if case .string = expected, value["v"]?.stringValue == nil {
            Issue.record("\(yaml) should be a string, got \(String(describing: value["v"]))")
        }
    }

    @Test func yamlAliasesAreExpanded() throws {
        let value = try convert("a: &x [1, 2]\nb: *x")
        #expect(value["b"] == [1, 2])
    }

    @Test func yamlMergeKeysApplyWithExplicitKeysWinning() throws {
        let value = try convert("base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3")
        #expect(value["derived"] == ["x": 1, "y": 3])
    }

    @Test func yamlAliasBombIsStoppedByTheNodeLimit() throws {
        var yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...8 {
            let previous = "*a\(level - 1)"
            yaml += "a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]\n"
        }
        let node = try #require(try Yams.compose(yaml: yaml))
        #expect(throws: YAMLConversionError.self) { try JSONValue(yamlNode: node, maxNodes: 100_000) }
    }

    @Test func yamlMappingAsAKeyIsAnError() throws {
        let node = try #require(try Yams.compose(yaml: "? {a: 1}\n: value"))
        #expect(throws: YAMLConversionError.self) { try JSONValue(yamlNode: node) }
    }
}
