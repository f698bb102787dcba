import Testing

@testable import CohortSpec

/// A child's `map`, expanded at run time (docs/spec.md, "Fan-out at run time: map"): how it
/// reads, what the validator refuses, and the nested group it is until it fans out.
@Suite struct MapSpecTests {
    static let spec = """
        name: convert
        children:
          - name: list
            run: shell
            with: { command: [sh, -c, "ls *.png"] }
          - name: each
            run: shell
            map: { from: list, select: files, into: stdin, maxParallel: 4 }
            exclusive: [gpu]
            retry: 2
            with:
              command: [sh, -c, "convert \\"$COHORT_MAP_ITEM\\""]
          - name: report
            run: echo
            inject: [{ from: each, select: stdout, into: results }]
        """

    @Test func readsTheMapAndWritesItBack() throws {
        let spec = try parseSpec(Self.spec)
        let map = try #require(spec.children[1].map)
        #expect(map == MapSpec(from: "list", select: "files", into: "stdin", maxParallel: 4))
        let again = try SpecParser.parse(text: spec.specText(), format: .json, sourceName: nil)
        #expect(again == spec)
    }

    @Test func beforeItFansOutItIsAnEmptyGroupWaitingForItsProducer() throws {
        let flat = try parseSpec(Self.spec).flattened()
        #expect(flat.leaves.map(\.path) == ["list", "report"])
        let group = try #require(flat.group(at: "each"))
        #expect(group.mapPending)
        #expect(group.mapProducer == 0)
        #expect(group.waitsFor == ["list"], "map.from is a dependency")
        #expect(group.leaves.isEmpty)
        #expect(group.fanOut?.map?.template.exclusive == ["gpu"])
        let report = try #require(flat.leaf(at: "report"))
        #expect(report.waitsFor == ["each"])
        #expect(report.inject.first?.gathers == 1..<1, "injecting from a map gathers its procedures' outputs")
    }

    @Test func itsProceduresAreTheChildAsWrittenWithTheirItem() throws {
        let spec = try parseSpec(Self.spec)
        let template = try #require(spec.flattened().group(at: "each")?.fanOut?.map?.template)
        let children = ["a.png", "b.png"].enumerated().map {
            MapSpec.child(template, index: $0.offset, item: .string($0.element))
        }
        let grown = try spec.adding(children, into: "each")
        let flat = grown.flattened()
        #expect(flat.leaves.map(\.path) == ["list", "each/each[0]", "each/each[1]", "report"])
        #expect(flat.group(at: "each")?.mapPending == false)
        let second = try #require(flat.leaf(at: "each/each[1]"))
        #expect(second.input["stdin"] == "b.png")
        #expect(second.input["map"] == ["index": 1, "item": "b.png"])
        #expect(second.exclusive == ["gpu"])
        #expect(second.retry?.attempts == 2)
        #expect(second.waitsFor == ["list"])
        #expect(flat.leaf(at: "report")?.inject.first?.gathers == 1..<3)
    }

    @Test func anEnclosingHoldCoversWhatItsProceduresWillDeclare() throws {
        let spec = try parseSpec(
            """
            name: h
            children:
              - name: list
                run: echo
              - name: held
                exclusive: [db]
                group:
                  children:
                    - { name: each, run: echo, exclusive: [gpu], map: { from: list } }
            """)
        #expect(spec.flattened().group(at: "held")?.holds == ["db", "gpu"])
    }

    @Test func theSwiftAPIBuildsTheSameSpec() throws {
        let built = GroupSpec(
            "convert",
            children: [
                ChildSpec("list", run: "echo"),
                ChildSpec("each", run: "echo", map: MapSpec(from: "list", select: "files", maxParallel: 2)),
            ])
        try built.validate()
        #expect(built.flattened().group(at: "each")?.fanOut?.map?.map.maxParallel == 2)
    }

    @Test func badMapsAreSpecErrorsNamingThePath() {
        func spec(_ child: String, before: String = "{ name: list, run: echo }") -> String {
            "name: m\nchildren:\n  - \(before)\n  - \(child)\n"
        }
        expectSpecError(spec("{ name: t, run: echo, map: [list] }"), at: "children[1].map", containing: "a map")
        expectSpecError(spec("{ name: t, run: echo, map: {} }"), at: "children[1].map.from", containing: "missing")
        expectSpecError(
            spec("{ name: t, run: echo, map: { from: lsit } }"), at: "children[1].map.from",
            containing: "did you mean \"list\"")
        expectSpecError(
            spec("{ name: t, run: echo, map: { from: list, maxParallel: 0 } }"), at: "children[1].map.maxParallel",
            containing: "at least 1")
        expectSpecError(
            spec("{ name: t, run: echo, map: { from: list, into: . } }"), at: "children[1].map.into",
            containing: "replace the whole input")
        expectSpecError(
            spec("{ name: t, run: echo, map: { from: list, into: map.x } }"), at: "children[1].map.into",
            containing: "set by the coordinator")
        expectSpecError(
            spec("{ name: t, run: echo, with: { map: 1 }, map: { from: list } }"), at: "children[1].with.map",
            containing: "set by the child's map")
        expectSpecError(
            spec("{ name: t, run: echo, matrix: { os: [a] }, map: { from: list } }"), at: "children[1]",
            containing: "both `matrix` and `map`")
        expectSpecError(
            spec("{ name: t, run: echo, map: { from: list, size: 3 } }"), at: "children[1].map.size",
            containing: "unknown field \"size\"")
        expectSpecError(
            spec(
                "{ name: t, run: echo, map: { from: g } }",
                before: "{ name: g, group: { children: [{ name: x, run: echo }] } }"),
            at: "children[1].map.from", containing: "is a group")
        expectSpecError(
            spec(
                "{ name: t, run: echo, map: { from: list } }",
                before: "{ name: list, run: echo, matrix: { os: [a, b] } }"),
            at: "children[1].map.from", containing: "is a fan-out")
        expectSpecError(
            spec("{ name: t, group: { children: [{ name: x, run: echo }] }, map: { from: list } }"),
            at: "children[1].map", containing: "expands a procedure")
        expectSpecError(
            spec("{ name: t, run: sleep, map: { from: list } }"), at: "children[1].with.seconds",
            containing: "missing")
    }

    @Test func theItemCanSupplyARequiredInput() throws {
        let spec = try parseSpec(
            """
            name: m
            children:
              - { name: list, run: echo }
              - { name: t, run: sleep, map: { from: list, into: seconds } }
            """)
        #expect(spec.children[1].map?.into == "seconds")
    }
}
