import Foundation
import Testing

extension EndToEnd {
    /// Limits against abuse, configured in the coordinator's settings file (docs/security.md).
    @Suite struct Limits {
        static let settings = """
            maxFrameSize: 16384
            maxOutputBytes: 2048
            specLimits:
              maxSpecBytes: 8000
              maxChildrenPerGroup: 5
              maxNestingDepth: 1

            """

        static func cluster() throws -> Cluster {
            let file = try Scratch.write(settings, name: "coordinator.yaml")
            let cluster = try Cluster(coordinatorArguments: ["--config", file])
            do {
                try cluster.addWorker(name: "w1")
            } catch {
                cluster.stop()
                throw error
            }
            return cluster
        }

        /// `count` echo children; `padding` characters in the first one's input make the spec
        /// (as the client sends it, JSON) that much larger.
        static func children(_ count: Int, padding: Int = 0) -> String {
            var spec = "name: many\nchildren:\n"
            for index in 0..<count { spec += "  - name: c\(index)\n    run: echo\n" }
            if padding > 0 { spec += "    with: { value: \"\(String(repeating: "p", count: padding))\" }\n" }
            return spec
        }

        /// A spec over maxSpecBytes, and a message over maxFrameSize, are refused with errors that
        /// name the limit; the coordinator serves the next submit.
        @Test func oversizedSpecsAndMessagesAreRefusedAndTheCoordinatorKeepsServing() throws {
            let cluster = try Self.cluster()
            defer { cluster.stop() }

            let spec = try Scratch.write(Self.children(1, padding: 10_000), name: "big.yaml")
            let bigSpec = try cluster.cli(["submit", spec])
            #expect(bigSpec.status == 65, "\(bigSpec)")
            #expect(bigSpec.stderr.contains("specLimits.maxSpecBytes"), "\(bigSpec)")

            let message = try Scratch.write(Self.children(1, padding: 20_000), name: "huge.yaml")
            let bigMessage = try cluster.cli(["submit", message])
            #expect(bigMessage.status == 64, "\(bigMessage)")
            #expect(bigMessage.stderr.contains("maxFrameSize"), "\(bigMessage)")

            let (status, final) = try cluster.submitAndWait(Self.children(2))
            #expect(status == 0)
            #expect(final.state == "succeeded")
        }

        /// Children per group and nesting depth are the coordinator's limits, not the client's.
        @Test func childrenPerGroupAndNestingDepthAreLimited() throws {
            let cluster = try Self.cluster()
            defer { cluster.stop() }
            let wide = try cluster.cli(["submit", try Scratch.write(Self.children(6), name: "wide.yaml")])
            #expect(wide.status == 65, "\(wide)")
            #expect(wide.stderr.contains("maxChildrenPerGroup"), "\(wide)")

            let nested = """
                children:
                  - name: outer
                    group:
                      children:
                        - name: inner
                          group:
                            children: [{name: leaf, run: echo}]

                """
            let deep = try cluster.cli(["submit", try Scratch.write(nested, name: "deep.yaml")])
            #expect(deep.status == 65, "\(deep)")
            #expect(deep.stderr.contains("maxNestingDepth"), "\(deep)")
            #expect(cluster.coordinator.isRunning)
        }

        /// A shell child printing 10,000 bytes, with maxOutputBytes 2048: its result keeps the
        /// beginning and end of stdout around the marker, status flags it, `result` warns.
        @Test func anOutputOverTheLimitIsTruncatedWithAVisibleMarker() throws {
            let cluster = try Self.cluster()
            defer { cluster.stop() }
            let spec = """
                name: chatty
                children:
                  - name: talk
                    run: shell
                    with: { command: ["sh", "-c", "echo BEGIN; head -c 10000 /dev/zero | tr '\\\\0' x; echo; echo END"] }

                """
            let (status, final) = try cluster.submitAndWait(spec)
            #expect(status == 0, "\(final)")
            #expect(final.child("talk")?["outputTruncated"] as? Bool == true)
            let group = try #require(final["id"] as? String)
            let result = try cluster.cli(["result", group, "talk", "--json"])
            #expect(result.status == 0, "\(result)")
            #expect(result.stderr.contains("maxOutputBytes"), "\(result)")
            let output = try JSON.object(result.stdout)
            let stdout = try #require(output["stdout"] as? String)
            #expect(stdout.hasPrefix("BEGIN\n"))
            #expect(stdout.hasSuffix("END\n"))
            #expect(stdout.contains("[cohort: "))
            #expect(result.stdout.utf8.count < 2300)
            // The journal keeps the flag: after a kill -9 and a restart it still reads true.
            try cluster.killCoordinator()
            try cluster.restartCoordinator()
            #expect(try cluster.status(group).child("talk")?["outputTruncated"] as? Bool == true)
            let again = try cluster.cli(["result", group, "talk", "--json"])
            #expect(again.stderr.contains("maxOutputBytes"), "\(again)")
        }
    }
}
