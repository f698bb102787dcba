import CohortCore
import CohortWire
import Foundation
import ZeroMQ

/// Flushing the turn's outbox to the socket.
extension CoordinatorLoop {
    /// Sends everything the turn produced. A peer that cannot be reached (gone, or at its
    /// high-water mark) loses its session: a worker's attempts get new attempts, a client's
    /// watches end. Failures of that kind feed more actions, flushed in the same call.
    /// With a journal, the turn's messages wait for its commit instead
    /// (``endTurn(_:journal:)``).
    func flush(_ router: Socket) {
        if let journalWriter {
            endTurn(router, journal: journalWriter)
            return
        }
        var rounds = 0
        while !outbox.isEmpty, rounds < 8 {
            rounds += 1
            deliver(outbox.take(), router)
        }
    }

    /// Sends messages taken from the outbox, peer by peer.
    func deliver(_ messages: [(RoutingID, [Outbox.Item])], _ router: Socket) {
        for (routing, items) in messages {
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

    /// Sends one item: batches in chunks of at most `maxBatch` items, each split further by
    /// the codec if it would exceed the frame limit.
    private func send(_ item: Outbox.Item, to routing: RoutingID, _ router: Socket) -> Bool {
        switch item {
        case .toWorker(.dispatch(let attempts)) where attempts.count > configuration.maxBatch:
            return chunks(attempts).allSatisfy { send(.toWorker(.dispatch($0)), to: routing, router) }
        case .toWorker(.cancel(let cancels)) where cancels.count > configuration.maxBatch:
            return chunks(cancels).allSatisfy { send(.toWorker(.cancel($0)), to: routing, router) }
        case .reply(let reply):
            if case .watchEvents(let events) = reply.kind, events.count > configuration.maxBatch {
                return chunks(events).allSatisfy {
                    send(.reply(CoordinatorReply(requestID: reply.requestID, .watchEvents($0))), to: routing, router)
                }
            }
        default:
            break
        }
        let message: WireMessage =
            switch item {
            case .toWorker(let message): .toWorker(message)
            case .reply(let reply): .coordinatorReply(reply)
            case .handshake(let handshake): .handshake(handshake)
            }
        if let metrics { count(item, message.family, metrics) }
        do {
            for frames in try codec.encodeSplittingBatches(message) {
                guard transmit(frames, to: routing, router) else { return false }
            }
            return true
        } catch {
            return undeliverable(item, error, to: routing, router)
        }
    }

    /// A message that cannot be encoded even split to single items (one item over the frame
    /// limit, e.g. a huge injected input or output).
    private func undeliverable(_ item: Outbox.Item, _ error: WireError, to routing: RoutingID, _ router: Socket) -> Bool
    {
        logger.error("cannot encode a message", metadata: ["error": "\(error)"])
        switch item {
        case .toWorker(.dispatch(let attempts)) where attempts.count > 1:
            // Send what fits; fail the attempts that do not.
            return attempts.allSatisfy { send(.toWorker(.dispatch([$0])), to: routing, router) }
        case .toWorker(.dispatch(let attempts)):
            if let attempt = attempts.first { failUnsendable(attempt.ref, routing: routing) }
            return true
        case .reply(let reply):
            guard case .error = reply.kind else {
                let refusal = ProtocolError(code: error.code, message: "the reply is too large to send: \(error)")
                return send(.reply(CoordinatorReply(requestID: reply.requestID, .error(refusal))), to: routing, router)
            }
            return true
        default:
            return true
        }
    }

    /// A message going out, and a refusal if it is an error.
    private func count(_ item: Outbox.Item, _ family: WireFamily, _ metrics: CoordinatorMetrics) {
        metrics.sent(family)
        switch item {
        case .toWorker(.error(let error)): metrics.refused(error.code)
        case .handshake(.error(let error)): metrics.refused(error.code)
        case .reply(let reply):
            if case .error(let error) = reply.kind { metrics.refused(error.code) }
        default: break
        }
    }

    private func chunks<Element>(_ elements: [Element]) -> [[Element]] {
        stride(from: 0, to: elements.count, by: configuration.maxBatch).map {
            Array(elements[$0..<min($0 + configuration.maxBatch, elements.count)])
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
    private func failUnsendable(_ attempt: WireAttemptRef, routing: RoutingID) {
        guard let worker = peers[routing]?.worker else { return }
        let ref = AttemptRef(attempt)
        if let actions = try? scheduler.attemptFinished(
            ref, outcome: .failed(error: "its input is too large to send to a worker"), worker: worker, now: now)
        {
            apply(actions)
        }
    }
}
