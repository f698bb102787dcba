import CohortWire
import Foundation
import Testing

@testable import CohortCoordinator

@Suite struct OutboxTests {
    private func task(_ id: UInt64) -> AttemptDispatch {
        AttemptDispatch(
            ref: WireAttemptRef(id: id, group: "g", path: "c\(id)", attempt: 1), kind: "echo", input: Data("{}".utf8))
    }

    @Test func consecutiveDispatchesToAPeerBecomeOneBatchInOrder() {
        var outbox = Outbox()
        let a: RoutingID = [1]
        let b: RoutingID = [2]
        outbox.send(.dispatch([task(1)]), to: a)
        outbox.send(.dispatch([task(2)]), to: b)
        outbox.send(.dispatch([task(3), task(4)]), to: a)
        outbox.send(.lockGrant(LockGrant(requestID: 9, tokens: ["db": 1])), to: a)
        outbox.send(.dispatch([task(5)]), to: a)
        let taken = outbox.take()
        #expect(taken.map(\.0) == [a, b])
        guard case .toWorker(.dispatch(let first)) = taken[0].1[0], case .toWorker(.lockGrant) = taken[0].1[1],
            case .toWorker(.dispatch(let second)) = taken[0].1[2]
        else {
            Issue.record("unexpected items \(taken[0].1)")
            return
        }
        #expect(first.map(\.ref.id) == [1, 3, 4])
        #expect(second.map(\.ref.id) == [5])
        #expect(outbox.isEmpty)
        #expect(outbox.take().isEmpty)
    }

    @Test func watchEventsMergePerWatchRequest() {
        var outbox = Outbox()
        let client: RoutingID = [7]
        let event = WatchEvent(
            group: "g", at: WireTimestamp(nanosecondsSinceEpoch: 1), .finished(state: .succeeded, reason: nil))
        outbox.send(CoordinatorReply(requestID: 3, .watchEvents([event])), to: client)
        outbox.send(CoordinatorReply(requestID: 3, .watchEvents([event, event])), to: client)
        outbox.send(CoordinatorReply(requestID: 4, .watchEvents([event])), to: client)
        let items = outbox.take()[0].1
        #expect(items.count == 2)
        if case .reply(let reply) = items[0], case .watchEvents(let events) = reply.kind {
            #expect(reply.requestID == 3 && events.count == 3)
        } else {
            Issue.record("expected watch events, got \(items[0])")
        }
    }
}
