import Testing

@testable import CohortSpec

/// The flattened model the scheduler works from (docs/spec.md, "Flattened model").
@Suite struct FlatSpecTests {
    static let nested = """
        name: release
        requires: [linux]
        exclusive: [release]
        children:
          - name: build
            run: echo
            exclusive: [release, repo]
          - name: tests
            after: [build]
            requires: [gpu]
            exclusive: [db]
            group:
              mode: sequence
              children:
                - { name: unit, run: echo, exclusive: [db] }
                - name: suites
                  group:
                    children:
                      - { name: a, run: echo, requires: [x86, gpu] }
                      - { name: b, run: echo, exclusive: [db, cache] }
                - { name: report, run: echo, inject: [{ from: build, select: stdout, into: stdin }] }
          - { name: package, run: echo, after: [tests] }
          - { name: docs, run: echo }
        """

    func flat(_ yaml: String) throws -> FlatSpec {
        try parseSpec(yaml).flattened()
    }

    /// One tree for validation and flattening gives the same plan as flattening anew, for a
    /// spec without fan-outs (the tree is reused) and with them (flattened from the expansion).
    @Test(arguments: [
        "name: g\nmode: sequence\nchildren:\n  - { name: a, run: echo }\n  - name: t\n    group:\n      children:\n        - { name: x, run: echo, exclusive: [db] }\n        - { name: y, run: echo, after: [x], inject: [{ from: x, select: v, into: w }] }\n  - { name: z, run: echo, after: [t/y] }\n",
        "name: g\nchildren:\n  - { name: a, run: echo, with: { items: [1, 2] } }\n  - { name: m, run: echo, matrix: { k: [1, 2, 3] } }\n  - { name: e, run: echo, map: { from: a, select: items } }\n  - { name: z, run: echo, after: [m, e] }\n",
    ])
    func parsingFlattenedMatchesFlatteningAfterwards(_ text: String) throws {
        let (spec, flat) = try SpecParser.parseFlattened(text: text)
        #expect(spec == (try SpecParser.parse(text: text)))
        #expect(flat == spec.flattened())
        #expect(!flat.leaves.isEmpty)
        let strict = try #require(try SpecParser.parseStrictJSONFlattened(text: spec.specText(pretty: false)))
        #expect(strict.flat == flat)
    }

    @Test func leavesAreInDocumentOrderWithSlashJoinedPaths() throws {
        let spec = try flat(Self.nested)
        #expect(
            spec.leaves.map(\.path) == [
                "build", "tests/unit", "tests/suites/a", "tests/suites/b", "tests/report", "package", "docs",
            ])
        #expect(spec.leaves.map(\.index) == Array(0..<7))
        #expect(spec.leaf(at: "tests/suites/b")?.name == "b")
    }

    @Test func groupsListTheTopLevelFirstWithLeafRanges() throws {
        let spec = try flat(Self.nested)
        #expect(spec.groups.map(\.path) == ["", "tests", "tests/suites"])
        #expect(spec.groups.map(\.leaves) == [0..<7, 1..<5, 2..<4])
        #expect(spec.groups.map(\.parent) == [nil, 0, 1])
        #expect(spec.groups[1].children == ["tests/unit", "tests/suites", "tests/report"])
        #expect(spec.leaf(at: "tests/suites/a")?.ancestors == [0, 1, 2])
        #expect(spec.leaf(at: "tests/suites/a")?.group == 2)
    }

    @Test func requiresAreInheritedFromEveryEnclosingGroup() throws {
        let spec = try flat(Self.nested)
        #expect(spec.leaf(at: "build")?.requires == ["linux"])
        #expect(spec.leaf(at: "tests/unit")?.requires == ["linux", "gpu"])
        #expect(spec.leaf(at: "tests/suites/a")?.requires == ["linux", "gpu", "x86"])
    }

    @Test func waitingForAGroupMeansWaitingForAllItsLeaves() throws {
        let spec = try flat(Self.nested)
        let package = try #require(spec.leaf(at: "package"))
        #expect(package.waitsFor == ["tests"])
        #expect(
            spec.dependencyPaths(of: package) == ["tests/unit", "tests/suites/a", "tests/suites/b", "tests/report"])
        #expect(package.dependencies == [1..<5])
    }

    @Test func aNestedGroupsAfterAppliesToEachOfItsLeaves() throws {
        let spec = try flat(Self.nested)
        #expect(spec.leaf(at: "tests/unit")?.waitsFor == ["build"])
        #expect(spec.leaf(at: "tests/suites/b")?.dependencyIndices.contains(0) == true)
        #expect(spec.group(at: "tests")?.waitsFor == ["build"])
    }

    @Test func sequenceOrderBecomesDependencies() throws {
        let spec = try flat(Self.nested)
        // unit → suites (both leaves) → report, inside `tests`, on top of `tests` waiting for build.
        #expect(spec.leaf(at: "tests/unit")?.dependencyIndices == [0])
        #expect(spec.leaf(at: "tests/suites/a")?.waitsFor == ["tests/unit", "build"])
        #expect(spec.leaf(at: "tests/suites/b")?.dependencyIndices == [0, 1])
        #expect(
            spec.dependencyPaths(of: spec.leaf(at: "tests/report")!) == ["build", "tests/suites/a", "tests/suites/b"])
    }

    @Test func aTopLevelSequenceChainsEveryChild() throws {
        let spec = try flat(
            "name: g\nmode: sequence\nchildren: [{name: a, run: echo}, {name: b, run: echo}, {name: c, run: echo}]")
        #expect(spec.leaves.map(\.dependencyIndices) == [[], [0], [1]])
    }

    @Test func parallelChildrenWithoutAfterHaveNoDependencies() throws {
        let spec = try flat(Self.nested)
        #expect(spec.leaf(at: "build")?.dependencies == [])
        #expect(spec.leaf(at: "docs")?.dependencies == [])
    }

    @Test func injectionImpliesADependencyAndResolvesTheProducer() throws {
        let spec = try flat(
            "name: g\nchildren: [{name: a, run: echo}, {name: b, run: echo, inject: [{from: a, select: value, into: x}]}]"
        )
        let consumer = try #require(spec.leaf(at: "b"))
        #expect(consumer.dependencyIndices == [0])
        #expect(consumer.inject == [FlatInjection(producer: 0, producerPath: "a", select: "value", into: "x")])
    }

    @Test func injectionFromAnOuterScopeResolvesToAnAbsolutePath() throws {
        let spec = try flat(Self.nested)
        let report = try #require(spec.leaf(at: "tests/report"))
        #expect(report.inject.map(\.producerPath) == ["build"])
        #expect(report.inject.map(\.producer) == [0])
    }

    @Test func injectionFromAPathIntoASiblingGroupResolves() throws {
        let spec = try flat(
            """
            name: g
            children:
              - name: tests
                group: { children: [{ name: unit, run: echo }, { name: lint, run: echo }] }
              - { name: report, run: echo, inject: [{ from: tests/lint, into: lint }] }
            """)
        let report = try #require(spec.leaf(at: "report"))
        #expect(report.inject.map(\.producerPath) == ["tests/lint"])
        #expect(report.dependencyIndices == [1])
    }

    /// Issue 12, item 2: a holding group's hold covers every category its descendants
    /// declare, so nothing inside it takes a category from the cluster while it holds.
    @Test func aHoldingGroupsHoldCoversItsDescendantsCategories() throws {
        let spec = try flat(Self.nested)
        #expect(spec.groups[0].holds == ["release", "repo", "db", "cache"])
        #expect(spec.groups[0].acquires == ["release", "repo", "db", "cache"])
        #expect(spec.groups[1].exclusive == ["db"])
        #expect(spec.groups[1].holds == ["db", "cache"])
        #expect(spec.groups[1].heldByAncestors == ["release", "repo", "db", "cache"])
        #expect(spec.groups[1].acquires == [])
        // A group without `exclusive` holds nothing: its children lock for themselves.
        let suites = try #require(spec.group(at: "tests/suites"))
        #expect(suites.holds == [])
    }

    @Test func categoriesHeldByAncestorsAreNotTakenFromTheCluster() throws {
        let spec = try flat(Self.nested)
        let build = try #require(spec.leaf(at: "build"))
        #expect(build.exclusive == ["release", "repo"])
        #expect(build.heldByAncestors == ["release", "repo", "db", "cache"])
        #expect(build.acquires == [])
        let b = try #require(spec.leaf(at: "tests/suites/b"))
        #expect(b.acquires == [])
        // Without a holding group, a leaf takes its categories from the cluster.
        let loose = try flat(
            "name: g\nchildren: [{name: a, run: echo, exclusive: [x]}, {name: t, group: {children: [{name: b, run: echo, exclusive: [y]}]}}]"
        )
        #expect(loose.leaf(at: "a")?.acquires == ["x"])
        #expect(loose.leaf(at: "t/b")?.acquires == ["y"])
        #expect(loose.groups.allSatisfy { $0.holds.isEmpty })
    }

    @Test func leavesCarryTheirProcedureSettings() throws {
        let spec = try flat(
            "name: g\nchildren: [{name: a, run: shell, with: {command: [ls]}, timeout: 30s, retry: {attempts: 2, backoff: 1s}}]"
        )
        let leaf = try #require(spec.leaves.first)
        #expect(leaf.run == "shell")
        #expect(leaf.input == ["command": ["ls"]])
        #expect(leaf.timeout == .seconds(30))
        #expect(leaf.retry == RetryPolicy(attempts: 2, backoff: .seconds(1)))
    }

    @Test func groupsCarryModeTimeoutAndFailurePolicy() throws {
        let spec = try flat(
            "name: g\ntimeout: 1h\nonChildFailure: continue\nchildren: [{name: t, timeout: 5m, group: {mode: sequence, onChildFailure: cancel-group, children: [{name: a, run: echo}]}}]"
        )
        #expect(spec.groups.map(\.timeout) == [.seconds(3600), .seconds(300)])
        #expect(spec.groups.map(\.onChildFailure) == [.continue, .cancelGroup])
        #expect(spec.groups.map(\.mode) == [.parallel, .sequence])
    }

    @Test func dependencyRangesAreMerged() throws {
        let spec = try flat(
            "name: g\nchildren: [{name: a, run: echo}, {name: b, run: echo}, {name: c, run: echo}, {name: d, run: echo, after: [c, a, b]}]"
        )
        #expect(spec.leaf(at: "d")?.dependencies == [0..<3])
        #expect(spec.leaf(at: "d")?.waitsFor == ["c", "a", "b"])
    }
}
