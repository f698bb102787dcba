import CohortCore
import CohortWire
import Foundation

/// Who may do what: every decoded message passes here before it is served (docs/security.md).
extension CoordinatorLoop {
    /// The principal `message` is sent under, or `nil` after refusing it: its key is no longer
    /// authorised (removed, then SIGHUP), or its role lacks the permission the message needs.
    ///
    /// A client request that carries an attempt token is judged by the token (docs/security.md,
    /// "Attempt tokens") unless its key may do it by itself: without CURVE, and for a key that
    /// is not authorised (admitted only for this), the token must be valid, its attempt still
    /// running, and the request one it allows for its own group.
    func authorize(_ message: WireMessage, from routing: RoutingID, userID: String?) -> Principal? {
        var principal = Principal.anonymous
        if let security {
            if let known = security.principal(userID: userID) {
                principal = known
            } else if security.settings.admitsAttemptTokenKeys, let userID, !security.wasAuthorised(userID) {
                principal = .unauthorised(userID)
            } else {
                refuseRevoked(message, from: routing)
                return nil
            }
        }
        switch message {
        case .handshake(.hello(let hello)) where hello.role == .worker && !principal.may(.register):
            deny(routing, principal.refusal(.register, "register as a worker"), requestID: nil)
            return nil
        case .clientRequest(let request):
            let needed = security == nil ? nil : requiredPermission(request.kind, principal)
            if let token = request.attemptToken, request.carriesAttemptToken, security == nil || needed != nil {
                guard case .failure(let refusal) = tokenHolder(token, for: request.kind) else { return principal }
                deny(routing, "permission denied: \(refusal.text)", requestID: request.requestID)
                return nil
            }
            guard let needed else { return principal }
            deny(routing, principal.refusal(needed.0, needed.1), requestID: request.requestID)
            return nil
        default:
            // Worker messages need a worker session, which needed `register` at HELLO.
            return principal
        }
    }

    /// The running attempt whose `token` lets a request of `kind` through, or why it does not.
    func tokenHolder(_ token: String, for kind: ClientRequest.Kind) -> Result<AttemptRef, TokenRefusal> {
        switch attemptTokens.holder(of: token, isRunning: { self.scheduler.isRunning($0) }) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let ref):
            guard let group = kind.tokenGroup else {
                return .failure(.notAllowed(ref, doing: RequestPolicy.permission(for: kind)?.1 ?? "this request"))
            }
            return group == ref.group ? .success(ref) : .failure(.otherGroup(ref, requested: group))
        }
    }

    /// The permission a client request lacks, with what it was for; `nil` if it may go on.
    private func requiredPermission(_ kind: ClientRequest.Kind, _ principal: Principal) -> (Permission, String)? {
        if case .cancel(let group, _, _) = kind, let owner = scheduler.groupOwner(group) {
            return RequestPolicy.mayCancel(principal, owner: owner).map {
                ($0, "cancel group \(group), submitted by another key")
            }
        }
        if case .addChildren(let group, _) = kind, let owner = scheduler.groupOwner(group) {
            return RequestPolicy.mayAdd(principal, owner: owner).map {
                ($0, "add children to group \(group), submitted by another key")
            }
        }
        guard let (permission, doing) = RequestPolicy.permission(for: kind), !principal.may(permission) else {
            return nil
        }
        return (permission, doing)
    }

    /// A refused request: a client gets its request's PERMISSION_DENIED error; a peer without
    /// a session (or a worker) gets a handshake error and has no session afterwards.
    private func deny(_ routing: RoutingID, _ message: String, requestID: UInt64?) {
        stats.refused.bump()
        logger.warning("permission denied", metadata: ["reason": "\(message)"])
        if let requestID, peers[routing]?.role == .client {
            outbox.send(
                CoordinatorReply(
                    requestID: requestID, .error(ProtocolError(code: .permissionDenied, message: message))), to: routing
            )
            return
        }
        outbox.send(.error(HandshakeError(code: .permissionDenied, message: message)), to: routing)
    }

    /// A message whose key was removed from the authorised keys: refused, and the connection's
    /// session ends (a worker's attempts go elsewhere).
    private func refuseRevoked(_ message: WireMessage, from routing: RoutingID) {
        let text = "permission denied: this key is no longer among the coordinator's authorised keys"
        var requestID: UInt64?
        if case .clientRequest(let request) = message { requestID = request.requestID }
        deny(routing, text, requestID: requestID)
        if let session = peers.close(routing) {
            endSession(session, routing: routing, reason: "its key is no longer authorised")
        }
    }

    /// Re-reads the authorised keys (SIGHUP); the next message of a removed key is refused.
    func reloadAuthorizedKeys() {
        guard let security else {
            logger.notice("no authorised keys to reload: CURVE is off")
            return
        }
        security.reload(logger: logger)
        // Sessions of removed keys end now, not at their next message: a watching client is
        // told (its watches end with PERMISSION_DENIED), a worker's attempts go elsewhere.
        let text = "permission denied: this key is no longer among the coordinator's authorised keys"
        for (routing, session) in peers.sessions
        where session.key.map(security.wasAuthorised) == true {
            stats.refused.bump()
            switch session.role {
            case .client:
                let refusal = ProtocolError(code: .permissionDenied, message: text)
                for (_, watch) in watches.watches(by: routing) {
                    outbox.send(CoordinatorReply(requestID: watch.requestID, .error(refusal)), to: routing)
                }
                outbox.send(CoordinatorReply(requestID: 0, .error(refusal)), to: routing)
            case .worker:
                outbox.send(.error(HandshakeError(code: .permissionDenied, message: text)), to: routing)
            }
            peers.close(routing)
            endSession(session, routing: routing, reason: "its key is no longer authorised")
        }
    }

    /// Logs the loud warning of a plaintext coordinator that other machines can reach; the
    /// CLI also prints it (``CoordinatorConfiguration/exposureWarning``).
    func warnIfExposed(_ endpoint: String) {
        guard security == nil, let text = configuration.exposureWarning else { return }
        logger.warning("\(text)", metadata: ["endpoint": "\(endpoint)"])
    }
}
