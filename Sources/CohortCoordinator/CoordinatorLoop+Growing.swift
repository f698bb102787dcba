import CohortCore
import CohortWire
import Foundation

/// Growing groups: children added to a running group (docs/spec.md, "Growing groups").
extension CoordinatorLoop {
    /// A client's `addChildren` request.
    func addChildren(_ addition: ChildrenAddition, to group: String, requestID: UInt64, from routing: RoutingID) {
        outbox.send(
            CoordinatorReply(
                requestID: requestID,
                .error(ProtocolError(code: .invalidRequest, message: "adding children is not supported yet"))),
            to: routing)
    }

    /// A running attempt's `context.group.add(...)`, over its worker's connection.
    func addChildren(by ref: AttemptRef, _ addition: ChildrenAddition, worker: SessionID, routing: RoutingID) {
        refuseAttemptRequest(ref, "adding children is not supported yet", to: routing)
    }
}
