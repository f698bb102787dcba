import Testing

@testable import CohortSpec

/// A child's `matrix`, expanded at submission (docs/spec.md, "Fan-out: matrix").
@Suite struct MatrixTests {
    static let spec = """
        name: ci
        children:
          - name: build
            run: echo
          - name: test
            run: shell
            matrix: { shard: [1, 2, 3], os: [linux, mac] }
            after: [build]
            exclusive: [runner]
            retry: 2
            with:
              command: [sh, -c, "run-tests --os ${{ matrix.os }} --shard ${{matrix.shard}}"]
          - name: report
            run: echo
            inject: [{ from: test, select: stdout, into: results }]
        """

    @Test func expandsIntoANestedGroupOfOneProcedurePerCombinationKeysInAlphabeticalOrder() throws {
        let flat = try parseSpec(Self.spec).flattened()
        #expect(
            flat.leaves.map(\.path) == [
                "build",
                "test/test[os=linux,shard=1]", "test/test[os=linux,shard=2]", "test/test[os=linux,shard=3]",
                "test/test[os=mac,shard=1]", "test/test[os=mac,shard=2]", "test/test[os=mac,shard=3]",
                "report",
            ])
        let group = try #require(flat.group(at: "test"))
        #expect(group.fanOut == .matrix)
        #expect(group.leaves == 1..<7)
        #expect(group.waitsFor == ["build"])
        // The rest of the child goes on each procedure.
        for leaf in flat.leaves[1..<7] {
            #expect(leaf.run == "shell")
            #expect(leaf.exclusive == ["runner"])
            #expect(leaf.retry?.attempts == 2)
            #expect(leaf.waitsFor == ["build"])
        }
    }

    @Test func eachProcedureGetsItsValuesUnderMatrixAndSubstitutedIntoItsStrings() throws {
        let flat = try parseSpec(Self.spec).flattened()
        let leaf = try #require(flat.leaf(at: "test/test[os=mac,shard=2]"))
        #expect(leaf.input["matrix"] == .object(["os": .string("mac"), "shard": .int(2)]))
        #expect(
            leaf.input["command"]
                == .array([.string("sh"), .string("-c"), .string("run-tests --os mac --shard 2")]))
    }

    @Test func aStringThatIsOnlyAReferenceKeepsTheValuesType() throws {
        let flat = try parseSpec(
            """
            name: m
            children:
              - { name: nap, run: sleep, matrix: { s: [0, 0.5] }, with: { seconds: "${{ matrix.s }}" } }
            """
        ).flattened()
        #expect(flat.leaves.map { $0.input["seconds"] } == [.int(0), .double(0.5)])
    }

    @Test func injectingFromTheMatrixChildGathersEveryOutputInOrderAndWaitsForAll() throws {
        let flat = try parseSpec(Self.spec).flattened()
        let report = try #require(flat.leaf(at: "report"))
        #expect(report.waitsFor == ["test"])
        #expect(report.dependencies == [1..<7])
        let injection = try #require(report.inject.first)
        #expect(injection.gathers == 1..<7)
        #expect(injection.producerPath == "test")
    }

    @Test func ifAndRequireDecideForTheWholeFanOutAndRepeatGoesOnEachCombination() throws {
        let flat = try parseSpec(
            """
            name: m
            children:
              - { name: gate, run: echo }
              - name: t
                run: echo
                matrix: { k: [a, b] }
                if: "succeeded(gate)"
                require: "outputs.gate.ok == true"
                repeat: { until: "output.done", max: 3 }
            """
        ).flattened()
        let group = try #require(flat.group(at: "t"))
        #expect(group.condition?.text == "succeeded(gate)")
        #expect(group.requirement?.text == "outputs.gate.ok == true")
        for leaf in flat.leaves where leaf.path.hasPrefix("t/") {
            #expect(leaf.expressions?.condition == nil)
            #expect(leaf.expressions?.repeating?.max == 3)
        }
    }

    @Test func aSpecWithoutAMatrixFlattensAsBefore() throws {
        let spec = try parseSpec("name: g\nchildren: [{ name: a, run: echo }]")
        #expect(spec.expandingMatrices() == spec)
        #expect(spec.flattened().groups.allSatisfy { $0.fanOut == nil })
    }

    @Test func theMatrixSurvivesTheJSONRoundTrip() throws {
        let spec = try parseSpec(Self.spec)
        let again = try SpecParser.parse(text: spec.specText(), format: .json, sourceName: nil)
        #expect(again == spec)
        #expect(again.children[1].matrix?.axes.map(\.key) == ["os", "shard"])
    }

    @Test func theSwiftAPIBuildsTheSameSpec() throws {
        let built = GroupSpec(
            "ci",
            children: [
                ChildSpec("t", run: "echo", matrix: Matrix(["os": ["linux", "mac"], "n": [1, 2]]))
            ])
        try built.validate()
        #expect(
            built.flattened().leaves.map(\.name) == [
                "t[n=1,os=linux]", "t[n=1,os=mac]", "t[n=2,os=linux]", "t[n=2,os=mac]",
            ])
    }

    // MARK: Errors name their paths

    @Test func badMatricesAreSpecErrorsNamingThePath() {
        func spec(_ child: String) -> String { "name: m\nchildren:\n  - \(child)\n" }
        expectSpecError(
            spec("{ name: t, run: echo, matrix: [linux, mac] }"), at: "children[0].matrix", containing: "a matrix")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: linux } }"), at: "children[0].matrix.os", containing: "list")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: [] } }"), at: "children[0].matrix.os",
            containing: "at least one value")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: [{ a: 1 }] } }"), at: "children[0].matrix.os[0]",
            containing: "a string, number or boolean")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: [a, a] } }"), at: "children[0].matrix.os[1]",
            containing: "listed twice")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { 9os: [a] } }"), at: "children[0].matrix.9os",
            containing: "starting with a letter")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: [a/b] } }"), at: "children[0].matrix",
            containing: "cannot contain \"/\"")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: {} }"), at: "children[0].matrix", containing: "at least one key")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: [a] }, with: { x: \"${{ matrix.oss }}\" } }"),
            at: "children[0].with", containing: "no key \"oss\"")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: [a] }, with: { matrix: 1 } }"), at: "children[0].with.matrix",
            containing: "set by the child's matrix")
        expectSpecError(
            spec("{ name: t, group: { children: [{ name: a, run: echo }] }, matrix: { os: [a] } }"),
            at: "children[0].matrix", containing: "a nested group cannot have one")
    }

    @Test func combinationsThatWouldCollideAreRefused() {
        func spec(_ child: String) -> String { "name: m\nchildren:\n  - \(child)\n" }
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { a: [x, \"x,b=z\"], b: [\"z,b=w\", w] } }"), at: "children[0].matrix",
            containing: "two combinations make the same child name")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: [a], OS: [b] } }"), at: "children[0].matrix.os",
            containing: "COHORT_MATRIX_OS")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: [a] }, with: [1] }"), at: "children[0].with",
            containing: "input is an object")
    }

    @Test func aFanOutTakesTheOnChildFailureOfTheGroupItIsIn() throws {
        let flat = try parseSpec(
            "name: m\nonChildFailure: cancel-group\nchildren:\n  - { name: t, run: echo, matrix: { n: [1, 2] } }\n"
        ).flattened()
        #expect(flat.group(at: "t")?.onChildFailure == .cancelGroup)
    }

    @Test func eachCombinationsInputIsCheckedAsItsKindSeesIt() {
        expectSpecError(
            "name: m\nchildren:\n  - { name: nap, run: sleep, matrix: { s: [1, x] }, with: { seconds: \"${{ matrix.s }}\" } }\n",
            at: "children[0].with.seconds", containing: "(in nap[s=x])")
    }

    @Test func theCombinationsCountAgainstTheLimits() {
        let limits = SpecLimits(maxChildrenPerGroup: 5, maxTotalChildren: 8)
        expectSpecError(
            "name: m\nchildren:\n  - { name: t, run: echo, matrix: { a: [1, 2, 3], b: [1, 2] } }\n",
            at: "children[0].matrix", containing: "makes 6 children (3 × 2)", limits: limits)
        expectSpecError(
            """
            name: m
            children:
              - { name: t, run: echo, matrix: { a: [1, 2, 3, 4, 5] } }
              - { name: u, run: echo, matrix: { a: [1, 2, 3, 4] } }
            """, at: "", containing: "9 procedures (matrices expanded)", limits: limits)
    }

    @Test func aTenThousandChildMatrixIsAccepted() throws {
        let values = (1...100).map(String.init).joined(separator: ", ")
        let flat = try parseSpec(
            "name: big\nchildren:\n  - { name: t, run: echo, matrix: { a: [\(values)], b: [\(values)] } }\n"
        )
        .flattened()
        #expect(flat.leaves.count == 10_000)
    }
}
