import CohortCore
import CohortWire

/// What one loop turn will send, per peer, in order; consecutive dispatches (and cancels,
/// and watch events of one watch) to a peer merge into one batch. Flushed at the end of
/// the turn: messages are batched by what a turn produced, never held back on a timer.
struct Outbox {
    enum Item {
        case toWorker(CoordinatorToWorker)
        case reply(CoordinatorReply)
        case handshake(Handshake)
    }

    private(set) var queues: [RoutingID: [Item]] = [:]
    /// Peers in the order they were first given something this turn.
    private(set) var order: [RoutingID] = []

    var isEmpty: Bool { order.isEmpty }

    private mutating func append(_ item: Item, to routing: RoutingID) {
        if queues[routing] == nil {
            order.append(routing)
            queues[routing] = [item]
        } else {
            queues[routing]!.append(item)
        }
    }

    mutating func send(_ message: CoordinatorToWorker, to routing: RoutingID) {
        if let last = queues[routing]?.indices.last {
            let merged: CoordinatorToWorker?
            switch message {
            case .dispatch(let tasks): merged = appending(tasks, toDispatchAt: last, of: routing)
            case .cancel(let cancels): merged = appending(cancels, toCancelAt: last, of: routing)
            default: merged = nil
            }
            if let merged {
                queues[routing]![last] = .toWorker(merged)
                return
            }
        }
        append(.toWorker(message), to: routing)
    }

    /// The batch at `index` with `tasks` added, if it is a dispatch. The slot is cleared
    /// first, so the batch's array is uniquely referenced and grows in place.
    private mutating func appending(_ tasks: [DispatchTask], toDispatchAt index: Int, of routing: RoutingID)
        -> CoordinatorToWorker?
    {
        guard case .toWorker(.dispatch(let existing)) = queues[routing]![index] else { return nil }
        var batch = existing
        queues[routing]![index] = .toWorker(.heartbeat)
        batch.append(contentsOf: tasks)
        return .dispatch(batch)
    }

    private mutating func appending(_ cancels: [TaskCancellation], toCancelAt index: Int, of routing: RoutingID)
        -> CoordinatorToWorker?
    {
        guard case .toWorker(.cancel(let existing)) = queues[routing]![index] else { return nil }
        var batch = existing
        queues[routing]![index] = .toWorker(.heartbeat)
        batch.append(contentsOf: cancels)
        return .cancel(batch)
    }

    mutating func send(_ reply: CoordinatorReply, to routing: RoutingID) {
        if let last = queues[routing]?.indices.last, case .watchEvents(let events) = reply.kind,
            case .reply(let previous) = queues[routing]![last], previous.requestID == reply.requestID,
            case .watchEvents(let earlier) = previous.kind
        {
            queues[routing]![last] = .reply(CoordinatorReply(requestID: reply.requestID, .watchEvents(earlier + events)))
            return
        }
        append(.reply(reply), to: routing)
    }

    mutating func send(_ handshake: Handshake, to routing: RoutingID) {
        append(.handshake(handshake), to: routing)
    }

    /// Takes everything, peers in first-touched order.
    mutating func take() -> [(RoutingID, [Item])] {
        defer {
            queues.removeAll(keepingCapacity: true)
            order.removeAll(keepingCapacity: true)
        }
        return order.map { ($0, queues[$0]!) }
    }
}
