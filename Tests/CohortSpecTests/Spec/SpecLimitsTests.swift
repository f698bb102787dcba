import Testing

@testable import CohortSpec

/// Each limit in `SpecLimits` is enforced, and its error names it.
@Suite struct SpecLimitsTests {
    func children(_ count: Int) -> String {
        "name: g\nchildren:\n" + (0..<count).map { "  - { name: c\($0), run: echo }\n" }.joined()
    }

    func nested(_ depth: Int) -> String {
        var yaml = "{ name: leaf, run: echo }"
        for level in 0..<depth { yaml = "{ name: g\(level), group: { children: [\(yaml)] } }" }
        return "name: g\nchildren: [\(yaml)]"
    }

    @Test func theSpecSizeIsLimited() {
        var limits = SpecLimits()
        limits.maxSpecBytes = 100
        expectSpecError(children(10), at: "", containing: "limit maxSpecBytes", limits: limits)
    }

    @Test func childrenPerGroupAreLimited() {
        var limits = SpecLimits()
        limits.maxChildrenPerGroup = 5
        #expect(specErrors(children(5), limits: limits).isEmpty)
        expectSpecError(children(6), at: "children", containing: "limit maxChildrenPerGroup", limits: limits)
    }

    @Test func totalProceduresAreLimited() {
        var limits = SpecLimits()
        limits.maxTotalChildren = 3
        expectSpecError(children(4), at: "", containing: "limit maxTotalChildren", limits: limits)
    }

    @Test func groupNestingDepthIsLimited() {
        var limits = SpecLimits()
        limits.maxNestingDepth = 3
        #expect(specErrors(nested(3), limits: limits).isEmpty)
        let errors = specErrors(nested(4), limits: limits)
        #expect(errors.count == 1, "\(errors)")
        #expect(errors.first?.message.contains("limit maxNestingDepth") == true)
    }

    @Test func theDefaultNestingLimitIsThirtyTwo() {
        #expect(specErrors(nested(32)).isEmpty)
        #expect(specErrors(nested(33)).first?.message.contains("limit maxNestingDepth") == true)
    }

    @Test func theDeepestAllowedNestingSurvivesPrettyJSON() throws {
        let spec = try SpecParser.parse(text: nested(32))
        #expect(try SpecParser.parse(text: spec.specText(pretty: true), format: .json) == spec)
    }

    @Test func deeplyNestedInputIsRejectedBeforeParsing() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let errors = specErrors("name: g\nchildren: [{ name: a, run: echo, with: { x: \(deep) } }]")
        #expect(errors.first?.message.contains("limit maxDocumentDepth") == true, "\(errors.prefix(1))")
        let dashes =
            "name: g\nchildren:\n  - name: a\n    run: echo\n    with:\n      x:\n        "
            + String(repeating: "- ", count: 100_000) + "x\n"
        #expect(specErrors(dashes).first?.message.contains("limit maxDocumentDepth") == true)
    }

    @Test func deepOneSpaceIndentationThatPassesTheGuardIsStillRejected() {
        // One-space indentation halves the guard's estimate; 900 levels pass it, and stay under
        // libyaml's own nesting limit (1,000), so the YAML parser really recurses that deep.
        var yaml = "name: g\nchildren: [{ name: a, run: echo }]\nx:\n"
        for level in 1...900 { yaml += String(repeating: " ", count: level) + "k\(level):\n" }
        let errors = specErrors(yaml)
        #expect(errors.count == 1, "\(errors.prefix(3))")
        #expect(errors.first?.message.contains("limit maxDocumentDepth") == true)
    }

    @Test func documentDepthIsCheckedExactlyAfterParsing() {
        var limits = SpecLimits()
        limits.maxDocumentDepth = 10
        let deep = String(repeating: "[", count: 15) + String(repeating: "]", count: 15)
        let errors = specErrors("name: g\nchildren: [{ name: a, run: echo, with: { x: \(deep) } }]", limits: limits)
        #expect(errors.map(\.path) == ["children[0].with.x[0][0][0][0][0][0][0]"], "\(errors)")
        #expect(errors.first?.code == .limitExceeded)
        #expect(errors.first?.message.contains("limit maxDocumentDepth") == true)
    }

    @Test func aliasExpansionIsLimited() {
        var yaml = "name: g\nbomb:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...7 {
            yaml +=
                "  a\(level): &a\(level) [\(Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", "))]\n"
        }
        yaml += "children: [{ name: a, run: echo }]\n"
        let errors = specErrors(yaml)
        #expect(errors.first?.message.contains("limit maxNodes") == true, "\(errors)")
    }

    /// A 400-byte "billion laughs" (9 levels of 9 aliases: 9^9 values) is refused by counting
    /// its expansion, without building it: converting built a million values twice before the
    /// limit refused it (8 s and 240 MB in a debug build), counting stops at the limit. The
    /// bound is loose for a loaded machine and far under what building took.
    @Test func aBillionLaughsIsRefusedByCountingNotBuilding() {
        let letters = Array("abcdefghi")
        var yaml = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        for (previous, level) in zip(letters, letters.dropFirst()) {
            yaml += "\(level): &\(level) [\(Array(repeating: "*\(previous)", count: 9).joined(separator: ","))]\n"
        }
        yaml += "name: laughs\nchildren: [{ name: x, run: echo }]\n"
        let clock = ContinuousClock()
        var errors: [SpecError] = []
        let elapsed = clock.measure { errors = specErrors(yaml) }
        #expect(errors.count == 1, "\(errors)")
        #expect(errors.first?.code == .limitExceeded)
        #expect(errors.first?.message.contains("more than 1000000 values") == true, "\(errors)")
        #expect(errors.first?.line != nil, "the error names the line where the limit was crossed")
        #expect(elapsed < .seconds(3), "took \(elapsed)")
    }

    @Test func aLargeValidSpecStaysFast() {
        let clock = ContinuousClock()
        let elapsed = clock.measure { #expect(specErrors(children(5_000)).isEmpty) }
        #expect(elapsed < .seconds(10))
    }

    @Test func depthGuardIgnoresBracketsInStringsCommentsAndBlockScalars() {
        let brackets = String(repeating: "[", count: 600)
        let yaml = """
            name: g
            # \(brackets)
            children:
              - name: a
                run: shell
                with:
                  command: ["sh", "-c", "echo '\(brackets)'"]
                  stdin: |
                    \(brackets)
            """
        #expect(specErrors(yaml).isEmpty)
    }
}

@Suite struct DocumentDepthGuardTests {
    @Test func dashesInsideTextDoNotCountAsNesting() {
        let text = "x: " + String(repeating: "a - ", count: 1_000) + "\n"
        #expect(DocumentDepthGuard.estimate(text).depth < 5)
    }

    @Test func compactSequencesCountOneLevelEach() {
        #expect(DocumentDepthGuard.estimate("- - - - x\n").depth == 4)
        #expect(DocumentDepthGuard.estimate("- -c\n").depth == 1)
    }

    @Test func flowBracketsCountOneLevelEach() {
        #expect(DocumentDepthGuard.estimate("x: [[{a: [1]}]]\n").depth == 4)
        #expect(DocumentDepthGuard.estimate("x: \"[[[[\"\n").depth == 0)
    }
}
