import CohortCore
import CohortWire
import Testing

@testable import CohortCoordinator

@Suite struct ClientRequestChecksTests {
    @Test func anIDOfZeroIsRefusedExceptForAGoodbye() {
        #expect(ClientRequest(requestID: 0, .workers).refusal?.code == .invalidRequest)
        #expect(ClientRequest(requestID: 0, .disconnect(reason: "bye")).refusal == nil)
        #expect(ClientRequest(requestID: 1, .workers).refusal == nil)
    }

    @Test func anEmptyPathIsRefusedNotReadAsTheGroup() {
        let refusal = ClientRequest(requestID: 1, .result(group: "g", path: "")).refusal
        #expect(refusal?.code == .invalidRequest)
        #expect(refusal?.message.contains("path is empty") == true)
        #expect(ClientRequest(requestID: 1, .cancel(group: "g", path: "", reason: "")).refusal != nil)
        #expect(ClientRequest(requestID: 1, .cancel(group: "g", path: nil, reason: "")).refusal == nil)
    }

    @Test func aCancelWithoutWordsNamesTheClient() {
        let named = PeerSession(role: .client, peerID: "c-7", name: "ci", lastSent: .zero, lastHeard: .zero)
        var anonymous = named
        anonymous.name = ""
        #expect(CancellationReason.asked(by: named, words: "") == .cancelledByClient("ci"))
        #expect(CancellationReason.asked(by: anonymous, words: "") == .cancelledByClient("c-7"))
        #expect(CancellationReason.asked(by: named, words: "release withdrawn") == .custom("release withdrawn"))
    }

    static func worker(_ id: UInt64, _ name: String) -> WorkerRecord {
        WorkerRecord(id: SessionID(id), name: name, host: "h", labels: [], kinds: ["echo"], slots: 1, now: .zero)
    }

    @Test func aDrainNamesAWorkerByNameOrSessionID() throws {
        let workers = [Self.worker(1, "alpha"), Self.worker(2, "beta"), Self.worker(3, "beta")]
        #expect(try DrainTarget.find("alpha", among: workers).get().id == SessionID(1))
        #expect(try DrainTarget.find("w-3", among: workers).get().id == SessionID(3))
        #expect(try DrainTarget.find("beta", among: workers).get().id == SessionID(2), "the first in order")
        guard case .failure(let error) = DrainTarget.find("gamma", among: workers) else {
            Issue.record("found a worker named gamma")
            return
        }
        #expect(error.code == .notFound)
        #expect(error.message == #"no worker named "gamma""#)
    }

    @Test func aCancelIsAcknowledgedOnceNothingItCoversCanStillStart() {
        var cancels = PendingCancels()
        let first = PendingCancel(routing: [1] as RoutingID, requestID: 1, group: "g", path: nil)
        let second = PendingCancel(routing: [2] as RoutingID, requestID: 2, group: "h", path: "a")
        cancels.append(first)
        cancels.append(second)
        #expect(cancels.settled { _, _ in true }.isEmpty)
        #expect(cancels.settled { group, _ in group == "g" } == [second])
        #expect(cancels.waiting == [first])
        #expect(cancels.settled { _, _ in false } == [first])
        #expect(cancels.isEmpty)
    }
}
