import Testing

@testable import CohortSpec

/// One rule of docs/spec.md per test; each error named by its path.
@Suite struct SpecValidationTests {
    // MARK: Fields and types

    @Test(arguments: [
        ("name: g\nchidren: []", "chidren", "did you mean \"children\""),
        (
            "name: g\non_child_failure: continue\nchildren: [{name: a, run: echo}]", "on_child_failure",
            "did you mean \"onChildFailure\""
        ),
        ("name: g\nchildren: [{name: a, run: echo, afetr: [b]}]", "children[0].afetr", "did you mean \"after\""),
        (
            "name: g\nchildren: [{name: a, run: echo, retry: {attempts: 2, backof: 1s}}]", "children[0].retry.backof",
            "did you mean \"backoff\""
        ),
        (
            "name: g\nchildren: [{name: a, run: echo}, {name: b, run: echo, inject: [{from: a, slect: x}]}]",
            "children[1].inject[0].slect", "did you mean \"select\""
        ),
        (
            "name: g\nchildren: [{name: t, group: {mdoe: sequence, children: [{name: a, run: echo}]}}]",
            "children[0].group.mdoe", "did you mean \"mode\""
        ),
        ("name: g\ncolour: blue\nchildren: [{name: a, run: echo}]", "colour", "unknown field \"colour\""),
    ])
    func unknownFieldsAreNamedAtAnyLevel(_ yaml: String, _ path: String, _ message: String) {
        expectSpecError(yaml, at: path, containing: message)
    }

    @Test func aFieldOnTheWrongLevelSaysWhereItBelongs() {
        expectSpecError(
            "name: g\nchildren: [{name: t, group: {timeout: 5m, children: [{name: a, run: echo}]}}]",
            at: "children[0].group.timeout", containing: "goes on the child, beside `group:`")
        expectSpecError(
            "name: g\nafter: [x]\nchildren: [{name: a, run: echo}]", at: "after",
            containing: "a top-level group has no siblings to wait for")
    }

    @Test(arguments: [
        ("name: [g]\nchildren: [{name: a, run: echo}]", "name", "expected a string, got a list"),
        (
            "name: g\nchildren: [{name: 12, run: echo}]", "children[0].name",
            "expected a string, got a number (12); quote it"
        ),
        ("name: g\nchildren: [{name: a, run: [echo]}]", "children[0].run", "expected a string, got a list"),
        ("name: g\nchildren: [{name: a, run: echo, after: [1]}]", "children[0].after[0]", "expected a string"),
        ("name: g\nchildren: [{name: a, run: echo, after: {x: 1}}]", "children[0].after", "expected a list of strings"),
        (
            "name: g\nchildren: [{name: a, run: echo, retry: {attempts: 2.5}}]", "children[0].retry.attempts",
            "expected a whole number"
        ),
        (
            "name: g\nchildren: [{name: a, run: echo, retry: {attempts: 2, jitter: lots}}]", "children[0].retry.jitter",
            "expected a number from 0 to 1"
        ),
        (
            "name: g\nchildren: [{name: a, run: echo, inject: {from: b}}]", "children[0].inject",
            "expected a list of injections"
        ),
        ("name: g\nchildren: [a, b]", "children[0]", "expected a child, a mapping, got a string"),
        (
            "name: g\nchildren: [{name: a, run: echo, timeout: [1s]}]", "children[0].timeout",
            "expected a duration such as \"30s\""
        ),
    ])
    func wrongTypesAreNamed(_ yaml: String, _ path: String, _ message: String) {
        expectSpecError(yaml, at: path, containing: message)
    }

    @Test func aChildNeedsRunOrGroup() {
        expectSpecError("name: g\nchildren: [{name: a}]", at: "children[0]", containing: "needs `run`")
    }

    @Test func aChildCannotHaveBothRunAndGroup() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, group: {children: [{name: b, run: echo}]}}]", at: "children[0]",
            containing: "has both `run` and `group`")
    }

    @Test func aGroupChildTakesNoWith() {
        expectSpecError(
            "name: g\nchildren: [{name: a, with: {x: 1}, group: {children: [{name: b, run: echo}]}}]",
            at: "children[0].with", containing: "a group has none")
    }

    @Test func everyChildNeedsAName() {
        expectSpecError("name: g\nchildren: [{run: echo}]", at: "children[0].name", containing: "missing")
    }

    @Test func aGroupNeedsChildren() {
        expectSpecError("name: g\nchildren: []", at: "children", containing: "at least one child")
        expectSpecError("name: g", at: "children", containing: "missing")
        expectSpecError(
            "name: g\nchildren: [{name: t, group: {children: []}}]", at: "children[0].group.children",
            containing: "at least one child")
    }

    // MARK: Names

    @Test func siblingNamesMustBeUnique() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo}, {name: b, run: echo}, {name: a, run: echo}]",
            at: "children[2].name", containing: "another child is already named \"a\" (children[0])")
    }

    @Test func theSameNameMayBeUsedInDifferentGroups() {
        let errors = specErrors(
            """
            name: g
            children:
              - { name: unit, run: echo }
              - name: tests
                group: { children: [{ name: unit, run: echo }] }
            """)
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test(arguments: [
        ("\"\"", "cannot be empty"), ("a/b", "cannot contain \"/\""), ("\" padded\"", "start or end with a space"),
        ("\"tab\\there\"", "control characters"),
    ])
    func childNamesFollowTheNameRules(_ name: String, _ message: String) {
        expectSpecError("name: g\nchildren: [{name: \(name), run: echo}]", at: "children[0].name", containing: message)
    }

    @Test func longNamesHitTheNameLengthLimit() {
        var limits = SpecLimits()
        limits.maxNameLength = 8
        expectSpecError(
            "name: g\nchildren: [{name: abcdefghij, run: echo}]", at: "children[0].name",
            containing: "limit maxNameLength", limits: limits)
    }

    // MARK: References

    @Test func afterMustNameAChild() {
        expectSpecError(
            "name: g\nchildren: [{name: build, run: echo}, {name: test, run: echo, after: [buidl]}]",
            at: "children[1].after[0]", containing: "no child named \"buidl\"; did you mean \"build\"?")
    }

    /// Every unknown reference is an error naming its path; the first
    /// `SpecValidator.suggestionBudget` say "did you mean" and the rest do not, so a spec of
    /// many bad names costs no more than its size (each suggestion reads every visible name).
    @Test func suggestionsForUnknownReferencesAreBudgeted() throws {
        let count = SpecValidator.suggestionBudget + 5
        let children = (0..<count).map { "  - { name: build\($0), run: echo, after: [build\($0)x] }" }
        let errors = specErrors("name: g\nchildren:\n" + children.joined(separator: "\n"))
        #expect(errors.count == count)
        for (index, error) in errors.enumerated() {
            #expect(error.path == "children[\(index)].after[0]")
            #expect(error.message.hasPrefix("no child named \"build\(index)x\""))
            #expect(
                error.message.contains("did you mean") == (index < SpecValidator.suggestionBudget), "\(error.message)")
        }
    }

    /// Children to add that name a sibling only the running group has are not an error, and
    /// an error of their own is still reported.
    @Test func childrenToAddMayNameSiblingsOfTheRunningGroup() throws {
        let children = try SpecParser.parseChildren(
            text: #"[{"name":"a","run":"echo","after":["gate"]},{"name":"b","run":"echo","after":["a"]}]"#,
            format: .json)
        #expect(children.map(\.name) == ["a", "b"])
        #expect(children[0].after == ["gate"])
        #expect(throws: SpecErrors.self) {
            _ = try SpecParser.parseChildren(text: #"[{"name":"a","run":"echo","retry":"x"}]"#, format: .json)
        }
    }

    @Test func injectFromMustNameAChild() {
        expectSpecError(
            """
            name: g
            children:
              - { name: checkout, run: echo }
              - { name: build, run: echo }
              - { name: package, run: echo, inject: [{ from: buld, select: stdout, into: stdin }] }
            """,
            at: "children[2].inject[0].from", containing: "no child named \"buld\"; did you mean \"build\"?")
    }

    @Test func aNameWithNothingCloseGetsNoSuggestion() {
        let errors = specErrors("name: g\nchildren: [{name: a, run: echo, after: [zzzzzz]}]")
        #expect(errors.first?.message == "no child named \"zzzzzz\"")
    }

    @Test func namesResolveOutwardsFromNestedGroups() {
        let errors = specErrors(
            """
            name: g
            children:
              - { name: build, run: echo }
              - name: tests
                group:
                  children:
                    - { name: unit, run: echo, inject: [{ from: build, into: artifact }] }
            """)
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func aPathNamesAChildOfASiblingGroup() {
        let errors = specErrors(
            """
            name: g
            children:
              - name: tests
                group: { children: [{ name: unit, run: echo }] }
              - { name: report, run: echo, inject: [{ from: tests/unit, into: unit }] }
            """)
        #expect(errors.isEmpty, "\(errors)")
        expectSpecError(
            """
            name: g
            children:
              - name: tests
                group: { children: [{ name: unit, run: echo }] }
              - { name: report, run: echo, after: [tests/unti] }
            """,
            at: "children[1].after[0]",
            containing: "group \"tests\" has no child named \"unti\"; did you mean \"unit\"?")
    }

    @Test func injectingFromAGroupIsRejected() {
        expectSpecError(
            """
            name: g
            children:
              - name: tests
                group: { children: [{ name: unit, run: echo }] }
              - { name: report, run: echo, inject: [{ from: tests }] }
            """,
            at: "children[1].inject[0].from",
            containing: "is a group and has no output; inject from one of its children; e.g. \"tests/unit\"")
    }

    @Test func aChildCannotWaitForItself() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, after: [a]}]", at: "children[0].after[0]",
            containing: "cannot wait for itself")
    }

    @Test func aChildCannotWaitForItsEnclosingGroup() {
        expectSpecError(
            "name: g\nchildren: [{name: t, group: {children: [{name: a, run: echo, after: [t]}]}}]",
            at: "children[0].group.children[0].after[0]", containing: "is a group that contains this child")
    }

    @Test func aGroupCannotWaitForItsOwnChild() {
        expectSpecError(
            "name: g\nchildren: [{name: t, after: [t/a], group: {children: [{name: a, run: echo}]}}]",
            at: "children[0].after[0]", containing: "a group cannot wait for its own children")
    }

    @Test func twoInjectionsCannotWriteTheSamePlace() {
        expectSpecError(
            """
            name: g
            children:
              - { name: a, run: echo }
              - { name: b, run: echo }
              - { name: c, run: echo, inject: [{ from: a, into: x }, { from: b, into: x }] }
            """,
            at: "children[2].inject[1].into", containing: "inject[0] already writes to \"x\"")
    }

    // MARK: Cycles

    @Test func aCycleIsNamedOnce() {
        let errors = specErrors(
            "name: g\nchildren: [{name: build, run: echo, after: [test]}, {name: test, run: echo, after: [build]}]")
        #expect(errors.map(\.description) == ["children: cycle build -> test -> build"])
    }

    @Test func injectionTakesPartInCycles() {
        expectSpecError(
            """
            name: g
            children:
              - { name: a, run: echo, after: [c] }
              - { name: b, run: echo, inject: [{ from: a }] }
              - { name: c, run: echo, after: [b] }
            """,
            at: "children", containing: "cycle a -> c -> b -> a")
    }

    @Test func aCycleInsideANestedGroupIsNamedThere() {
        expectSpecError(
            "name: g\nchildren: [{name: t, group: {children: [{name: x, run: echo, after: [y]}, {name: y, run: echo, after: [x]}]}}]",
            at: "children[0].group.children", containing: "cycle x -> y -> x")
    }

    @Test func aCycleAcrossLevelsIsFound() {
        expectSpecError(
            """
            name: g
            children:
              - { name: build, run: echo, after: [tests] }
              - name: tests
                group: { children: [{ name: unit, run: echo, after: [build] }] }
            """,
            at: "children", containing: "cycle build -> tests/unit -> build")
    }

    @Test func twoSeparateCyclesAreBothReported() {
        let errors = specErrors(
            """
            name: g
            children:
              - { name: a, run: echo, after: [b] }
              - { name: b, run: echo, after: [a] }
              - { name: c, run: echo, after: [d] }
              - { name: d, run: echo, after: [c] }
            """)
        #expect(errors.filter { $0.code == .cycle }.count == 2, "\(errors)")
    }

    // MARK: Sequence mode

    @Test func inASequenceAfterAnEarlierSiblingIsAllowed() {
        let errors = specErrors(
            "name: g\nmode: sequence\nchildren: [{name: a, run: echo}, {name: b, run: echo}, {name: c, run: echo, after: [a]}]"
        )
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func inASequenceWaitingForALaterSiblingIsRejected() {
        expectSpecError(
            "name: g\nmode: sequence\nchildren: [{name: a, run: echo, inject: [{from: b}]}, {name: b, run: echo}]",
            at: "children[0].inject[0].from",
            containing: "in a sequence, children run in listed order and \"b\" comes after")
    }

    // MARK: Values

    @Test(arguments: [
        ("timeout: 10", "timeout", "a duration needs a unit; write \"10s\""),
        ("timeout: 0s", "timeout", "a timeout must be longer than zero"),
        ("timeout: soon", "timeout", "\"soon\" is not a duration"),
        ("timeout: 5 minutes", "timeout", "is not a duration"),
        ("timeout: 3w", "timeout", "unknown duration unit \"w\""),
    ])
    func badDurationsAreRejected(_ line: String, _ path: String, _ message: String) {
        expectSpecError("name: g\n\(line)\nchildren: [{name: a, run: echo}]", at: path, containing: message)
    }

    @Test func badBackoffIsNamedUnderRetry() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, retry: {attempts: 2, backoff: 2}}]",
            at: "children[0].retry.backoff", containing: "write \"2s\"")
    }

    @Test(arguments: [0, -1, -100])
    func retryAttemptsMustBePositive(_ attempts: Int) {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, retry: {attempts: \(attempts)}}]",
            at: "children[0].retry.attempts", containing: "must be at least 1")
    }

    @Test func retryAttemptsAreLimited() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, retry: 1000}]", at: "children[0].retry.attempts",
            containing: "limit maxRetryAttempts")
    }

    @Test func retryNeedsAttempts() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, retry: {backoff: 1s}}]", at: "children[0].retry.attempts",
            containing: "missing")
    }

    @Test func retryJitterIsAFraction() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, retry: {attempts: 2, jitter: 1.5}}]",
            at: "children[0].retry.jitter", containing: "from 0 to 1")
    }

    @Test func retryMaxBackoffIsNotShorterThanBackoff() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, retry: {attempts: 2, backoff: 10s, maxBackoff: 1s}}]",
            at: "children[0].retry.maxBackoff", containing: "shorter than backoff")
    }

    @Test func retryStrategyMustBeKnown() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, retry: {attempts: 2, strategy: exponentail}}]",
            at: "children[0].retry.strategy", containing: "did you mean \"exponential\"?")
    }

    @Test func retryOnANestedGroupIsRejected() {
        expectSpecError(
            "name: g\nchildren: [{name: t, retry: 3, group: {children: [{name: a, run: echo}]}}]",
            at: "children[0].retry", containing: "retry applies to procedures only")
    }

    @Test func injectOnANestedGroupIsRejected() {
        expectSpecError(
            "name: g\nchildren: [{name: s, run: echo}, {name: t, inject: [{from: s}], group: {children: [{name: a, run: echo}]}}]",
            at: "children[1].inject", containing: "a group has no input")
    }

    @Test(arguments: [
        ("select: \"a..b\"", "children[1].inject[0].select", "an empty member name"),
        ("into: \"env[\"", "children[1].inject[0].into", "without its \"]\""),
        ("select: \"\"", "children[1].inject[0].select", "an empty path"),
        ("into: \"x y\"", "children[1].inject[0].into", "unexpected \" \""),
    ])
    func selectAndIntoMustBePaths(_ field: String, _ path: String, _ message: String) {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo}, {name: b, run: echo, inject: [{from: a, \(field)}]}]", at: path,
            containing: message)
    }

    @Test(arguments: [
        ("mode: sequential", "mode", "unknown mode \"sequential\"; did you mean \"sequence\"?"),
        ("mode: dag", "mode", "one of: parallel, sequence"),
        ("onChildFailure: cancel", "onChildFailure", "one of: cancel-dependents, cancel-group, continue"),
        ("onChildFailure: Continue", "onChildFailure", "did you mean \"continue\"?"),
    ])
    func modeAndOnChildFailureMustBeKnown(_ line: String, _ path: String, _ message: String) {
        expectSpecError("name: g\n\(line)\nchildren: [{name: a, run: echo}]", at: path, containing: message)
    }

    @Test(arguments: [
        ("\"\"", "cannot be empty"), ("\"has space\"", "may contain only"),
        ("-lead", "must start with a letter or digit"),
        ("\"a,b\"", "may contain only"), ("é", "may contain only"),
    ])
    func exclusiveCategoriesFollowTheCategoryRules(_ category: String, _ message: String) {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, exclusive: [\(category)]}]", at: "children[0].exclusive[0]",
            containing: message)
    }

    @Test func categoriesSharingAFenceVariableAreRejected() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, exclusive: [db-main, db.main]}]", at: "children[0].exclusive[1]",
            containing: "share the fencing variable COHORT_FENCE_DB_MAIN")
    }

    @Test(arguments: [
        ("linux", true), ("arch=arm64", true), ("zone:eu/1", true), ("\"gpu, fast\"", false), ("\"\"", false),
    ])
    func requiresLabelsFollowTheLabelRules(_ label: String, _ valid: Bool) {
        let errors = specErrors("name: g\nrequires: [\(label)]\nchildren: [{name: a, run: echo}]")
        #expect(errors.isEmpty == valid, "\(errors)")
        if !valid { #expect(errors.first?.path == "requires[0]") }
    }

    @Test func aNestedGroupsCategoryMayBeUsedByItsDescendants() {
        let errors = specErrors(
            """
            name: g
            exclusive: [release]
            children:
              - name: deploy
                exclusive: [deploy, release]
                group:
                  children:
                    - { name: stage, run: echo, exclusive: [deploy, release] }
                    - name: inner
                      exclusive: [deploy]
                      group: { children: [{ name: promote, run: echo, exclusive: [deploy] }] }
            """)
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func unknownProcedureKindsAreAccepted() {
        let errors = specErrors("name: g\nchildren: [{name: a, run: resize, with: {width: 100, anything: [1, 2]}}]")
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func aProcedureKindCannotBeEmptyOrContainSpaces() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: \"\"}]", at: "children[0].run", containing: "cannot be empty")
        expectSpecError("name: g\nchildren: [{name: a, run: \"my kind\"}]", at: "children[0].run", containing: "spaces")
    }

    // MARK: Whole-spec behaviour

    @Test func everyErrorIsCollectedNotJustTheFirst() {
        let errors = specErrors(
            """
            name: g
            mode: sideways
            timeout: 5
            children:
              - { name: a, run: echo, after: [nope] }
              - { name: a, run: echo }
              - { name: c, colour: red }
              - { name: d, run: echo, retry: { attempts: 0 } }
            """)
        #expect(
            Set(errors.map(\.path)) == [
                "mode", "timeout", "children[0].after[0]", "children[1].name", "children[2].colour", "children[2]",
                "children[3].retry.attempts",
            ], "\(errors)")
    }

    @Test func aValueThatCouldNotBeReadIsNotComplainedAboutTwice() {
        let errors = specErrors("name: g\nchildren: [{name: 5, run: echo}]")
        #expect(errors.count == 1, "\(errors)")
    }

    @Test func aSpecBuiltInSwiftIsValidatedByTheSameRules() {
        let spec = GroupSpec("g") {
            ChildSpec("build", run: "echo")
            ChildSpec("test", run: "echo", after: ["biuld"], retry: RetryPolicy(attempts: 0))
            ChildSpec("tests", timeout: .zero) {
                ChildSpec("unit", run: "echo", inject: [Injection(from: "nope")])
            }
        }
        do {
            try spec.validate()
            Issue.record("expected errors")
        } catch {
            #expect(
                error.errors.map(\.path) == [
                    "children[1].after[0]", "children[1].retry.attempts", "children[2].timeout",
                    "children[2].group.children[0].inject[0].from",
                ], "\(error)")
        }
    }

    @Test func aValidSpecBuiltInSwiftPasses() throws {
        let spec = GroupSpec("g", mode: .sequence) {
            ChildSpec("a", run: "echo")
            ChildSpec("b", run: "shell", with: ["command": ["true"]], retry: RetryPolicy(attempts: 2))
        }
        try spec.validate()
    }
}

/// `if:`, `require:` and `repeat:` in specs.
@Suite struct ConditionSpecTests {
    let base =
        "name: g\nchildren:\n  - { name: build, run: echo }\n  - { name: nested, group: { children: [{ name: x, run: echo }] } }\n"

    @Test func anExpressionThatDoesNotParseNamesItsPathAndColumn() {
        expectSpecError(
            base + "  - { name: c, run: echo, if: \"failed(build))\" }", at: "children[2].if",
            containing: "unexpected \")\" after a complete expression, at column 14")
        expectSpecError(
            base + "  - { name: c, run: echo, require: \"outputs.build.ok = 1\" }", at: "children[2].require",
            containing: "at column 18")
        expectSpecError(
            base + "  - { name: c, run: echo, repeat: { until: \"output.ok ==\", max: 3 } }",
            at: "children[2].repeat.until",
            containing: "at column 13")
    }

    @Test func namesInExpressionsMustResolveAndBecomeDependencies() throws {
        expectSpecError(
            base + "  - { name: c, run: echo, if: \"failed(buld)\" }", at: "children[2].if",
            containing: "no child named \"buld\"; did you mean \"build\"?")
        expectSpecError(
            base + "  - { name: c, run: echo, if: \"outputs.nested.x\" }", at: "children[2].if",
            containing: "\"nested\" is a group and has no output")
        expectSpecError(
            base + "  - { name: c, run: echo, if: \"succeeded(c)\" }", at: "children[2].if",
            containing: "a child cannot wait for itself")
        expectSpecError(
            "name: g\nchildren:\n  - { name: a, run: echo, if: \"succeeded(b)\" }\n  - { name: b, run: echo, after: [a] }\n",
            at: "children", containing: "cycle")
        let spec = try parseSpec(base + "  - { name: c, run: echo, if: \"failed(build) || skipped(nested)\" }")
        let flat = spec.flattened()
        #expect(flat.leaf(at: "c")?.waitsFor == ["build", "nested"])
        #expect(flat.leaf(at: "c")?.condition?.paths == ["build": "build", "nested": "nested"])
    }

    @Test func outputOutsideRepeatAndRepeatOnAGroupAreRefused() {
        expectSpecError(
            base + "  - { name: c, run: echo, if: \"output.ok\" }", at: "children[2].if",
            containing: "exists only in `repeat.until`")
        expectSpecError(
            base
                + "  - { name: c, repeat: { until: \"true\", max: 2 }, group: { children: [{ name: y, run: echo }] } }",
            at: "children[2].repeat", containing: "repeat applies to procedures only")
    }

    @Test func repeatIsChecked() {
        expectSpecError(
            base + "  - { name: c, run: echo, repeat: { until: \"true\" } }", at: "children[2].repeat.max",
            containing: "missing")
        expectSpecError(
            base + "  - { name: c, run: echo, repeat: { max: 2 } }", at: "children[2].repeat.until",
            containing: "missing")
        expectSpecError(
            base + "  - { name: c, run: echo, repeat: { until: \"true\", max: 0 } }", at: "children[2].repeat.max",
            containing: "at least 1")
        expectSpecError(
            base + "  - { name: c, run: echo, repeat: { until: \"true\", max: 10001 } }", at: "children[2].repeat.max",
            containing: "the limit is 10000")
        expectSpecError(
            base + "  - { name: c, run: echo, repeat: { until: \"true\", max: 2, evry: 1s } }",
            at: "children[2].repeat.evry", containing: "did you mean \"every\"?")
        expectSpecError(
            base + "  - { name: c, run: echo, if: 3 }", at: "children[2].if", containing: "expected an expression")
    }

    @Test func conditionsRoundTripThroughJSONAndSwift() throws {
        let spec = try parseSpec(
            base + """
                  - name: c
                    run: echo
                    if: "failed(build)"
                    require: "outputs.build.ok == true"
                    repeat: { until: "output.done", max: 4, every: 2s }
                  - { name: d, if: "always()", group: { children: [{ name: z, run: echo }] } }
                """)
        let again = try SpecParser.parse(text: spec.specText(), format: .json)
        #expect(again == spec)
        let built = GroupSpec(
            "g",
            children: [
                ChildSpec("build", run: "echo"),
                ChildSpec(
                    "c", run: "echo", condition: "failed(build)", requirement: "outputs.build.ok == true",
                    repeating: RepeatPolicy(until: "output.done", max: 4, every: .seconds(2))),
                ChildSpec("d", condition: "always()", children: [ChildSpec("z", run: "echo")]),
            ])
        try built.validate()
        #expect(built.children[1] == spec.children[2])
        #expect(built.children[2].condition == spec.children[3].condition)
    }
}
