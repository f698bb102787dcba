import CohortWire

/// Time: deadlines, the liveness probe while watches are silent, and reconnecting after the
/// coordinator went away.
extension ClientSession {
    /// What time alone decides; the shell calls it after every turn.
    package mutating func tick(now: Instant) -> [Action] {
        switch phase {
        case .handshaking(let handshake): return handshakeTimedOut(handshake, now: now)
        case .serving: return checkTimers(now: now)
        case .idle, .ended: return []
        }
    }

    private mutating func checkTimers(now: Instant) -> [Action] {
        var actions: [Action] = []
        for (id, entry) in pending.sorted(by: { $0.key < $1.key }) {
            if let deadline = entry.deadline, deadline <= now {
                pending[id] = nil
                actions.append(
                    .fail(id, ClientError(.connectionLost, "no answer from the coordinator at \(endpoint) in time")))
            }
        }
        // While the coordinator is away, HELLO is said again for whatever waits, one-answer
        // requests included (the HELLO that `coordinatorLost` sent may be lost with the
        // coordinator, and until a WELCOME every request is answered HANDSHAKE_REQUIRED);
        // with nothing left waiting, the next request finds the coordinator again.
        if let reconnecting {
            if pending.isEmpty {
                self.reconnecting = nil
            } else if reconnecting.since.duration(to: now) >= settings.reconnectTimeout {
                let limit = Self.describe(settings.reconnectTimeout)
                let lost = ClientError(
                    .connectionLost,
                    reconnecting.announced
                        ? "the coordinator at \(endpoint) said it was restarting but was not back within \(limit)"
                        : "the coordinator at \(endpoint) went away and was not back within \(limit)")
                actions += failAll(lost)
                self.reconnecting = nil
            } else if hasAlternatives,
                max(movedAt ?? reconnecting.since, reconnecting.since).duration(to: now) >= settings.switchAfter
            {
                // The coordinator it waits for stays silent: the next of the list (the leader
                // after a failover is one of them).
                self.reconnecting?.lastHello = now
                actions += moveOn(leader: nil, now: now)
            } else if reconnecting.lastHello.duration(to: now) >= settings.helloInterval {
                self.reconnecting?.lastHello = now
                actions.append(.sendHello)
            }
            return actions
        }
        // Only watches are probed: a one-answer request has its own deadline.
        guard isWatching else {
            probe = nil
            return actions
        }
        if let probe {
            if probe.sentAt.duration(to: now) >= settings.probeAfter {
                self.probe = nil
                if hasAlternatives {
                    // Another coordinator of the list may lead by now: the watches follow it.
                    actions += coordinatorLost("the coordinator at \(endpoint) stopped answering", now: now)
                } else {
                    actions += failAll(
                        ClientError(.connectionLost, "the coordinator at \(endpoint) stopped answering"))
                }
            }
        } else if let lastHeard, lastHeard.duration(to: now) >= settings.probeAfter {
            let id = internalID()
            probe = Probe(id: id, sentAt: now)
            actions.append(.send(ClientRequest(requestID: id, .workers)))
        }
        return actions
    }

    /// Fails every open request and watch (the session goes on: a later request may find the
    /// coordinator again).
    private mutating func failAll(_ error: ClientError) -> [Action] {
        let open = pending.keys.sorted()
        pending = [:]
        return open.map { .fail($0, error) }
    }

    /// The coordinator went away (it restarts, having said so, or died): with requests or
    /// watches open, say HELLO again until it is back (a restarted coordinator reloads its
    /// journal), at most ``Settings/reconnectTimeout``.
    package mutating func coordinatorLost(_ why: String, now: Instant) -> [Action] {
        guard case .serving = phase, reconnecting == nil, !pending.isEmpty else { return [] }
        let announced = restartAnnounced
        probe = nil
        reconnecting = Reconnection(since: now, lastHello: now, announced: announced)
        return [
            .connectionChanged(
                .waiting(reason: why, restarting: announced, timeout: settings.reconnectTimeout)),
            .sendHello,
        ]
    }

    /// Welcomed again: open requests and watches are sent again under their ids (a watch starts
    /// over with a fresh snapshot). A submission without a group id is not sent again (it might
    /// have been accepted already); it fails with ``ClientError/Code/connectionLost``.
    package mutating func reconnected(_ welcome: Welcome, now: Instant) -> [Action] {
        reconnecting = nil
        restartAnnounced = false
        var actions: [Action] = [.connectionChanged(.reconnected(epoch: welcome.epoch))]
        for (id, entry) in pending.sorted(by: { $0.key < $1.key }) {
            if case .submit(let submission) = entry.kind, submission.groupID == nil {
                pending[id] = nil
                actions.append(
                    .fail(
                        id,
                        ClientError(
                            .connectionLost,
                            "the coordinator at \(endpoint) restarted before it answered; the group may have been accepted (use --id to resubmit safely)"
                        )))
                continue
            }
            actions.append(.send(ClientRequest(requestID: id, entry.kind)))
        }
        return actions
    }
}
