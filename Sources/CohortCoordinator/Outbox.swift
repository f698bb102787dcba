import CohortCore
import CohortWire

/// What one loop turn will send, per peer, in order; consecutive dispatches (and cancels,
/// and watch events of one watch) to a peer merge into one batch. Flushed at the end of
/// the turn: messages are batched by what a turn produced, never held back on a timer.
struct Outbox {
    /// One message to send.
    enum Item {
        case toWorker(CoordinatorToWorker)
        case reply(CoordinatorReply)
        case handshake(Handshake)
    }

    /// A queued entry: a message, or a batch still growing (kept in its own array, so
    /// appending to it never copies what is already there).
    private enum Entry {
        case item(Item)
        case dispatches(Int)
        case cancels(Int)
        case watchEvents(requestID: UInt64, Int)
    }

    private var queues: [RoutingID: [Entry]] = [:]
    /// Peers in the order they were first given something this turn.
    private var order: [RoutingID] = []
    private var dispatchBatches: [[AttemptDispatch]] = []
    private var cancelBatches: [[AttemptCancellation]] = []
    private var watchBatches: [[WatchEvent]] = []

    var isEmpty: Bool { order.isEmpty }

    /// Whether anything is queued for `routing` this turn.
    func hasItems(for routing: RoutingID) -> Bool { queues[routing] != nil }

    private mutating func append(_ entry: Entry, to routing: RoutingID) {
        if queues[routing] == nil {
            order.append(routing)
            queues[routing] = [entry]
        } else {
            queues[routing]!.append(entry)
        }
    }

    mutating func send(_ message: CoordinatorToWorker, to routing: RoutingID) {
        let last = queues[routing]?.last
        switch message {
        case .dispatch(let attempts):
            if case .dispatches(let index)? = last {
                dispatchBatches[index].append(contentsOf: attempts)
            } else {
                dispatchBatches.append(attempts)
                append(.dispatches(dispatchBatches.count - 1), to: routing)
            }
        case .cancel(let cancels):
            if case .cancels(let index)? = last {
                cancelBatches[index].append(contentsOf: cancels)
            } else {
                cancelBatches.append(cancels)
                append(.cancels(cancelBatches.count - 1), to: routing)
            }
        default:
            append(.item(.toWorker(message)), to: routing)
        }
    }

    mutating func send(_ reply: CoordinatorReply, to routing: RoutingID) {
        guard case .watchEvents(let events) = reply.kind else {
            append(.item(.reply(reply)), to: routing)
            return
        }
        if case .watchEvents(let requestID, let index)? = queues[routing]?.last, requestID == reply.requestID {
            watchBatches[index].append(contentsOf: events)
        } else {
            watchBatches.append(events)
            append(.watchEvents(requestID: reply.requestID, watchBatches.count - 1), to: routing)
        }
    }

    mutating func send(_ handshake: Handshake, to routing: RoutingID) {
        append(.item(.handshake(handshake)), to: routing)
    }

    /// Takes everything, peers in first-touched order, and empties the outbox.
    mutating func take() -> [(RoutingID, [Item])] {
        defer {
            queues.removeAll(keepingCapacity: true)
            order.removeAll(keepingCapacity: true)
            dispatchBatches.removeAll(keepingCapacity: true)
            cancelBatches.removeAll(keepingCapacity: true)
            watchBatches.removeAll(keepingCapacity: true)
        }
        return order.map { routing in
            let items = queues[routing]!.map { entry -> Item in
                switch entry {
                case .item(let item): item
                case .dispatches(let index): .toWorker(.dispatch(dispatchBatches[index]))
                case .cancels(let index): .toWorker(.cancel(cancelBatches[index]))
                case .watchEvents(let requestID, let index):
                    .reply(CoordinatorReply(requestID: requestID, .watchEvents(watchBatches[index])))
                }
            }
            return (routing, items)
        }
    }
}
