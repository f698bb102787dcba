import CohortCore
import CohortWire
import Foundation

/// Client requests: submit, status, result, cancel, watch, workers, locks.
extension CoordinatorLoop {
    func handleClient(_ request: ClientRequest, from routing: RoutingID, session: PeerSession) {
        let id = request.requestID
        func reply(_ kind: CoordinatorReply.Kind) { outbox.send(CoordinatorReply(requestID: id, kind), to: routing) }
        func fail(_ error: ProtocolError) { reply(.error(error)) }
        // An id of 0 names no request (0 is for unsolicited messages): nothing is carried out.
        // ClientDisconnect is never answered, so it needs none.
        if id == 0, !request.kind.isDisconnect {
            return fail(ProtocolError(code: .invalidRequest, message: "request_id must be greater than 0"))
        }
        // An empty path is not an absent one (docs/protocol.md §4.4): refused, not read as the group.
        if let path = request.kind.path, path.isEmpty {
            return fail(
                ProtocolError(code: .invalidRequest, message: "path is empty; leave it out to name the whole group"))
        }

        switch request.kind {
        case .submit(let submission):
            submit(submission, requestID: id, from: routing)

        case .status(let group?):
            do {
                reply(.group(try scheduler.groupSnapshot(group).wireDetail))
            } catch {
                fail(error.wire)
            }
        case .status(nil):
            reply(.groups(scheduler.groupOverviews().map(\.wireSummary)))

        case .result(let group, let path):
            do {
                let outcome = try scheduler.result(group, path: path)
                let truncated = try resultIsTruncated(group, path: path)
                reply(.result(ResultReply(group: group, path: path, outcome: outcome.wire, outputTruncated: truncated)))
            } catch {
                fail(error.wire)
            }

        case .cancel(let group, let path, let reason):
            let why: CancellationReason =
                reason.isEmpty
                ? .cancelledByClient(session.name.isEmpty ? session.peerID : session.name) : .custom(reason)
            do {
                let actions =
                    if let path {
                        try scheduler.cancelChild(group, path: path, reason: why, now: now)
                    } else {
                        try scheduler.cancelGroup(group, reason: why, now: now)
                    }
                logger.info("cancel accepted", metadata: ["group.id": "\(group)", "child.path": "\(path ?? "")"])
                apply(actions)
                // Acknowledged once no attempt it covers can still start on a worker
                // (answerSettledCancels, every turn); at once when none was in flight.
                pendingCancels.append(PendingCancel(routing: routing, requestID: id, group: group, path: path))
                answerSettledCancels()
            } catch {
                fail(error.wire)
            }

        case .watch(let group):
            let snapshot: GroupSnapshot
            do {
                snapshot = try scheduler.groupSnapshot(group)
            } catch {
                return fail(error.wire)
            }
            reply(.group(snapshot.wireDetail))
            if snapshot.phase.isFinished {
                let event = WatchEvent(
                    group: group, at: (snapshot.finishedAt ?? now).wire,
                    .finished(state: snapshot.phase.wire, reason: snapshot.reason))
                reply(.watchEvents([event]))
            } else {
                let watch = Watch(routing: routing, requestID: id)
                var list = watchers[group] ?? []
                if !list.contains(watch) { list.append(watch) }
                setWatchers(list, of: group)
            }

        case .unwatch(let group):
            setWatchers(watchers[group]?.filter { $0.routing != routing }, of: group)
            reply(.acknowledged)

        case .workers:
            reply(.workers(scheduler.workerRecords().map(\.wire)))

        case .locks:
            reply(.locks(scheduler.wireLocks()))

        case .disconnect:
            peers.close(routing)
            dropWatches(of: routing)

        case .drain(let name):
            guard let worker = scheduler.workerRecords().first(where: { $0.name == name || $0.id.description == name })
            else {
                return fail(ProtocolError(code: .notFound, message: "no worker named \"\(name)\""))
            }
            logger.info(
                "worker draining",
                metadata: ["worker.id": "\(worker.id)", "worker.name": "\(worker.name)", "reason": "asked by a client"])
            apply(scheduler.workerDraining(worker.id, now: now))
            reply(.acknowledged)
        }
    }

    /// Ends every watch of a client (it left, or sending to it failed).
    func dropWatches(of routing: RoutingID) {
        for (group, list) in watchers where list.contains(where: { $0.routing == routing }) {
            setWatchers(list.filter { $0.routing != routing }, of: group)
        }
    }

    /// Sends a watch event to everyone watching `group`.
    func notifyWatchers(of group: String, _ kind: WatchEvent.Kind) {
        guard let list = watchers[group] else { return }
        let event = WatchEvent(group: group, at: now.wire, kind)
        for watch in list {
            outbox.send(CoordinatorReply(requestID: watch.requestID, .watchEvents([event])), to: watch.routing)
        }
    }
}

extension CoordinatorLoop {
    /// Whether a result's output was cut: a procedure's own flag; for a group (no path, or a
    /// nested group's), whether any procedure inside it was cut (docs/protocol.md §7, Result).
    func resultIsTruncated(_ group: String, path: String?) throws(SchedulerError) -> Bool {
        if let path, let child = try? scheduler.childSnapshot(group, path: path), !child.isGroup {
            return child.outputTruncated
        }
        let prefix = path.map { $0 + "/" } ?? ""
        return try scheduler.groupSnapshot(group).children.contains {
            !$0.isGroup && $0.outputTruncated && $0.path.hasPrefix(prefix)
        }
    }
}

extension ClientRequest.Kind {
    var isDisconnect: Bool {
        if case .disconnect = self { true } else { false }
    }

    /// The child path a request names, if it names one.
    var path: String? {
        switch self {
        case .result(_, let path), .cancel(_, let path, _): path
        default: nil
        }
    }
}

/// A cancel accepted but not yet acknowledged: some attempt it covers was sent to a worker
/// that has not reported it started.
struct PendingCancel {
    var routing: RoutingID
    var requestID: UInt64
    var group: String
    var path: String?
}

extension CoordinatorLoop {
    /// Acknowledges each accepted cancel once none of the attempts it covers can still start
    /// on a worker: each has reported that it started, or finished (cancelled), or its worker
    /// was lost. So a client told "cancel accepted" never sees a pending child start after.
    func answerSettledCancels() {
        guard !pendingCancels.isEmpty else { return }
        pendingCancels.removeAll { pending in
            guard !scheduler.hasUnconfirmedDispatches(pending.group, path: pending.path) else { return false }
            outbox.send(
                CoordinatorReply(
                    requestID: pending.requestID, .cancelAccepted(group: pending.group, path: pending.path)),
                to: pending.routing)
            return true
        }
    }
}
