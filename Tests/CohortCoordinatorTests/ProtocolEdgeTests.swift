import CohortPeerSupport
import CohortWire
import Foundation
import Testing

/// The edges of the client protocol that docs/protocol.md states, so a client in another
/// language needs nothing but the document.
@Suite struct ProtocolEdgeTests {
    @Test func aRequestWithID0IsRefusedAndNotCarriedOut() async throws {
        try await withCoordinator { cluster in
            let client = try cluster.client()
            let submit = Submission(groupID: "zero", document: "children: [{name: a, run: echo}]", format: .yaml)
            try client.send(.clientRequest(ClientRequest(requestID: 0, .submit(submit))))
            let refusal = try client.expect("the refusal of request 0") { message -> ProtocolError? in
                if case .coordinatorReply(let reply) = message, reply.requestID == 0,
                    case .error(let error) = reply.kind
                {
                    return error
                }
                return nil
            }
            #expect(refusal.code == .invalidRequest)
            #expect(refusal.message.contains("request_id"))
            guard case .error(let error) = try client.request(.status(group: "zero")) else {
                Issue.record("a submission with request_id 0 was carried out")
                return
            }
            #expect(error.code == .notFound)
        }
    }

    @Test func anEmptyPathIsRefusedNotReadAsTheGroup() async throws {
        try await withCoordinator { cluster in
            let client = try cluster.client()
            guard
                case .submitted(let receipt) = try client.submit(
                    "children: [{name: a, run: sleep, with: {seconds: 60}}]")
            else {
                Issue.record("not submitted")
                return
            }
            for kind in [
                ClientRequest.Kind.result(group: receipt.id, path: ""),
                .cancel(group: receipt.id, path: "", reason: "no"),
            ] {
                guard case .error(let error) = try client.request(kind) else {
                    Issue.record("\(kind) with an empty path was accepted")
                    continue
                }
                #expect(error.code == .invalidRequest)
                #expect(error.message.contains("path is empty"))
            }
            #expect(try client.status(receipt.id).state != .cancelled)
        }
    }

    @Test func specErrorsCarryTheirLineAndColumnOverTheWire() async throws {
        try await withCoordinator { cluster in
            let client = try cluster.client()
            let spec = "children:\n  - name: a\n    run: echo\n    aftr: [b]\n"
            guard case .error(let error) = try client.submit(spec) else {
                Issue.record("an invalid spec was accepted")
                return
            }
            #expect(error.code == .invalidSpec)
            let fault = try #require(error.specErrors.first)
            #expect(fault.path == "children[0].aftr")
            #expect(fault.line == 4)
            #expect(fault.column != nil)
        }
    }

    @Test func nestedGroupsAreMarkedInStatus() async throws {
        try await withCoordinator { cluster in
            let client = try cluster.client()
            let spec =
                "children:\n  - name: tests\n    group: { children: [{name: unit, run: echo}] }\n  - name: lint\n    run: echo\n"
            guard case .submitted(let receipt) = try client.submit(spec) else {
                Issue.record("not submitted")
                return
            }
            let children = try client.status(receipt.id).children
            #expect(children.first { $0.path == "tests" }?.isGroup == true)
            #expect(children.first { $0.path == "tests/unit" }?.isGroup == false)
            #expect(children.first { $0.path == "lint" }?.isGroup == false)
        }
    }
}
