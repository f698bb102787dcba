extension WireCodec {
    /// The frames of `message`, as one message or, if its body would be over
    /// ``maxFrameSize``, as several messages that split its batch.
    ///
    /// Batches (`dispatch`, `cancel`, `started`, `results`, `watchEvents`) may
    /// be split anywhere: a batch of N means what N messages of one would
    /// (docs/protocol.md §4.4). Send the messages in the order returned.
    ///
    /// - Throws: ``WireError/frameTooLarge(frame:size:limit:)`` if a single
    ///   item (or a message that is not a batch) is over the limit.
    public func encodeSplittingBatches(_ message: WireMessage) throws(WireError) -> [[[UInt8]]] {
        do {
            return [try encode(message)]
        } catch {
            guard case .frameTooLarge = error, let (first, second) = message.halves() else { throw error }
            return try encodeSplittingBatches(first) + encodeSplittingBatches(second)
        }
    }
}

extension WireMessage {
    /// The message as two messages of half its batch each; nil if it is not a batch of two or more.
    func halves() -> (WireMessage, WireMessage)? {
        func split<Item>(_ items: [Item], _ make: ([Item]) -> WireMessage) -> (WireMessage, WireMessage)? {
            guard items.count > 1 else { return nil }
            let middle = items.count / 2
            return (make(Array(items[..<middle])), make(Array(items[middle...])))
        }
        switch self {
        case .toWorker(.dispatch(let attempts)): return split(attempts) { .toWorker(.dispatch($0)) }
        case .toWorker(.cancel(let attempts)): return split(attempts) { .toWorker(.cancel($0)) }
        case .worker(.started(let attempts)): return split(attempts) { .worker(.started($0)) }
        case .worker(.results(let results)): return split(results) { .worker(.results($0)) }
        case .coordinatorReply(let reply):
            guard case .watchEvents(let events) = reply.kind else { return nil }
            return split(events) { .coordinatorReply(CoordinatorReply(requestID: reply.requestID, .watchEvents($0))) }
        default: return nil
        }
    }
}
