import CohortCore
import CohortSpec
import CohortWire
import Foundation

/// The coordinator's client-facing shell, modelled on `CoordinatorLoop+Clients.swift` and
/// `+Submit.swift`; its decisions of who watches what and when a cancel is acknowledged are
/// the coordinator's own (`WatchTable`, `PendingCancels`, CohortCore/Coordinator), over the
/// simulation's routes (a client and its connection) instead of ROUTER ids.
struct ClientShell {
    /// Where a reply goes: a client, on one of its connections.
    struct Route: Hashable, Sendable {
        var client: Int
        var connection: UInt64
    }

    /// Connections with a client session → the client.
    var routes: [UInt64: Int] = [:]
    var watches = WatchTable<Route>()
    var pendingCancels = PendingCancels<Route>()

    /// The coordinator crashed: every session, watch and pending cancel is gone.
    mutating func reset() {
        self = ClientShell()
    }
}

extension Simulation {
    /// A HELLO gets a session and a WELCOME; a request on a connection without a session is
    /// answered `HANDSHAKE_REQUIRED` (the session says HELLO again and sends it again).
    mutating func coordinatorReceiveFromClient(_ message: Message, client: Int) {
        let connection = message.connection
        switch message {
        case .clientHello:
            // TCP never duplicates a HELLO, and a session says HELLO again only on a connection
            // the coordinator does not know: a second one here is the network's duplicate, and
            // the session (with its watches) is kept.
            shell.routes[connection] = client
            let welcome = Welcome(coordinatorID: "sim", epoch: epoch, peerID: "c\(client)", softwareVersion: "sim")
            send(.clientWelcome(connection, welcome), peer: .client(client))
        case .request(_, let request):
            guard shell.routes[connection] == client else {
                let refusal = ProtocolError(code: .handshakeRequired, message: "no session on this connection")
                return replyToClient(
                    client, connection, CoordinatorReply(requestID: request.requestID, .error(refusal)))
            }
            handleClient(request, client: client, connection: connection)
        default:
            break
        }
    }

    mutating func handleClient(_ request: ClientRequest, client: Int, connection: UInt64) {
        let id = request.requestID
        switch request.kind {
        case .submit(let submission):
            // The document names the spec the client built (the model parses nothing).
            guard let groupID = submission.groupID, let spec = documents[submission.document], var scheduler else {
                return
            }
            let flat = spec.flattened()
            do {
                let acceptance = try scheduler.submit(spec, id: groupID, flat: flat, now: now)
                self.scheduler = scheduler
                log("submit \(groupID) leaves=\(flat.leaves.count) already=\(acceptance.alreadySubmitted)")
                let known = checker.known[groupID] != nil
                if !known { checker.known[groupID] = flat }
                // Records first: the reply leaves once the group is in the journal.
                apply(acceptance.actions)
                // A deposed leader's submission the journal refused is not accepted.
                if deposedFenced, !known { checker.known[groupID] = nil }
                replyToClient(
                    client, connection,
                    CoordinatorReply(
                        requestID: id,
                        .submitted(
                            SubmitReceipt(
                                id: acceptance.id, name: acceptance.name, warnings: acceptance.warnings,
                                alreadySubmitted: acceptance.alreadySubmitted))))
            } catch {
                fail(.schedulerAccepts, "submit \(groupID) refused: \(error.message)")
                replyToClient(
                    client, connection,
                    CoordinatorReply(requestID: id, .error(ProtocolError(code: .conflict, message: error.message))))
            }
            answerSettledCancels()

        case .cancel(let group, let path, _):
            withScheduler("cancel \(group)/\(path ?? "")") { scheduler, now throws(SchedulerError) in
                if let path { return try scheduler.cancelChild(group, path: path, reason: "sim cancel", now: now) }
                return try scheduler.cancelGroup(group, reason: "sim cancel", now: now)
            }
            guard failure == nil else { return }
            // Acknowledged once no attempt it covers can still start on a worker; at once when
            // none was in flight.
            shell.pendingCancels.append(
                PendingCancel(
                    routing: ClientShell.Route(client: client, connection: connection), requestID: id, group: group,
                    path: path))
            answerSettledCancels()

        case .watch(let group):
            guard let snapshot = try? scheduler?.groupSnapshot(group) else {
                return replyToClient(
                    client, connection,
                    CoordinatorReply(
                        requestID: id, .error(ProtocolError(code: .notFound, message: "no group \(group)"))))
            }
            replyToClient(
                client, connection,
                CoordinatorReply(
                    requestID: id,
                    .group(
                        GroupDetail(
                            id: group, name: snapshot.name, state: snapshot.phase.wireState,
                            submittedAt: snapshot.submittedAt.wire, finishedAt: snapshot.finishedAt?.wire,
                            reason: snapshot.reason, children: []))))
            if snapshot.phase.isFinished {
                let event = WatchEvent(
                    group: group, at: (snapshot.finishedAt ?? now).wire,
                    .finished(state: snapshot.phase.wireState, reason: snapshot.reason))
                replyToClient(client, connection, CoordinatorReply(requestID: id, .watchEvents([event])))
            } else {
                changeWatches {
                    $0.add(group, by: ClientShell.Route(client: client, connection: connection), requestID: id)
                }
            }

        case .unwatch(let group):
            changeWatches { $0.remove(group, by: ClientShell.Route(client: client, connection: connection)) }
            replyToClient(client, connection, CoordinatorReply(requestID: id, .acknowledged))

        case .workers:
            // The session's liveness probe: any answer will do (the real one lists the workers).
            replyToClient(client, connection, CoordinatorReply(requestID: id, .workers([])))

        case .disconnect:
            shell.routes[connection] = nil
            changeWatches { $0.removeAll(by: ClientShell.Route(client: client, connection: connection)) }

        case .status, .result, .locks, .drain, .undrain, .rerun, .addChildren, .logs:
            break  // the simulated clients do not ask these
        }
    }

    /// Sends a reply on a client's connection; a connection the client no longer has cannot be
    /// routed (the ROUTER refuses it), and the coordinator drops that connection's watches.
    mutating func replyToClient(_ client: Int, _ connection: UInt64, _ reply: CoordinatorReply) {
        guard clients[client].connection == connection else {
            shell.routes[connection] = nil
            changeWatches { $0.removeAll(by: ClientShell.Route(client: client, connection: connection)) }
            return
        }
        send(.reply(connection, reply), peer: .client(client))
    }

    /// Changes who watches what, and tells the scheduler which groups are watched (the
    /// coordinator's `changeWatches`).
    mutating func changeWatches(_ body: (inout WatchTable<ClientShell.Route>) -> [WatchTable<ClientShell.Route>.Change])
    {
        for change in body(&shell.watches) { scheduler?.setWatched(change.group, change.watched) }
    }

    /// The group finished: its watchers are told, and its watches end.
    mutating func notifyWatchers(of group: String, _ phase: GroupPhase, reason: String?) {
        let list = shell.watches.watches(of: group)
        guard !list.isEmpty else { return }
        changeWatches { $0.end(group) }
        let event = WatchEvent(group: group, at: now.wire, .finished(state: phase.wireState, reason: reason))
        for watch in list {
            replyToClient(
                watch.routing.client, watch.routing.connection,
                CoordinatorReply(requestID: watch.requestID, .watchEvents([event])))
        }
    }

    /// Acknowledges every cancel that no attempt can still escape (the coordinator's
    /// `answerSettledCancels`): from now on nothing it covers may start. The checker learns of
    /// it when the client receives the acknowledgement.
    mutating func answerSettledCancels() {
        guard let scheduler, !shell.pendingCancels.isEmpty else { return }
        let settled = shell.pendingCancels.settled { group, path in
            scheduler.hasUnconfirmedDispatches(group, path: path)
        }
        for cancel in settled {
            log("cancel acknowledged \(cancel.group)/\(cancel.path ?? "")")
            replyToClient(
                cancel.routing.client, cancel.routing.connection,
                CoordinatorReply(requestID: cancel.requestID, .cancelAccepted(group: cancel.group, path: cancel.path)))
        }
    }
}

extension Timestamp {
    var wire: WireTimestamp { WireTimestamp(nanosecondsSinceEpoch: nanosecondsSinceEpoch) }
}
