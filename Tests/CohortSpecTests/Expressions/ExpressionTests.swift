import Foundation
import Testing

@testable import CohortSpec

/// A context of finished children for evaluating expressions in tests.
struct FakeContext: ExpressionContext {
    var states: [String: ExpressionChildState] = [:]
    var outputs: [String: JSONValue] = [:]
    var ownOutput: JSONValue?

    func state(of name: String) -> ExpressionChildState { states[name] ?? .unfinished }

    func output(of name: String) throws(ExpressionEvaluationError) -> JSONValue {
        guard let output = outputs[name] else { throw ExpressionEvaluationError("outputs.\(name): no output") }
        return output
    }
}

/// The expression language of `if:`, `require:` and `repeat.until`.
@Suite struct ExpressionTests {
    func value(_ text: String, _ context: FakeContext = FakeContext(), allowsOutput: Bool = false) throws -> JSONValue {
        try SpecExpression(text).parse(allowsOutput: allowsOutput).value(in: context)
    }

    func parseError(_ text: String, allowsOutput: Bool = false) -> ExpressionError? {
        do {
            _ = try SpecExpression(text).parse(allowsOutput: allowsOutput)
            return nil
        } catch {
            return error
        }
    }

    @Test(
        arguments: [
            ("true", true), ("false", false), ("null", nil), ("1 == 1.0", true), ("'a' == \"a\"", true),
            ("1 != 2", true), ("2 < 10", true), ("'b' > 'a'", true), ("3 >= 3", true), ("-1.5 <= -1", true),
            ("[1, 'a'] == [1, 'a']", true), ("!false", true), ("!!true", true), ("!0", true), ("!''", true),
            // && binds tighter than ||; comparison tighter than &&; ! tighter than ==.
            ("true || false && false", true), ("(true || false) && false", false),
            ("1 < 2 == true", true), ("!true == false", true), ("1 == 1 && 2 == 2", true),
            ("contains([1, 2, 3], 2)", true), ("contains('release-1.2', '1.2')", true),
            ("contains(['a'], 'b')", false), ("always()", true),
        ] as [(String, Bool?)])
    func evaluatesWithPrecedence(_ text: String, _ expected: Bool?) throws {
        let result = try value(text)
        if let expected {
            #expect(result == .bool(expected), "\(text)")
        } else {
            #expect(result == .null)
        }
    }

    @Test func stateFunctionsReadTheContext() throws {
        let context = FakeContext(states: [
            "build": .succeeded, "deploy": .failed, "lint": .skipped, "tests/unit": .cancelled,
        ])
        #expect(try value("succeeded(build) && failed(deploy)", context) == true)
        #expect(try value("skipped(lint) && cancelled(tests/unit)", context) == true)
        #expect(try value("cancelled('tests/unit')", context) == true)
        #expect(try value("failed(build) || succeeded(deploy) || skipped(build)", context) == false)
        let parsed = try SpecExpression("succeeded(build) && !failed( deploy ) || outputs.check.ok").parse()
        #expect(parsed.references == ["build", "deploy", "check"])
        #expect(parsed.outputReferences == ["check"])
    }

    @Test func outputsAndOwnOutputReadPaths() throws {
        let context = FakeContext(
            outputs: ["check": ["ok": true, "items": [["name": "a"]], "a.b": 1]],
            ownOutput: ["healthy": false, "replicas": 3])
        #expect(try value("outputs.check.ok == true", context) == true)
        #expect(try value("outputs.check.items[0].name == 'a'", context) == true)
        #expect(try value("outputs.check[\"a.b\"] == 1", context) == true)
        #expect(try value("outputs[\"check\"].ok", context) == true)
        #expect(try value("output.replicas >= 3 && !output.healthy", context, allowsOutput: true) == true)
        #expect(
            throws: ExpressionEvaluationError(
                "outputs.check.version: the output of \"check\" has nothing at \"version\"")
        ) { try value("outputs.check.version == 1", context) }
        #expect(throws: ExpressionEvaluationError("outputs.other: no output")) { try value("outputs.other.x", context) }
    }

    @Test(arguments: [
        ("succeeded(build", "expected a \")\" after the name; succeeded() takes one child name, found the end", 16),
        ("1 = 2", "unexpected \"=\" (compare with \"==\") after a complete expression", 3),
        ("ok == true", "unknown name \"ok\"; a string needs quotes", 1),
        ("sucseeded(build)", "unknown function \"sucseeded\"; did you mean \"succeeded\"?", 1),
        ("'open", "a string without its closing '", 1),
        ("(true", "expected a \")\" to close the \"(\", found the end", 6),
        ("true &&", "the expression ends where a value was expected", 8),
        ("outputs == 1", "`outputs` needs a child name", 8),
        ("", "an empty expression", 1),
        ("[1, 2", "expected a \",\" or a \"]\" to close the list, found the end", 6),
        ("1.2.3 == 1", "\"1.2.3\" is not a number", 1),
    ])
    func parseErrorsNameTheColumn(_ text: String, _ message: String, _ column: Int) {
        let error = parseError(text)
        #expect(error?.message.contains(message) == true, "\(text): \(String(describing: error))")
        #expect(error?.column == column, "\(text): \(String(describing: error))")
    }

    @Test func outputIsOnlyForRepeatUntil() throws {
        #expect(parseError("output.ok")?.message.contains("exists only in `repeat.until`") == true)
        #expect(parseError("output.ok", allowsOutput: true) == nil)
    }

    @Test func sizeDepthAndStepsAreBounded() throws {
        let long = String(repeating: "true && ", count: 600) + "true"
        #expect(parseError(long)?.message.contains("the limit is 4096") == true)
        let deep = String(repeating: "(", count: 70) + "true" + String(repeating: ")", count: 70)
        #expect(parseError(deep)?.message.contains("nests deeper than 64 levels") == true)
        let bangs = String(repeating: "!", count: 70) + "true"
        #expect(parseError(bangs)?.message.contains("nests deeper than 64 levels") == true)
        // Each comparison of a 1,000-element list costs its size: 200 of them pass the step limit.
        let list = JSONValue.array(Array(repeating: .int(1), count: 1000))
        let context = FakeContext(outputs: ["big": ["list": list]])
        let many = Array(repeating: "outputs.big.list == outputs.big.list", count: 100).joined(separator: " && ")
        #expect(throws: ExpressionEvaluationError("the expression took more than 100000 steps")) {
            try value(many, context)
        }
    }

    @Test func comparingUnlikeValuesIsAnEvaluationError() {
        #expect(
            throws: ExpressionEvaluationError(
                "< compares two numbers or two strings, not a number (1) and a string (\"a\")")
        ) { try value("1 < 'a'") }
        #expect(throws: ExpressionEvaluationError.self) { try value("contains(1, 1)") }
    }
}
