import Foundation
import Testing

@testable import CohortSpec

@Suite struct JSONPathTests {
    @Test(arguments: [
        ("value", [JSONPath.Segment.key("value")]),
        ("env.VERSION", [.key("env"), .key("VERSION")]),
        ("items[0].name", [.key("items"), .index(0), .key("name")]),
        ("[2]", [.index(2)]),
        ("a[1][10]", [.key("a"), .index(1), .index(10)]),
        ("$.stdout", [.key("stdout")]),
        ("$[0]", [.index(0)]),
        (".stdout", [.key("stdout")]),
        (#"labels["app.kubernetes.io/name"]"#, [.key("labels"), .key("app.kubernetes.io/name")]),
        ("with-dash_and_underscore", [.key("with-dash_and_underscore")]),
    ])
    func parsesPathForms(_ text: String, _ segments: [JSONPath.Segment]) throws {
        #expect(try JSONPath(parsing: text).segments == segments)
    }

    @Test(arguments: [".", "$"])
    func dotAndDollarMeanTheWholeValue(_ text: String) throws {
        #expect(try JSONPath(parsing: text).isRoot)
    }

    @Test(arguments: [
        ("", JSONPathError.Reason.empty),
        ("a..b", .emptySegment),
        ("a.", .emptySegment),
        ("..", .emptySegment),
        ("a[", .unterminatedBracket),
        ("a[x]", .invalidIndex("x")),
        ("a[-1]", .invalidIndex("-1")),
        ("a[01]", .invalidIndex("01")),
        ("a[]", .invalidIndex("")),
        ("a b", .unexpectedCharacter(" ")),
        ("a]", .unexpectedCharacter("]")),
        (#"a["b"#, .unterminatedQuote),
        ("$a", .unexpectedCharacter("a")),
    ])
    func rejectsMalformedPathsWithTypedReasons(_ text: String, _ reason: JSONPathError.Reason) {
        #expect(throws: JSONPathError.self) { try JSONPath(parsing: text) }
        do {
            _ = try JSONPath(parsing: text)
        } catch {
            #expect(error.reason == reason)
            #expect(error.text == text)
        }
    }

    @Test(arguments: ["value", "env.VERSION", "items[0].name", "[3]", ".", #"a["b.c"].d"#, #"a["q\"uote"]"#])
    func descriptionParsesBackToTheSamePath(_ text: String) throws {
        let path = try JSONPath(parsing: text)
        #expect(try JSONPath(parsing: path.description) == path)
    }

    static let document: JSONValue = [
        "stdout": "abc\n",
        "items": [["name": "first"], ["name": "second"]],
        "env": ["HOME": "/root"],
    ]

    @Test func selectFindsNestedValues() {
        #expect(Self.document.select("items[1].name") == "second")
        #expect(Self.document.select("env.HOME") == "/root")
        #expect(Self.document.select("stdout") == "abc\n")
    }

    @Test func selectOfTheRootIsTheWholeValue() {
        #expect(Self.document.select(.root) == Self.document)
    }

    @Test(arguments: ["missing", "items[5]", "stdout.length", "env[0]", "items.name"])
    func selectReturnsNilWhenThePathDoesNotFit(_ text: String) throws {
        #expect(Self.document.select(try JSONPath(parsing: text)) == nil)
    }

    @Test func settingCreatesIntermediateObjects() {
        #expect(JSONValue.emptyObject.setting("env.VERSION", to: "1.2.3") == ["env": ["VERSION": "1.2.3"]])
        #expect(JSONValue.null.setting("a.b.c", to: 1) == ["a": ["b": ["c": 1]]])
    }

    @Test func settingKeepsExistingSiblings() {
        let input: JSONValue = ["command": ["sh"], "env": ["A": "1"]]
        #expect(input.setting("env.B", to: "2") == ["command": ["sh"], "env": ["A": "1", "B": "2"]])
    }

    @Test func settingReplacesAValueInTheWayWithAnObject() {
        #expect((["env": "oops"] as JSONValue).setting("env.A", to: "1") == ["env": ["A": "1"]])
    }

    @Test func settingAnIndexReplacesOrPadsTheArray() {
        #expect(([1, 2, 3] as JSONValue).setting("[1]", to: 9) == [1, 9, 3])
        #expect(([1] as JSONValue).setting("[3]", to: 9) == [1, nil, nil, 9])
        #expect(JSONValue.emptyObject.setting("codes[0]", to: 0) == ["codes": [0]])
    }

    @Test func settingTheRootReplacesTheWholeValue() {
        #expect((["a": 1] as JSONValue).setting(.root, to: "x") == "x")
    }

    @Test func selectThenSettingInjectsAProducersOutput() {
        let output: JSONValue = ["exitCode": 0, "stdout": "4f2a9c1e\n", "stderr": ""]
        let input: JSONValue = ["command": ["sh", "-c", "cat"]]
        let injected = input.setting("stdin", to: output.select("stdout")!)
        #expect(injected == ["command": ["sh", "-c", "cat"], "stdin": "4f2a9c1e\n"])
    }

    @Test func pathsEncodeAsTheirText() throws {
        let path: JSONPath = "items[0].name"
        let data = try JSONEncoder().encode(path)
        #expect(try JSONValue(jsonData: data) == "items[0].name")
        #expect(try JSONDecoder().decode(JSONPath.self, from: data) == path)
    }
}
