import CohortCore
import CohortWire
import Foundation
import ZeroMQ

/// Flushing the turn's outbox to the socket.
extension CoordinatorLoop {
    /// Sends everything the turn produced. A peer that cannot be reached (gone, or at its
    /// high-water mark) loses its session: a worker's attempts get new attempts, a client's
    /// watches end. Failures of that kind feed more actions, flushed in the same call.
    func flush(_ router: Socket) {
        var rounds = 0
        while !outbox.isEmpty, rounds < 8 {
            rounds += 1
            for (routing, items) in outbox.take() {
                var delivered = true
                for item in items where delivered {
                    delivered = send(item, to: routing, router)
                }
                if delivered {
                    peers.sent(routing, now: now)
                } else {
                    unreachable(routing)
                }
            }
        }
    }

    /// Sends one item, splitting batches over `maxBatch` items or the frame size limit.
    private func send(_ item: Outbox.Item, to routing: RoutingID, _ router: Socket) -> Bool {
        switch item {
        case .toWorker(.dispatch(let tasks)) where tasks.count > 1:
            return sendBatches(tasks, to: routing, router) { .toWorker(.dispatch($0)) } failSingle: { task in
                // One attempt too large to send (a huge injected input): it fails, the rest go on.
                self.failUnsendable(task.task, routing: routing)
            }
        case .toWorker(.cancel(let cancels)) where cancels.count > configuration.maxBatch:
            return sendBatches(cancels, to: routing, router) { .toWorker(.cancel($0)) } failSingle: { _ in }
        case .reply(let reply):
            if case .watchEvents(let events) = reply.kind, events.count > configuration.maxBatch {
                return sendBatches(events, to: routing, router) {
                    .reply(CoordinatorReply(requestID: reply.requestID, .watchEvents($0)))
                } failSingle: { _ in }
            }
            fallthrough
        default:
            switch encode(item) {
            case .success(let frames):
                return transmit(frames, to: routing, router)
            case .failure(let error):
                logger.error("cannot encode a message", metadata: ["error": "\(error)"])
                if case .toWorker(.dispatch(let tasks)) = item, let task = tasks.first {
                    failUnsendable(task.task, routing: routing)
                    return true
                }
                if case .reply(let reply) = item {
                    let refusal = ProtocolError(code: error.code, message: "the reply is too large to send: \(error)")
                    return send(.reply(CoordinatorReply(requestID: reply.requestID, .error(refusal))), to: routing, router)
                }
                return true
            }
        }
    }

    private func sendBatches<Element>(
        _ elements: [Element], to routing: RoutingID, _ router: Socket, wrap: ([Element]) -> Outbox.Item,
        failSingle: (Element) -> Void
    ) -> Bool {
        var start = 0
        var size = min(configuration.maxBatch, elements.count)
        while start < elements.count {
            let end = min(start + size, elements.count)
            switch encode(wrap(Array(elements[start..<end]))) {
            case .success(let frames):
                guard transmit(frames, to: routing, router) else { return false }
                start = end
            case .failure(.frameTooLarge) where end - start > 1:
                size = max(1, (end - start) / 2)
            case .failure(let error):
                logger.error("cannot encode a batch item", metadata: ["error": "\(error)"])
                failSingle(elements[start])
                start += 1
            }
        }
        return true
    }

    private func encode(_ item: Outbox.Item) -> Result<[[UInt8]], WireError> {
        do {
            switch item {
            case .toWorker(let message): return .success(try codec.encode(message))
            case .reply(let reply): return .success(try codec.encode(reply))
            case .handshake(let handshake): return .success(try codec.encode(handshake))
            }
        } catch {
            return .failure(error)
        }
    }

    private func transmit(_ frames: [[UInt8]], to routing: RoutingID, _ router: Socket) -> Bool {
        do {
            guard try router.send(to: routing, frames, wait: .never) else {
                stats.sendFailures.bump()
                return false
            }
            stats.messagesSent.bump()
            return true
        } catch {
            stats.sendFailures.bump()
            if !error.isHostUnreachable {
                logger.warning("send failed", metadata: ["error": "\(error)"])
            }
            return false
        }
    }

    /// A peer could not be sent to: its session ends.
    private func unreachable(_ routing: RoutingID) {
        guard let session = peers.close(routing) else { return }
        logger.info("peer unreachable; session ended", metadata: ["peer.id": "\(session.peerID)"])
        endSession(session, routing: routing, reason: "the coordinator could not reach it")
    }

    /// An attempt whose dispatch cannot be encoded fails (nothing else could be done with it).
    private func failUnsendable(_ task: TaskRef, routing: RoutingID) {
        guard let worker = peers[routing]?.worker else { return }
        let ref = AttemptRef(task)
        if let actions = try? scheduler.taskFinished(
            ref, outcome: .failed(error: "its input is too large to send to a worker"), worker: worker, now: now)
        {
            apply(actions)
        }
    }
}
