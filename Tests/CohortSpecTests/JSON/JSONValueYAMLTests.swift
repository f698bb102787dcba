import Testing
import Yams

@testable import CohortSpec

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

    /// `SpecParser` runs Yams without resolver rules and types plain scalars itself, only
    /// where a rule can match: the values must be exactly those of Yams' default rules.
    @Test func scalarsTypedWithoutResolverRulesMatchYamsDefaultRules() throws {
        let scalars = [
            "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "FALSE", "on", "On", "ON", "off",
            "Off", "OFF", "y", "n", "yess", "tru", "trueish", "offline", "~", "null", "Null", "NULL", "nul", "nulls",
            "0", "-0", "+7", "12", "1_000", "0x1F", "0x_1f", "0o17", "017", "08", "0b101", "-0b11", "1:30", "190:20:30",
            "1.5", "-1.5e3", "1e3", "1E+3", ".5", "0.", "1_0.5", "1:30.5", ".inf", "-.Inf", "+.INF", ".nan", ".NaN",
            "2001-12-14", "2001-12-14t21:59:43.10-05:00", "=", "<<", "-", "+", ".", "12abc", "1.2.3", "echo", "c123",
            "throughput", "parallel", "seconds", "Ünïcode", "99999999999999999999", "9223372036854775807",
            "-9223372036854775808", "0x8000000000000000",
        ]
        let document = scalars.map { "- \($0)" }.joined(separator: "\n")
        let expected = try JSONValue(
            yamlNode: #require(
                try Parser(yaml: document, resolver: .default, constructor: .default, encoding: .utf8).singleRoot()))
        let basic = try #require(
            try Parser(yaml: document, resolver: .basic, constructor: .default, encoding: .utf8).singleRoot())
        let typed = try JSONValue(yamlNode: basic)
        for (index, scalar) in scalars.enumerated() {
            if case .double(let left)? = typed[index], case .double(let right)? = expected[index], left.isNaN {
                #expect(right.isNaN, "\(scalar)")
                continue
            }
            #expect(
                typed[index] == expected[index],
                "\(scalar): \(String(describing: typed[index])) vs \(String(describing: expected[index]))")
        }
        // Every rule's first characters are covered: nothing here is a string only by the shortcut.
        #expect(
            scalars.filter { !YAMLScalarTyping.mayBeTyped($0) }.allSatisfy {
                expected[scalars.firstIndex(of: $0)!]?.stringValue == $0
            })
    }

    @Test func aPlainMergeKeyMergesWithoutResolverRules() throws {
        let document = "base: &b {run: echo, with: {a: 1}}\nchild:\n  <<: *b\n  name: c\nquoted: {\"<<\": 1}"
        let node = try #require(
            try Parser(yaml: document, resolver: .basic, constructor: .default, encoding: .utf8).singleRoot())
        let value = try JSONValue(yamlNode: node)
        #expect(value["child"] == ["run": "echo", "with": ["a": 1], "name": "c"])
        #expect(value["quoted"] == ["<<": 1])
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
