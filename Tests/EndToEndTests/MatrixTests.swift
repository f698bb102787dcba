import Foundation
import Testing

extension EndToEnd {
    /// A child's `matrix`, expanded at submission into one procedure per combination
    /// (docs/spec.md, "Fan-out: matrix"), on real workers.
    @Suite struct MatrixFanOut {
        static let spec = """
            name: matrix
            children:
              - name: build
                run: echo
                with: { version: "1.2" }
              - name: test
                run: shell
                after: [build]
                matrix: { os: [linux, mac], shard: [1, 2] }
                with:
                  command: [sh, -c, "printf '%s/%s/%s' \\"$COHORT_MATRIX_OS\\" \\"$COHORT_MATRIX_SHARD\\" '${{ matrix.os }}-${{ matrix.shard }}'"]
              - name: report
                run: echo
                inject: [{ from: test, select: stdout, into: results }]
            """

        /// Every combination runs with its values in its environment and its substituted
        /// input; the dependent waits for all and receives every output, in order.
        @Test func everyCombinationRunsAndTheDependentGathersTheirOutputsInOrder() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(2, slots: 2)

            let (status, final) = try cluster.submitAndWait(Self.spec, name: "matrix.yaml")
            #expect(status == 0, "\(final)")
            #expect(final.state == "succeeded")
            let names = [
                "test[os=linux,shard=1]", "test[os=linux,shard=2]", "test[os=mac,shard=1]", "test[os=mac,shard=2]",
            ]
            for name in names {
                #expect(final.child("test/\(name)")?.state == "succeeded", "\(name) in \(final.children)")
            }
            #expect(final.child("test")?.state == "succeeded")

            let group = try #require(final["id"] as? String)
            let result = try cluster.cli(["result", group, "report", "--json"])
            #expect(result.status == 0, "\(result)")
            let report = try JSON.object(result.stdout)
            #expect(
                report["results"] as? [String]
                    == ["linux/1/linux-1", "linux/2/linux-2", "mac/1/mac-1", "mac/2/mac-2"])

            let started = try #require(final.child("report")?["startedAt"] as? String)
            for name in names {
                let finished = try #require(final.child("test/\(name)")?["finishedAt"] as? String)
                #expect(finished <= started, "report started before \(name) finished")
            }
        }

        /// examples/matrix.yaml runs as its comment says.
        @Test func theExampleRunsOnACluster() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(2, slots: 2)
            let file = "\(Binaries.repositoryRoot)/examples/matrix.yaml"
            let submitted = try cluster.cli(["submit", file, "--wait", "--json"])
            #expect(submitted.status == 0, "\(submitted)")
            let final = try JSON.object(submitted.stdout)
            let group = try #require(final["id"] as? String)
            let summary = try JSON.object(try cluster.cli(["result", group, "summary", "--json"]).stdout)
            #expect(
                summary["results"] as? [String] == [
                    "tested linux shard 1 of 2\n", "tested linux shard 2 of 2\n", "tested mac shard 1 of 2\n",
                    "tested mac shard 2 of 2\n",
                ])
            #expect(summary["version"] as? String == "1.4.2")
        }

        /// One failing combination fails the fan-out, and the dependent that injects from it
        /// is cancelled naming it; the other combinations still run.
        @Test func aFailingCombinationCancelsTheDependentNamingTheFanOut() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(1, slots: 4)
            let spec = """
                name: matrix-fails
                children:
                  - name: check
                    run: shell
                    matrix: { n: [1, 2, 3] }
                    with: { command: [sh, -c, "test ${{ matrix.n }} -ne 2"] }
                  - name: after
                    run: echo
                    inject: [{ from: check, select: exitCode, into: codes }]
                """
            let (status, final) = try cluster.submitAndWait(spec, name: "matrix-fails.yaml")
            #expect(status == 1, "\(final)")
            #expect(final.child("check/check[n=1]")?.state == "succeeded")
            #expect(final.child("check/check[n=2]")?.state == "failed")
            #expect(final.child("check/check[n=3]")?.state == "succeeded")
            let after = try #require(final.child("after"))
            #expect(after.state == "cancelled")
            #expect((after["error"] as? String)?.contains("\"check\"") == true, "\(after)")
        }

        /// A bad matrix is refused at submission with an error naming its path, and nothing runs.
        @Test func aBadMatrixIsRefusedNamingItsPath() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let spec = """
                name: bad
                children:
                  - { name: t, run: echo, matrix: { os: [linux] }, with: { x: "${{ matrix.arch }}" } }
                """
            let result = try cluster.cli(["submit", try Scratch.write(spec, name: "bad.yaml")])
            #expect(result.status == 65, "\(result)")
            #expect(result.stderr.contains("children[0].with"), "\(result.stderr)")
            #expect(result.stderr.contains("no key \"arch\""), "\(result.stderr)")
        }

        /// The journal keeps the document; a coordinator killed and started again expands it to
        /// the same children, and the group finishes.
        @Test func aMatrixGroupFinishesAcrossACoordinatorRestart() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(1, slots: 1)
            let gate = Scratch.file("gate")
            let spec = """
                name: matrix-restart
                children:
                  - name: gate
                    run: shell
                    with: { command: [sh, -c, "while [ ! -e \\"$GATE\\" ]; do sleep 0.05; done"], env: { GATE: "\(gate)" } }
                  - name: t
                    run: echo
                    after: [gate]
                    matrix: { k: [a, b, c] }
                    with: { value: "${{ matrix.k }}" }
                """
            let group = try cluster.submit(spec, name: "matrix-restart.yaml")
            _ = try cluster.waitForStatus(group) { $0.child("gate")?.state == "running" }
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            #expect(FileManager.default.createFile(atPath: gate, contents: Data()))
            let final = try cluster.waitForStatus(group, timeout: .seconds(60)) { $0.state == "succeeded" }
            #expect(
                ["a", "b", "c"].allSatisfy { final.child("t/t[k=\($0)]")?.state == "succeeded" }, "\(final.children)")
            let result = try cluster.cli(["result", group, "t/t[k=b]", "--json"])
            let output = try JSON.object(result.stdout)
            #expect(output["value"] as? String == "b")
            #expect((output["matrix"] as? [String: Any])?["k"] as? String == "b")
        }
    }
}
