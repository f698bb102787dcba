import Foundation
import Testing

@testable import CohortSpec

@Suite struct SpecParserTests {
    static let design = """
        name: release
        mode: parallel
        timeout: 10m
        onChildFailure: cancel-group
        children:
          - name: checkout
            run: shell
            with: { command: ["sh", "-c", "echo abc"] }
            exclusive: [repo]
          - name: version
            run: echo
            with: { value: "1.2.3" }
          - name: build
            run: shell
            after: [checkout]
            retry: { attempts: 3, backoff: 2s, strategy: exponential, maxBackoff: 1m, jitter: 0.5 }
            timeout: 5m
            requires: [linux]
            inject:
              - { from: version, select: value, into: env.VERSION }
              - { from: checkout, select: stdout, into: stdin }
            with: { command: ["sh", "-c", "echo building $VERSION from $(cat)"] }
          - name: tests
            after: [build]
            exclusive: [test-db]
            requires: [linux]
            timeout: 20m
            group:
              mode: sequence
              onChildFailure: continue
              children:
                - { name: unit, run: echo }
                - { name: integration, run: sleep, with: { seconds: 1.5 } }
        """

    @Test func parsesEveryFieldOfTheDesignExample() throws {
        let spec = try parseSpec(Self.design)
        #expect(spec.name == "release")
        #expect(spec.mode == .parallel)
        #expect(spec.timeout == .seconds(600))
        #expect(spec.onChildFailure == .cancelGroup)
        #expect(spec.children.map(\.name) == ["checkout", "version", "build", "tests"])

        let checkout = spec.children[0]
        #expect(checkout.run == "shell")
        #expect(checkout.input == ["command": ["sh", "-c", "echo abc"]])
        #expect(checkout.exclusive == ["repo"])

        let build = spec.children[2]
        #expect(build.after == ["checkout"])
        #expect(build.timeout == .seconds(300))
        #expect(build.requires == ["linux"])
        #expect(
            build.retry
                == RetryPolicy(
                    attempts: 3, backoff: .seconds(2), strategy: .exponential, maxBackoff: .seconds(60), jitter: 0.5))
        #expect(
            build.inject == [
                Injection(from: "version", select: "value", into: "env.VERSION"),
                Injection(from: "checkout", select: "stdout", into: "stdin"),
            ])

        let tests = spec.children[3]
        guard case .group(let group) = tests.body else {
            Issue.record("tests should be a group")
            return
        }
        #expect(group.mode == .sequence)
        #expect(group.onChildFailure == .continue)
        #expect(tests.after == ["build"])
        #expect(tests.exclusive == ["test-db"])
        #expect(tests.timeout == .seconds(1200))
        #expect(group.children.map(\.name) == ["unit", "integration"])
        #expect(group.children[1].input == ["seconds": 1.5])
    }

    @Test func omittedFieldsTakeTheirDefaults() throws {
        let spec = try parseSpec("name: g\nchildren: [{ name: a, run: echo }]")
        #expect(spec.mode == .parallel)
        #expect(spec.onChildFailure == .cancelDependents)
        #expect(spec.timeout == nil)
        let child = spec.children[0]
        #expect(child.input == .emptyObject)
        #expect(child.after.isEmpty && child.exclusive.isEmpty && child.requires.isEmpty && child.inject.isEmpty)
        #expect(child.retry == nil && child.timeout == nil)
    }

    @Test func injectionSelectAndIntoDefaultToTheWholeValue() throws {
        let spec = try parseSpec(
            "name: g\nchildren: [{ name: a, run: echo }, { name: b, run: echo, inject: [{ from: a }] }]")
        #expect(spec.children[1].inject == [Injection(from: "a", select: .root, into: .root)])
    }

    @Test(arguments: [
        ("examples/release.yaml", "release"), ("/tmp/x/fan-out.yml", "fan-out"), ("spec.json", "spec"),
        ("noextension", "noextension"), ("dir.d/archive.tar.yaml", "archive.tar"),
    ])
    func groupNameDefaultsToTheFileBaseName(_ source: String, _ name: String) throws {
        let spec = try parseSpec("children: [{ name: a, run: echo }]", sourceName: source)
        #expect(spec.name == name)
    }

    @Test func explicitNameWinsOverTheFileName() throws {
        let spec = try parseSpec("name: mine\nchildren: [{ name: a, run: echo }]", sourceName: "file.yaml")
        #expect(spec.name == "mine")
    }

    @Test func nameIsRequiredWithoutASourceName() {
        let errors = specErrors("children: [{ name: a, run: echo }]", sourceName: nil)
        #expect(errors.map(\.path) == ["name"])
        #expect(errors.first?.code == .missingField)
    }

    @Test func jsonAndYAMLGiveTheSameSpec() throws {
        let yaml = try parseSpec(SpecParserTests.design)
        let json = try parseSpec(try SpecParser.parse(text: SpecParserTests.design).specText(), format: .json)
        #expect(yaml == json)
        let handWritten = """
            {"name": "release", "timeout": "10m", "children": [
              {"name": "a", "run": "shell", "with": {"command": ["true"]}, "retry": {"attempts": 2}},
              {"name": "b", "run": "echo", "after": ["a"]}]}
            """
        let fromYAML = try parseSpec(
            """
            name: release
            timeout: 10m
            children:
              - name: a
                run: shell
                with:
                  command: ["true"]
                retry:
                  attempts: 2
              - name: b
                run: echo
                after: [a]
            """)
        #expect(try parseSpec(handWritten, format: .json) == fromYAML)
    }

    @Test func jsonErrorsUseJSONWords() {
        let errors = specErrors(#"{"name": "g", "children": {"a": 1}}"#, format: .json)
        #expect(errors.first?.message.contains("an array of children, got an object") == true, "\(errors)")
        let yamlErrors = specErrors("name: g\nchildren: {a: 1}")
        #expect(yamlErrors.first?.message.contains("a list of children, got a mapping") == true, "\(yamlErrors)")
    }

    @Test func yamlSyntaxErrorsGiveLineAndColumn() throws {
        let errors = specErrors("name: g\nchildren:\n  - name: a\n   run: echo\n")
        let error = try #require(errors.first)
        #expect(errors.count == 1)
        #expect(error.code == .syntax)
        #expect(error.line == 4 && error.column == 4)
        #expect(error.description.hasPrefix("yaml syntax error at line 4, column 4:"))
    }

    @Test func jsonSyntaxErrorsSayJSON() {
        let errors = specErrors("{\n  \"name\": \"g\",\n  \"children\": [ \n", format: .json)
        #expect(errors.first?.code == .syntax)
        #expect(errors.first?.message.hasPrefix("json syntax error at line") == true, "\(errors)")
    }

    @Test func duplicateKeysAreSyntaxErrorsWithAPosition() throws {
        let error = try #require(specErrors("name: a\nname: b\nchildren: [{ name: x, run: echo }]").first)
        #expect(error.code == .syntax)
        #expect(error.message.contains("duplicate key \"name\""))
        #expect(error.line != nil)
    }

    /// JSON documents are read with the JSON reader (fast) and must mean what the YAML path
    /// reads from the same text.
    @Test func jsonIsReadAsTheYAMLPathReadsIt() throws {
        let design = try SpecParser.parse(text: Self.design, sourceName: "release.yaml")
        for text in [design.specText(pretty: false), design.specText(pretty: true)] {
            #expect(try SpecParser.parse(text: text, format: .json) == design)
            #expect(try SpecParser.parse(text: text, format: .json) == SpecParser.parse(text: text, format: .yaml))
        }
        let numbers = """
            {"name": "n", "children": [{"name": "a", "run": "echo",
              "with": {"i": 12, "neg": -3, "f": 1.5, "e": 1e3, "big": 99999999999999999999, "t": true, "z": null,
                       "s": "yes", "u": "\\u00e9\\n"}}]}
            """
        #expect(try SpecParser.parse(text: numbers, format: .json) == SpecParser.parse(text: numbers, format: .yaml))
    }

    @Test func faultsInJSONCarryTheirLine() throws {
        let errors = specErrors(
            "{\"name\": \"g\",\n \"children\": [\n  {\"name\": \"a\", \"run\": \"echo\",\n   \"after\": [\"nope\"]}]}",
            format: .json)
        let error = try #require(errors.first)
        #expect(error.path == "children[0].after[0]")
        #expect(error.line == 4)
        let repeated = try #require(
            specErrors(
                "{\"name\": \"a\",\n \"name\": \"b\", \"children\": [{\"name\": \"x\", \"run\": \"echo\"}]}",
                format: .json
            ).first)
        #expect(repeated.code == .syntax)
        #expect(repeated.message.contains("duplicate key \"name\""))
        // Beyond strict JSON, the YAML path still reads it.
        #expect(
            try SpecParser.parse(text: "{name: g, children: [{name: a, run: echo}]} # yaml", format: .json).name == "g")
    }

    @Test func anEmptyDocumentIsRejected() {
        #expect(specErrors("").first?.message == "the spec is empty")
        #expect(specErrors("# only a comment\n").first?.message == "the spec is empty")
    }

    @Test func severalDocumentsAreRejected() {
        #expect(specErrors("name: a\n---\nname: b\n").first?.code == .syntax)
    }

    @Test func theTopLevelMustBeAMapping() {
        expectSpecError("- a\n- b", at: "", containing: "expected a group spec, a mapping, got a list")
    }

    @Test func errorsCarryTheLineOfTheFieldAtFault() throws {
        let errors = specErrors("name: g\nchildren:\n  - name: a\n    run: echo\n    after: [nope]\n")
        let error = try #require(errors.first)
        #expect(error.path == "children[0].after[0]")
        #expect(error.line == 5)
    }

    @Test func errorsComeInDocumentOrder() {
        let errors = specErrors(
            """
            name: g
            children:
              - { name: a, run: echo, after: [zzz] }
              - { name: b, run: echo, timeout: 5 }
              - { name: c/d, run: echo }
            mode: sideways
            """)
        #expect(errors.map(\.path) == ["children[0].after[0]", "children[1].timeout", "children[2].name", "mode"])
    }

    @Test func aSingleStringIsAcceptedForAList() throws {
        let spec = try parseSpec(
            "name: g\nchildren: [{ name: a, run: echo }, { name: b, run: echo, after: a, requires: linux, exclusive: db }]"
        )
        #expect(spec.children[1].after == ["a"])
        #expect(spec.children[1].requires == ["linux"])
        #expect(spec.children[1].exclusive == ["db"])
    }

    @Test func aNumberIsShortForRetryAttempts() throws {
        let spec = try parseSpec("name: g\nchildren: [{ name: a, run: echo, retry: 4 }]")
        #expect(spec.children[0].retry == RetryPolicy(attempts: 4))
    }

    @Test func nullOptionalFieldsCountAsAbsent() throws {
        let spec = try parseSpec("name: g\ntimeout:\nchildren:\n  - name: a\n    run: echo\n    after:\n    retry: ~\n")
        #expect(spec.timeout == nil)
        #expect(spec.children[0].after.isEmpty && spec.children[0].retry == nil)
    }

    @Test func yamlAnchorsAndMergeKeysWorkInSpecs() throws {
        let spec = try parseSpec(
            """
            name: g
            children:
              - &base { name: a, run: shell, with: { command: ["true"] }, requires: [linux] }
              - { <<: *base, name: b }
            """)
        #expect(spec.children[1].requires == ["linux"])
        #expect(spec.children[1].run == "shell")
    }

    @Test func aFilesFormatIsChosenByItsExtension() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-spec-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("nightly.json")
        try #"{"children": {"a": 1}}"#.write(to: file, atomically: true, encoding: .utf8)
        do {
            _ = try parseSpecFile(file.path)
            Issue.record("expected an error")
        } catch {
            #expect(error.sourceName == file.path)
            #expect(error.errors.first?.message.contains("an array of children, got an object") == true, "\(error)")
        }
        try "children: [{ name: a, run: echo }]".write(to: file, atomically: true, encoding: .utf8)
        #expect(try parseSpecFile(file.path).name == "nightly")
    }

    @Test func specErrorsListOneErrorPerLine() {
        let errors = SpecErrors([
            SpecError(.unknownReference, path: "children[2].inject[0].from", "no child named \"buld\""),
            SpecError(.syntax, path: "", "yaml syntax error at line 1, column 1: bad"),
        ])
        #expect(
            errors.description
                == "children[2].inject[0].from: no child named \"buld\"\nyaml syntax error at line 1, column 1: bad")
        #expect(SpecErrors.exitCode == 65)
    }
}
