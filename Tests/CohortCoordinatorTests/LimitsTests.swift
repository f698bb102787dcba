import CohortCore
import CohortPeerSupport
import CohortSpec
import CohortWire
import Foundation
import Testing

@testable import CohortCoordinator

@Suite struct MessageLimitTests {
    /// A frame over maxFrameSize is answered TOO_LARGE naming the limit; one over maxMessageSize
    /// costs its sender the connection (libzmq never reads it); either way the coordinator keeps
    /// serving other peers and the next submit.
    @Test func oversizedFramesAreRefusedAndTheCoordinatorKeepsServing() async throws {
        try await withCoordinator(configure: { $0.maxFrameSize = 8192 }) { cluster in
            let client = try cluster.client()
            let header = Array("CHRT".utf8) + [0, UInt8(WireVersion.current), 2, 1]
            try client.sendRaw([header, [UInt8](repeating: 7, count: 10_000)])
            let refusal = try client.expect("TOO_LARGE") { message -> ProtocolError? in
                if case .coordinatorReply(let reply) = message, case .error(let error) = reply.kind { return error }
                return nil
            }
            #expect(refusal.code == .tooLarge)
            #expect(refusal.message.contains("maxFrameSize"))
            #expect(refusal.message.contains("10000 bytes"))

            let flooder = try cluster.client("flooder")
            try flooder.sendRaw([header, [UInt8](repeating: 7, count: 40_000)])  // over 2 × 8192: dropped

            let worker = try cluster.worker("w1")
            guard case .submitted = try client.submit("children: [{name: a, run: echo}]") else {
                Issue.record("submit failed after an oversized frame")
                return
            }
            #expect(try worker.dispatched().map(\.ref.path) == ["a"])
            #expect(try cluster.client("late").request(.workers) != .acknowledged)
        }
    }

    @Test func aSpecOverMaxSpecBytesIsASpecErrorNamingTheLimitBeforeParsing() async throws {
        try await withCoordinator(configure: { $0.specLimits.maxSpecBytes = 100 }) { cluster in
            let client = try cluster.client()
            let spec = "children: [{name: a, run: echo}]\n" + String(repeating: "# padding\n", count: 20)
            guard case .error(let error) = try client.submit(spec) else {
                Issue.record("an oversized spec was accepted")
                return
            }
            #expect(error.code == .invalidSpec)
            #expect(error.specErrors.count == 1)
            #expect(error.specErrors.first?.path == "")
            #expect(error.specErrors.first?.message.contains("specLimits.maxSpecBytes") == true)
            guard case .submitted = try client.submit("children: [{name: a, run: echo}]") else {
                Issue.record("a small spec was refused after an oversized one")
                return
            }
        }
    }

    /// An output over maxOutputBytes is kept cut down, with the marker, and flagged in status
    /// and result; a small one is kept whole.
    @Test func anOutputOverMaxOutputBytesIsCutVisiblyAndFlagged() async throws {
        try await withCoordinator(configure: { $0.maxOutputBytes = 2048 }) { cluster in
            let worker = try cluster.worker("w1")
            let client = try cluster.client()
            guard
                case .submitted(let receipt) = try client.submit(
                    "children: [{name: big, run: echo}, {name: small, run: echo}]")
            else {
                Issue.record("submit failed")
                return
            }
            for task in try worker.dispatched() {
                let text = task.ref.path == "big" ? String(repeating: "x", count: 10_000) : "ok"
                try worker.finish(task, .succeeded(output: JSONValue.object(["stdout": .string(text)]).jsonData()))
            }
            let detail = try client.waitForStatus(receipt.id) { $0.state == .succeeded }
            #expect(detail.children.first { $0.path == "big" }?.outputTruncated == true)
            #expect(detail.children.first { $0.path == "small" }?.outputTruncated == false)
            guard case .result(let result) = try client.request(.result(group: receipt.id, path: "big")),
                case .succeeded(let output) = result.outcome
            else {
                Issue.record("no result")
                return
            }
            #expect(result.outputTruncated)
            #expect(output.count <= 2048)
            let stdout = try #require(try JSONValue(jsonData: output)["stdout"]?.stringValue)
            #expect(stdout.contains(OutputLimit.markerText))
            #expect(stdout.hasPrefix("xxxx") && stdout.hasSuffix("xxxx"))
            // The group's own result holds the cut output, so it is flagged too; a small one is not.
            guard case .result(let whole) = try client.request(.result(group: receipt.id, path: nil)),
                case .result(let small) = try client.request(.result(group: receipt.id, path: "small"))
            else {
                Issue.record("no result")
                return
            }
            #expect(whole.outputTruncated)
            #expect(!small.outputTruncated)
        }
    }
}
