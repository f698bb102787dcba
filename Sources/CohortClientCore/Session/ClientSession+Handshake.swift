import CohortWire

/// The first handshake: HELLO, then WELCOME or a refusal within the connect timeout.
extension ClientSession {
    /// Starts the handshake: HELLO is sent, and a WELCOME must come within
    /// ``Settings/connectTimeout``.
    package mutating func connect(now: Instant) -> [Action] {
        guard case .idle = phase else { return [] }
        phase = .handshaking(Handshake(deadline: now.advanced(by: settings.connectTimeout)))
        lastHeard = now
        movedAt = now
        return [.sendHello]
    }

    /// HELLO could not be sent: the handshake fails; later (saying HELLO again) it is retried.
    package mutating func helloNotSent(_ why: String, now: Instant) -> [Action] {
        guard isHandshaking else { return [] }
        return end(ClientError(.internal, "cannot send HELLO to \(endpoint): \(why)"))
    }

    /// What the socket monitor saw.
    package mutating func connection(_ event: ConnectionEvent, now: Instant) -> [Action] {
        switch phase {
        case .handshaking(var handshake):
            switch event {
            case .connected:
                handshake.connected = true
            case .connectRetried:
                // libzmq retries a refused connect every 100 ms; two refusals in a row, with no
                // connection between, are an answer: nothing listens.
                handshake.refusals += handshake.connected ? 0 : 1
                if handshake.refusals >= 2, hasAlternatives {
                    handshake.refusals = 0
                    handshake.connected = false
                    phase = .handshaking(handshake)
                    return moveOn(leader: nil, now: now)
                }
                if handshake.refusals >= 2 {
                    return end(
                        ClientError(
                            .unreachable,
                            "cannot reach the coordinator at \(endpoint): the connection was refused (nothing listens there; is the coordinator running?)"
                        ))
                }
            case .handshakeFailed(let failure):
                let error = handshakeError(failure)
                // A broken connection looks like a refusal once; three in a row are one.
                handshake.brokenHandshakes += failure.definite ? 3 : 1
                handshake.lastFailure = error
                if handshake.brokenHandshakes >= 3 { return end(error) }
            case .disconnected:
                break
            }
            phase = .handshaking(handshake)
            return []
        case .serving:
            guard event == .disconnected else { return [] }
            return coordinatorLost("its connection dropped", now: now)
        case .idle, .ended:
            return []
        }
    }

    /// A message (or undecodable frames) before the first WELCOME.
    package mutating func handshakeReceived(_ message: Result<WireMessage, WireError>, now: Instant) -> [Action] {
        switch message {
        case .success(.handshake(.welcome(let welcome))):
            lastHeard = now
            phase = .serving
            return [.welcomed(welcome)]
        case .success(.handshake(.error(let refusal))):
            if refusal.code == .notLeader, case .handshaking(var handshake) = phase {
                // A standby: on to the leader it names, or the next coordinator of the list.
                let moved = moveOn(leader: refusal.leader, now: now)
                if !moved.isEmpty {
                    (handshake.refusals, handshake.connected) = (0, false)
                    handshake.lastFailure = ClientError(refusal: refusal, endpoint: endpoint)
                    phase = .handshaking(handshake)
                    return moved
                }
            }
            return end(ClientError(refusal: refusal, endpoint: endpoint))
        case .success(let other):
            return [.log(.debug, "ignored a \(other.family) message before WELCOME")]
        case .failure(.unsupportedVersion(let got, _)):
            return end(
                ClientError(
                    .protocolMismatch,
                    "the coordinator at \(endpoint) speaks protocol version \(got); this client speaks \(WireVersion.current)"
                ))
        case .failure(let error):
            return [.log(.debug, "ignored undecodable frames before WELCOME: \(error)")]
        }
    }

    /// No WELCOME by the deadline: the last failed handshake, or unreachable.
    package mutating func handshakeTimedOut(_ handshake: Handshake, now: Instant) -> [Action] {
        if now < handshake.deadline, hasAlternatives, let movedAt,
            movedAt.duration(to: now) >= settings.switchAfter
        {
            // Silent (stopped, cut off, or a leader that just died): the next of the list.
            return moveOn(leader: nil, now: now)
        }
        guard now >= handshake.deadline else { return [] }
        if let failure = handshake.lastFailure { return end(failure) }
        return end(
            ClientError(
                .unreachable,
                "cannot reach the coordinator at \(endpoint): no answer within \(Self.describe(settings.connectTimeout))"
                    + (settings.curve
                        ? " (the CURVE handshake did not complete: check --server-key and that the coordinator uses CURVE)"
                        : " (if it requires CURVE, give this client its keys: --key and --server-key)")
            ))
    }

    /// The error a failed handshake becomes: a refused key is a permission error (exit 77),
    /// any other failure a protocol mismatch (exit 69).
    private func handshakeError(_ failure: HandshakeFailure) -> ClientError {
        if failure.keyRefused {
            return ClientError(
                .permissionDenied, "the coordinator at \(endpoint) refused the handshake: \(failure.explanation)")
        }
        if !settings.curve {
            return ClientError(
                .protocolMismatch,
                "the coordinator at \(endpoint) requires CURVE and this client has no keys (\(failure.detail)): "
                    + "pass --server-key FILE (the coordinator's public key) and --key FILE (this client's key pair; "
                    + "cohort keygen --role client), see docs/security.md")
        }
        return ClientError(
            .protocolMismatch, "the coordinator at \(endpoint) refused the handshake: \(failure.explanation)")
    }
}
