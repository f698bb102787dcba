import CohortCore
import CohortSpec
import CohortWire
import Foundation

/// The coordinator's client-facing shell, modelled on `CoordinatorLoop+Clients.swift` and
/// `+Submit.swift`. CohortSimulation cannot link CohortCoordinator (it links ZeroMQ), so its
/// pure policies (`PendingCancels`, `WatchTable`) are mirrored here, decision for decision.
struct ClientShell {
    /// A cancel accepted and not yet acknowledged (`PendingCancel`).
    struct PendingCancel {
        var group: String
        /// `""`: the whole group.
        var path: String
        var client: Int
        var connection: UInt64
        var requestID: UInt64
    }

    /// A client's watch (`WatchTable.Watch`).
    struct Watch: Hashable {
        var client: Int
        var connection: UInt64
        var requestID: UInt64
    }

    /// Connections with a client session → the client.
    var routes: [UInt64: Int] = [:]
    /// Who watches which group, oldest first; never an empty list.
    var watches: [String: [Watch]] = [:]
    var pendingCancels: [PendingCancel] = []

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
                if checker.known[groupID] == nil { checker.known[groupID] = flat }
                // Records first: the reply leaves once the group is in the journal.
                apply(acceptance.actions)
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
                ClientShell.PendingCancel(
                    group: group, path: path ?? "", client: client, connection: connection, requestID: id))
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
                let watch = ClientShell.Watch(client: client, connection: connection, requestID: id)
                var list = shell.watches[group] ?? []
                if !list.contains(watch) { list.append(watch) }
                shell.watches[group] = list
                scheduler?.setWatched(group, true)
            }

        case .unwatch(let group):
            dropWatches(of: group) { $0.connection == connection }
            replyToClient(client, connection, CoordinatorReply(requestID: id, .acknowledged))

        case .workers:
            // The session's liveness probe: any answer will do (the real one lists the workers).
            replyToClient(client, connection, CoordinatorReply(requestID: id, .workers([])))

        case .disconnect:
            shell.routes[connection] = nil
            for group in shell.watches.keys.sorted() { dropWatches(of: group) { $0.connection == connection } }

        case .status, .result, .locks, .drain:
            break  // the simulated clients do not ask these
        }
    }

    /// Sends a reply on a client's connection; a connection the client no longer has cannot be
    /// routed (the ROUTER refuses it), and the coordinator drops that connection's watches.
    mutating func replyToClient(_ client: Int, _ connection: UInt64, _ reply: CoordinatorReply) {
        guard clients[client].connection == connection else {
            shell.routes[connection] = nil
            for group in shell.watches.keys.sorted() { dropWatches(of: group) { $0.connection == connection } }
            return
        }
        send(.reply(connection, reply), peer: .client(client))
    }

    mutating func dropWatches(of group: String, where matches: (ClientShell.Watch) -> Bool) {
        guard let list = shell.watches[group] else { return }
        let kept = list.filter { !matches($0) }
        shell.watches[group] = kept.isEmpty ? nil : kept
        if kept.isEmpty { scheduler?.setWatched(group, false) }
    }

    /// The group finished: its watchers are told, and its watches end.
    mutating func notifyWatchers(of group: String, _ phase: GroupPhase, reason: String?) {
        guard let list = shell.watches.removeValue(forKey: group) else { return }
        let event = WatchEvent(group: group, at: now.wire, .finished(state: phase.wireState, reason: reason))
        for watch in list {
            replyToClient(
                watch.client, watch.connection, CoordinatorReply(requestID: watch.requestID, .watchEvents([event])))
        }
    }

    /// Acknowledges every cancel that no attempt can still escape (the coordinator's
    /// `answerSettledCancels`): from now on nothing it covers may start. The checker learns of
    /// it when the client receives the acknowledgement.
    mutating func answerSettledCancels() {
        guard let scheduler, !shell.pendingCancels.isEmpty else { return }
        var still: [ClientShell.PendingCancel] = []
        var settled: [ClientShell.PendingCancel] = []
        for cancel in shell.pendingCancels {
            if scheduler.hasUnconfirmedDispatches(cancel.group, path: cancel.path.isEmpty ? nil : cancel.path) {
                still.append(cancel)
            } else {
                settled.append(cancel)
            }
        }
        shell.pendingCancels = still
        for cancel in settled {
            log("cancel acknowledged \(cancel.group)/\(cancel.path)")
            replyToClient(
                cancel.client, cancel.connection,
                CoordinatorReply(
                    requestID: cancel.requestID,
                    .cancelAccepted(group: cancel.group, path: cancel.path.isEmpty ? nil : cancel.path)))
        }
    }
}

extension Timestamp {
    var wire: WireTimestamp { WireTimestamp(nanosecondsSinceEpoch: nanosecondsSinceEpoch) }
}
