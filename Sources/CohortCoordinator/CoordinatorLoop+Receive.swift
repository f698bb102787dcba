import CohortCore
import CohortWire
import Foundation
import ZeroMQ

/// Decoding, the handshake, and refusing what cannot be served.
extension CoordinatorLoop {
    /// One received message: `frames[0]` is the peer's routing id; `userID` the key it came
    /// with (CURVE on).
    func handle(_ frames: [[UInt8]], userID: String? = nil) {
        guard let routing = frames.first else { return }
        if isStandby { return refuseAsStandby(routing) }
        let message: WireMessage
        do {
            message = try codec.decode(frames: Array(frames.dropFirst()))
        } catch {
            refuse(routing, error)
            return
        }
        stats.messagesReceived.bump()
        metrics?.received(message.family)
        guard let principal = authorize(message, from: routing, userID: userID) else { return }
        peers.heard(routing, now: now)
        switch message {
        case .handshake(.hello(let hello)):
            handleHello(hello, from: routing, key: principal.key)
        case .clientRequest(let request):
            guard let session = peers[routing], session.role == .client else {
                refuseWithoutSession(routing, client: request.requestID)
                return
            }
            handleClient(request, from: routing, session: session)
        case .worker(let message):
            guard let session = peers[routing], session.role == .worker, let worker = session.worker else {
                // Results for restored attempts are taken from a worker whose session is gone
                // (sent into the connection a restart closed), never from a client's session.
                if peers[routing] == nil { acceptOrphanResults(message, principal: principal) }
                refuseWithoutSession(routing, client: nil)
                return
            }
            handleWorker(message, from: routing, worker: worker, session: session)
        case .handshake, .coordinatorReply, .toWorker:
            // Messages only the coordinator sends.
            stats.refused.bump()
            refuse(routing, code: .badFrame, message: "a \(message.family) message is not sent to the coordinator")
        }
    }

    private func handleHello(_ hello: Hello, from routing: RoutingID, key: String?) {
        // The codec already refuses a HELLO whose body names another version (as
        // `unsupportedVersion`, below); this guard only keeps the loop safe if it ever did not.
        guard hello.protocolVersion == WireVersion.current else {
            return refuseVersion(.unsupportedVersion(hello.protocolVersion), from: routing)
        }
        guard !stopping else {
            outbox.send(
                .error(HandshakeError(code: .shuttingDown, message: "the coordinator is stopping")), to: routing)
            return
        }
        let (session, replaced) = peers.open(routing, role: hello.role, name: hello.peerName, key: key, now: now)
        if let replaced { endSession(replaced, routing: routing, reason: "a new session began on its connection") }
        logger.debug(
            "peer welcomed",
            metadata: ["peer.id": "\(session.peerID)", "peer.role": "\(hello.role)", "peer.name": "\(hello.peerName)"])
        outbox.send(
            .welcome(
                Welcome(
                    coordinatorID: configuration.coordinatorID, epoch: epoch, peerID: session.peerID,
                    heartbeatInterval: configuration.heartbeatInterval,
                    heartbeatLiveness: UInt32(clamping: configuration.heartbeatLiveness),
                    softwareVersion: CoordinatorLoop.softwareVersion)),
            to: routing)
    }

    /// What ending a session means: a worker's attempts are lost; a client's watches end.
    func endSession(_ session: PeerSession, routing: RoutingID, reason: String) {
        if let worker = session.worker {
            logger.info(
                "worker left",
                metadata: ["worker.id": "\(worker)", "worker.name": "\(session.name)", "reason": "\(reason)"])
            apply(scheduler.workerLost(worker, reason: reason, now: now))
        }
        dropWatches(of: routing)
    }

    /// A message of another protocol version: a handshake error, and a session on this
    /// connection ends, since after a handshake error the peer is in none (docs/protocol.md §4.5).
    private func refuseVersion(_ refusal: HandshakeError, from routing: RoutingID) {
        stats.wrongVersion.bump()
        outbox.send(.error(refusal), to: routing)
        if let session = peers.close(routing) {
            endSession(session, routing: routing, reason: "it sent a message of another protocol version")
        }
    }

    /// Frames that could not be decoded.
    private func refuse(_ routing: RoutingID, _ error: WireError) {
        if case .unsupportedVersion = error {
            return refuseVersion(HandshakeError(refusing: error), from: routing)
        }
        let count = stats.badFrames.add(1, ordering: .relaxed).newValue
        if count <= 10 || count % 1000 == 0 {
            logger.warning("refused undecodable message", metadata: ["error": "\(error)", "frames.bad": "\(count)"])
        }
        refuse(routing, code: error.code, message: Self.refusalText(error))
    }

    /// Answers a refused message the way the peer can read: within a session by its family's
    /// error, without one by a handshake error.
    private func refuse(_ routing: RoutingID, code: ProtocolError.Code, message: String) {
        switch peers[routing]?.role {
        case .client?:
            outbox.send(
                CoordinatorReply(requestID: 0, .error(ProtocolError(code: code, message: message))), to: routing)
        case .worker?:
            outbox.send(.error(WorkerError(code: code, message: message)), to: routing)
        case nil:
            outbox.send(.error(HandshakeError(code: code, message: message)), to: routing)
        }
    }

    /// A well-formed message from a connection without a session, or whose session has the
    /// other role.
    private func refuseWithoutSession(_ routing: RoutingID, client requestID: UInt64?) {
        stats.refused.bump()
        if let session = peers[routing] {
            refuse(routing, code: .permissionDenied, message: "a \(session.role) session may not send that message")
            return
        }
        let message = "no session: send HELLO first"
        // A worker declared lost that comes back sends its late reports here.
        logger.notice(
            "refused a message from a connection without a session",
            metadata: ["peer.role": "\(requestID == nil ? "worker" : "client")"])
        if let requestID {
            outbox.send(
                CoordinatorReply(
                    requestID: requestID, .error(ProtocolError(code: .handshakeRequired, message: message))),
                to: routing)
        } else {
            outbox.send(.error(WorkerError(code: .handshakeRequired, message: message)), to: routing)
        }
    }

    /// Cohort's release, sent in WELCOME for information.
    static let softwareVersion = "0.1.0"
}
