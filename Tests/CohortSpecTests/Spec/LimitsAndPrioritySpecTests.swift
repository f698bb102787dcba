import Testing

@testable import CohortSpec

/// `limits` (counting locks) and `priority` at the top of a spec.
@Suite struct LimitsAndPrioritySpecTests {
    @Test func limitsAndPriorityAreRead() throws {
        let spec = try parseSpec(
            "name: g\npriority: -7\nlimits: {api-quota: 4, db: 1}\nchildren: [{name: a, run: echo, exclusive: [api-quota]}]"
        )
        #expect(spec.limits == ["api-quota": 4, "db": 1])
        #expect(spec.priority == -7)
    }

    @Test func theDefaultsAreNoLimitsAndPriorityZero() throws {
        let spec = try parseSpec("name: g\nchildren: [{name: a, run: echo}]")
        #expect(spec.limits.isEmpty)
        #expect(spec.priority == 0)
    }

    @Test func limitsAndPriorityRoundTripThroughSpecText() throws {
        var spec = GroupSpec("g", children: [ChildSpec("a", run: "echo", exclusive: ["q"])])
        spec.limits = ["q": 3]
        spec.priority = 12
        #expect(try SpecParser.parse(text: spec.specText(), format: .json) == spec)
        #expect(spec.specJSON["priority"] == 12)
        #expect(spec.specJSON["limits"]?["q"] == 3)
    }

    @Test(arguments: [("0", "0 is out of range"), ("10001", "10001 is out of range"), ("-2", "-2 is out of range")])
    func aLimitOutsideOneToTenThousandNamesItsPath(_ value: String, _ message: String) {
        expectSpecError(
            "name: g\nlimits: {api-quota: \(value)}\nchildren: [{name: a, run: echo}]", at: "limits.api-quota",
            containing: message)
    }

    @Test func aLimitMustBeAWholeNumber() {
        expectSpecError(
            "name: g\nlimits: {api-quota: 2.5}\nchildren: [{name: a, run: echo}]", at: "limits.api-quota",
            containing: "a whole number")
        expectSpecError(
            "name: g\nlimits: [api-quota]\nchildren: [{name: a, run: echo}]", at: "limits",
            containing: "a mapping of categories to limits")
    }

    @Test func aLimitsCategoryFollowsTheCategoryRules() {
        expectSpecError(
            "name: g\nlimits: {\"has space\": 2}\nchildren: [{name: a, run: echo}]", at: "limits.has space",
            containing: "may contain only")
    }

    @Test(arguments: [("1001", "1001 is out of range"), ("-1001", "-1001 is out of range")])
    func aPriorityOutOfRangeIsRefused(_ value: String, _ message: String) {
        expectSpecError(
            "name: g\npriority: \(value)\nchildren: [{name: a, run: echo}]", at: "priority", containing: message)
    }

    @Test func aPriorityMustBeAWholeNumber() {
        expectSpecError(
            "name: g\npriority: high\nchildren: [{name: a, run: echo}]", at: "priority", containing: "a whole number")
    }

    @Test func priorityAndLimitsBelongAtTheTopLevel() {
        expectSpecError(
            "name: g\nchildren: [{name: a, run: echo, priority: 3}]", at: "children[0].priority",
            containing: "unknown field")
    }

    @Test func aSpecBuiltInSwiftIsValidatedToo() {
        var spec = GroupSpec("g", children: [ChildSpec("a", run: "echo")])
        spec.priority = 2000
        spec.limits = ["q": 0]
        #expect(throws: SpecErrors.self) { try spec.validate() }
    }
}
