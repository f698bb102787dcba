import Foundation
import Testing

@testable import CohortSpec

@Suite struct SpecEncodingTests {
    static let builtInSwift = GroupSpec(
        "release", timeout: .seconds(600), onChildFailure: .cancelGroup, exclusive: ["release"], requires: ["linux"]
    ) {
        ChildSpec("checkout", run: "shell", with: ["command": ["sh", "-c", "echo abc"]], exclusive: ["repo"])
        ChildSpec("version", run: "echo", with: ["value": "1.2.3", "n": 3, "ratio": 0.5, "on": true, "none": nil])
        ChildSpec(
            "build", run: "shell", with: ["command": ["sh", "-c", "cat"]], after: ["checkout"], requires: ["x86"],
            timeout: .seconds(90) + .milliseconds(5),
            retry: RetryPolicy(
                attempts: 3, backoff: .seconds(2), strategy: .exponential, maxBackoff: .seconds(30), jitter: 0.25),
            inject: [
                Injection(from: "version", select: "value", into: "env.VERSION"),
                Injection(from: "checkout", select: "stdout", into: "stdin"),
                Injection(from: "version", select: #"a["b.c"][0]"#, into: "env.OTHER"),
            ])
        ChildSpec(
            "tests", mode: .sequence, onChildFailure: .continue, after: ["build"], exclusive: ["db"],
            timeout: .seconds(60)
        ) {
            ChildSpec("unit", run: "echo")
            ChildSpec("deep", mode: .parallel) {
                ChildSpec("leaf", run: "sleep", with: ["seconds": 1])
            }
        }
    }

    @Test func aSpecBuiltInSwiftIsValid() throws {
        try Self.builtInSwift.validate()
    }

    @Test func specTextParsesBackToAnEqualSpec() throws {
        let text = Self.builtInSwift.specText()
        #expect(try SpecParser.parse(text: text, format: .json) == Self.builtInSwift)
        #expect(
            try SpecParser.parse(text: Self.builtInSwift.specText(pretty: false), format: .json) == Self.builtInSwift)
    }

    @Test(arguments: ["release.yaml", "fan-out.yaml", "exclusive.yaml", "cancellation.yaml"])
    func everyExampleRoundTripsThroughSpecText(_ file: String) throws {
        let spec = try parseSpecFile(ExampleSpecTests.examples.appendingPathComponent(file).path)
        #expect(try SpecParser.parse(text: spec.specText(), format: .json) == spec)
    }

    @Test func codableRoundTripsThroughJSONEncoder() throws {
        let data = try JSONEncoder().encode(Self.builtInSwift)
        #expect(try JSONDecoder().decode(GroupSpec.self, from: data) == Self.builtInSwift)
    }

    @Test func codableWritesTheSpecFormat() throws {
        let data = try JSONEncoder().encode(Self.builtInSwift)
        let value = try JSONValue(jsonData: data)
        #expect(value == Self.builtInSwift.specJSON)
        #expect(value["timeout"] == "10m")
        #expect(value["children"]?[2]?["retry"]?["backoff"] == "2s")
    }

    @Test func decodingAnInvalidSpecThrowsItsSpecErrors() {
        let data = Data(#"{"name": "g", "children": [{"name": "a", "run": "echo", "after": ["b"]}]}"#.utf8)
        do {
            _ = try JSONDecoder().decode(GroupSpec.self, from: data)
            Issue.record("expected an error")
        } catch DecodingError.dataCorrupted(let context) {
            let errors = context.underlyingError as? SpecErrors
            #expect(errors?.errors.map(\.path) == ["children[0].after[0]"])
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func defaultsAreLeftOutOfTheSpecForm() {
        let spec = GroupSpec("g") { ChildSpec("a", run: "echo") }
        #expect(spec.specJSON == ["name": "g", "children": [["name": "a", "run": "echo"]]])
    }

    @Test func theResultBuilderMatchesTheArrayInitialiser() {
        let include = true
        let built = GroupSpec("g") {
            ChildSpec("a", run: "echo")
            if include { ChildSpec("b", run: "echo") }
            for index in 0..<2 { ChildSpec("c\(index)", run: "echo") }
        }
        let listed = GroupSpec(
            "g",
            children: [
                ChildSpec("a", run: "echo"), ChildSpec("b", run: "echo"), ChildSpec("c0", run: "echo"),
                ChildSpec("c1", run: "echo"),
            ])
        #expect(built == listed)
    }

    @Test func aChildDecodesOnItsOwn() throws {
        let child = ChildSpec("b", run: "echo", after: ["a"], retry: RetryPolicy(attempts: 2))
        let data = try JSONEncoder().encode(child)
        #expect(try JSONDecoder().decode(ChildSpec.self, from: data) == child)
    }

    @Test func retryPolicyCodesInTheSpecForm() throws {
        let policy = RetryPolicy(attempts: 3, backoff: .milliseconds(1500), strategy: .exponential)
        let data = try JSONEncoder().encode(policy)
        #expect(try JSONValue(jsonData: data) == ["attempts": 3, "backoff": "1s500ms", "strategy": "exponential"])
        #expect(try JSONDecoder().decode(RetryPolicy.self, from: data) == policy)
    }
}

@Suite struct RetryPolicyTests {
    @Test func fixedBackoffWaitsTheSameEachTime() {
        let policy = RetryPolicy(attempts: 5, backoff: .seconds(2))
        #expect(
            (1...4).map { policy.delay(afterFailedAttempt: $0, unitRandom: 0.7) }
                == Array(repeating: .seconds(2), count: 4))
    }

    @Test func exponentialBackoffDoublesUpToTheCap() {
        let policy = RetryPolicy(attempts: 6, backoff: .seconds(1), strategy: .exponential, maxBackoff: .seconds(5))
        #expect(
            (1...5).map { policy.delay(afterFailedAttempt: $0, unitRandom: 0) } == [
                .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5),
            ])
    }

    @Test func exponentialBackoffSurvivesManyAttempts() {
        let policy = RetryPolicy(attempts: 100, backoff: .seconds(1), strategy: .exponential)
        #expect(policy.delay(afterFailedAttempt: 99, unitRandom: 0) > .seconds(1_000_000))
    }

    @Test func jitterShortensTheWaitByUpToItsFraction() {
        let policy = RetryPolicy(attempts: 2, backoff: .seconds(10), jitter: 0.5)
        #expect(policy.delay(afterFailedAttempt: 1, unitRandom: 0) == .seconds(10))
        #expect(policy.delay(afterFailedAttempt: 1, unitRandom: 1) == .seconds(5))
        #expect(policy.delay(afterFailedAttempt: 1, unitRandom: 0.5) == .seconds(7.5))
    }
}
