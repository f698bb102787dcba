import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import Testing

extension EndToEnd {
    @Suite struct BadInput {
        /// Ten malformed specs and the path each error must name.
        static let malformed: [(file: String, path: String)] = [
            ("cycle.yaml", "children"),
            ("duplicate-names.yaml", "children[2].name"),
            ("missing-run.yaml", "children[1]"),
            ("unknown-after.yaml", "children[1].after[0]"),
            ("unknown-field.yaml", "chidren"),
            ("unknown-inject.yaml", "children[2].inject[0].from"),
            ("bad-select.yaml", "children[1].inject[0].select"),
            ("bare-number-duration.yaml", "timeout"),
            ("zero-attempts.yaml", "children[0].retry.attempts"),
            ("shell-command-string.yaml", "children[0].with.command"),
        ]

        /// Each malformed spec exits 65 with the path of the fault, and nothing reaches the
        /// coordinator.
        @Test(arguments: malformed)
        func malformedSpecExitsSixtyFiveNamingThePath(file: String, path: String) throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let spec = "\(Binaries.repositoryRoot)/examples/invalid/\(file)"
            let result = try cluster.cli(["submit", spec, "--wait"])
            #expect(result.status == 65, "\(result)")
            let errorLines = result.stderr.split(separator: "\n").filter { $0.hasPrefix(spec) }
            #expect(errorLines.contains { $0.contains(": \(path): ") }, "an error line names \(path): \(result.stderr)")
            let groups = try JSON.array(try cluster.cli(["status", "--json"]).stdout)
            #expect(groups.isEmpty)
        }

        static let echoSpec = "name: after\nchildren:\n  - { name: hello, run: echo, with: { ok: true } }\n"

        /// Random bytes on the coordinator's port, and a peer speaking protocol version 3, leave
        /// it serving the next submit.
        @Test func garbageAndAnotherProtocolVersionLeaveTheCoordinatorServing() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")

            var generator = SystemRandomNumberGenerator()
            for _ in 0..<5 {
                try sendRawTCP(
                    (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }, to: cluster.endpoint)
            }
            let garbageAfterGreeting = try FakePeer(connectingTo: cluster.endpoint)
            defer { garbageAfterGreeting.stop() }
            try garbageAfterGreeting.sendRaw([(0..<40).map { _ in UInt8.random(in: 0...255, using: &generator) }])

            let future = try FakePeer(connectingTo: cluster.endpoint)
            defer { future.stop() }
            // "CHRT", protocol version 4, family 1 (handshake), kind 1 (hello), and a body.
            try future.sendRaw([Array("CHRT".utf8) + [0, 4, 1, 1], Array("hello from the future".utf8)])
            // The answer (protocol.md §6.2): a HANDSHAKE ERROR in the coordinator's version (header
            // "CHRT", version 3, family 1, kind 3), UNSUPPORTED_VERSION, naming both versions.
            let words = Array("protocol version 4 is not supported".utf8)
            let answer = future.receiveRaw(timeout: .seconds(10))?.frames.joined().map { $0 } ?? []
            #expect(
                answer.contains(Array("CHRT".utf8) + [0, UInt8(WireVersion.current), 1, 3]),
                "a handshake error: \(String(decoding: answer, as: UTF8.self))")
            #expect(answer.contains(words), "naming the version: \(String(decoding: answer, as: UTF8.self))")
            #expect(
                String(decoding: answer, as: UTF8.self).contains("speaks \(WireVersion.current)"),
                "and the one it speaks")

            #expect(cluster.coordinator.isRunning)
            let (status, final) = try cluster.submitAndWait(Self.echoSpec, name: "after.yaml")
            #expect(status == 0, "\(final)")
            #expect(final.state == "succeeded")
        }

        /// A "billion laughs": nine levels of nine aliases, 9^9 values in 400 bytes.
        static let aliasBomb: String = {
            let letters = Array("abcdefghi")
            var yaml = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
            for (previous, level) in zip(letters, letters.dropFirst()) {
                yaml += "\(level): &\(level) [\(Array(repeating: "*\(previous)", count: 9).joined(separator: ","))]\n"
            }
            return yaml + "name: laughs\nchildren: [{ name: x, run: echo }]\n"
        }()

        /// Alias bombs sent straight to the coordinator (a raw client: the CLI refuses the file
        /// itself) stall nobody: they are parsed beside the loop, one at a time for their client,
        /// and refused by counting. Meanwhile another client's group runs, and
        /// the worker is never declared lost (the loop used to stop for seconds per bomb).
        @Test func aliasBombsSentStraightToTheCoordinatorStallNobody() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "w1")
            let attacker = try FakePeer(connectingTo: cluster.endpoint)
            defer { attacker.stop() }
            try attacker.hello(role: .client, name: "attacker")
            var pending: Set<UInt64> = []
            for _ in 0..<8 {
                let id = attacker.makeRequestID()
                pending.insert(id)
                let bomb = Submission(document: Self.aliasBomb, format: .yaml, sourceName: "laughs.yaml")
                try attacker.send(.clientRequest(ClientRequest(requestID: id, .submit(bomb))))
            }

            let (status, final) = try cluster.submitAndWait(Self.echoSpec, name: "meanwhile.yaml")
            #expect(status == 0, "\(final)")
            #expect(final.state == "succeeded")

            while !pending.isEmpty {
                let (id, kind) = try attacker.expect("a reply to each bomb") {
                    message -> (UInt64, CoordinatorReply.Kind)? in
                    guard case .coordinatorReply(let reply) = message, pending.contains(reply.requestID) else {
                        return nil
                    }
                    return (reply.requestID, reply.kind)
                }
                pending.remove(id)
                guard case .error(let error) = kind, error.code == .invalidSpec else {
                    Issue.record("a bomb was not refused as an invalid spec: \(kind)")
                    continue
                }
                #expect(error.specErrors.contains { $0.message.contains("(limit maxNodes)") }, "\(error)")
            }
            #expect(!cluster.coordinator.stderr.contains("worker lost"), "\(cluster.coordinator.stderr)")
            #expect(cluster.coordinator.isRunning)
        }

        /// A coordinator nobody listens for: `submit` exits 69 in about a second (the refused
        /// connection is the answer; the 5 s timeout is for a coordinator that does not
        /// answer), naming the endpoint and saying the connection was refused.
        @Test func unreachableCoordinatorExitsSixtyNineAtOnce() throws {
            let port = UInt16(try freeTCPPort())
            let endpoint = "tcp://127.0.0.1:\(port)"
            let spec = try Scratch.write(Self.echoSpec, name: "unreachable.yaml")
            let result = try cohort(["submit", spec, "--coordinator", endpoint], timeout: .seconds(20))
            #expect(result.status == 69, "\(result)")
            #expect(result.stderr.contains(endpoint), "the message names the endpoint: \(result.stderr)")
            #expect(result.stderr.contains("refused"), "says the connection was refused: \(result.stderr)")
            #expect(result.elapsed < .milliseconds(2_500), "gave up after \(result.elapsed)")
        }

    }
}
