import CohortWire

/// Requests, replies and what callers ask of the session.
extension ClientSession {
    /// A caller's request: sent, and answered before ``Settings/requestTimeout`` (`once`), or
    /// streamed until the group's end (`stream`).
    package mutating func request(
        _ id: UInt64, _ kind: ClientRequest.Kind, answering: Answering, now: Instant
    ) -> [Action] {
        if let ending = endedWith { return [.fail(id, ending)] }
        if abandoned.remove(id) != nil { return [.fail(id, .cancelled)] }
        let deadline = answering == .once ? now.advanced(by: settings.requestTimeout) : nil
        pending[id] = Pending(kind: kind, answering: answering, deadline: deadline)
        return [.send(ClientRequest(requestID: id, kind))]
    }

    /// A request could not be sent: it fails (a probe that could not be sent is no probe).
    package mutating func requestNotSent(_ id: UInt64, _ error: ClientError, now: Instant) -> [Action] {
        if probe?.id == id { probe = nil }
        guard pending.removeValue(forKey: id) != nil else { return [] }
        return [.fail(id, error)]
    }

    /// The caller stopped listening to a watch: forgotten, and the coordinator told.
    package mutating func unwatch(_ id: UInt64, group: String, now: Instant) -> [Action] {
        guard endedWith == nil, pending.removeValue(forKey: id) != nil else { return [] }
        return [.send(ClientRequest(requestID: internalID(), .unwatch(group: group)))]
    }

    /// The caller's task was cancelled: its request fails `cancelled`, now or when it arrives.
    package mutating func abandon(_ id: UInt64, now: Instant) -> [Action] {
        if pending.removeValue(forKey: id) != nil { return [.fail(id, .cancelled)] }
        if endedWith == nil { abandoned.insert(id) }
        return []
    }

    /// The caller closes the client: goodbye, and everything open fails `closed`.
    package mutating func close(now: Instant) -> [Action] {
        guard endedWith == nil else { return [] }
        guard case .serving = phase else { return end(.closed) }
        let goodbye = ClientRequest(requestID: internalID(), .disconnect(reason: "client closed"))
        return [.send(goodbye)] + end(.closed)
    }

    /// The socket failed: the connection cannot go on.
    package mutating func socketFailed(_ error: ClientError, now: Instant) -> [Action] {
        end(error)
    }

    /// A message from the coordinator, or frames that did not decode.
    package mutating func received(_ decoded: Result<WireMessage, WireError>, now: Instant) -> [Action] {
        switch phase {
        case .handshaking: return handshakeReceived(decoded, now: now)
        case .serving: break
        case .idle, .ended: return []
        }
        lastHeard = now
        probe = nil
        let message: WireMessage
        switch decoded {
        case .success(let decodedMessage): message = decodedMessage
        case .failure(let error): return [.log(.warning, "ignored undecodable frames from the coordinator: \(error)")]
        }
        switch message {
        case .coordinatorReply(let reply):
            if case .error(let error) = reply.kind, error.code == .handshakeRequired, !pending.isEmpty {
                // The coordinator restarted and does not know this session: say HELLO again;
                // the request waits to be sent again.
                return coordinatorLost(error.message, now: now)
            }
            if reply.requestID == 0, case .error(let error) = reply.kind, error.code == .shuttingDown, error.restarting
            {
                // Stopped with a journal (a planned restart): what is open waits for it, as after
                // a crash; with nothing open, the next request finds it back (HANDSHAKE_REQUIRED,
                // then HELLO again) or times out. A coordinator without a journal fails what is
                // pending at once (`route`).
                restartAnnounced = true
                let actions = coordinatorLost("it is restarting (\(error.message))", now: now)
                reconnecting?.announced = true
                return actions
            }
            return route(reply)
        case .handshake(.welcome(let welcome)) where reconnecting != nil:
            return reconnected(welcome, now: now)
        case .handshake(.error(let refusal)) where refusal.code == .notLeader && reconnecting != nil:
            // Reconnecting after a failover: on to the leader the standby names.
            let moved = moveOn(leader: refusal.leader, now: now)
            if !moved.isEmpty { reconnecting?.lastHello = now }
            return moved
        case .handshake(.error(let refusal)) where refusal.code == .notLeader:
            // Serving, and the coordinator answers as a standby (it stepped down): lost, as
            // after a failover; on to the leader it names, or the next of the list.
            let lost = coordinatorLost("it no longer leads (\(refusal.message))", now: now)
            guard !lost.isEmpty else { return end(ClientError(refusal: refusal, endpoint: endpoint)) }
            let moved = moveOn(leader: refusal.leader, now: now)
            guard !moved.isEmpty else { return lost }
            // HELLO goes to where it moved, not to the standby.
            return lost.filter { $0 != .sendHello } + moved
        case .handshake(.error(let refusal)):
            return end(ClientError(refusal: refusal, endpoint: endpoint))
        default:
            return [.log(.debug, "ignored a \(message.family) message")]
        }
    }

    private mutating func route(_ reply: CoordinatorReply) -> [Action] {
        if case .error(let error) = reply.kind, error.code == .handshakeRequired {
            // A coordinator restarted on the same endpoint does not know this session: every
            // pending call (a watch of a group the old one ran, too) fails rather than hangs.
            return end(
                ClientError(
                    .connectionLost,
                    "the coordinator at \(endpoint) no longer knows this client: it restarted (\(error.message))"))
        }
        if reply.requestID == 0 {
            guard case .error(let error) = reply.kind else { return [] }
            // Sent to every client as a coordinator without a journal stops (SIGTERM): what
            // is pending fails with a message that says so, rather than waiting for a timeout.
            return end(
                error.code == .shuttingDown
                    ? ClientError(.shuttingDown, "the coordinator at \(endpoint) is shutting down (\(error.message))")
                    : ClientError(error))
        }
        let id = reply.requestID
        guard let entry = pending[id] else { return [] }
        switch entry.answering {
        case .once:
            pending[id] = nil
            return [.answer(id, reply.kind)]
        case .stream:
            switch reply.kind {
            case .error(let error):
                pending[id] = nil
                return [.fail(id, ClientError(error))]
            case .group(let detail) where detail.state.isFinished:
                pending[id] = nil
                return [.yield(id, reply.kind), .finish(id)]
            case .watchEvents(let events)
            where events.contains(where: { if case .finished = $0.kind { true } else { false } }):
                pending[id] = nil
                return [.yield(id, reply.kind), .finish(id)]
            default:
                return [.yield(id, reply.kind)]
            }
        }
    }
}
