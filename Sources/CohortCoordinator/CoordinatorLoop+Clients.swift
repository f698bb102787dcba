import CohortCore
import CohortWire
import Foundation

/// Client requests: submit, status, result, cancel, watch, workers, locks.
extension CoordinatorLoop {
    func handleClient(_ request: ClientRequest, from routing: RoutingID, session: PeerSession) {
        let id = request.requestID
        func reply(_ kind: CoordinatorReply.Kind) { outbox.send(CoordinatorReply(requestID: id, kind), to: routing) }
        func fail(_ error: ProtocolError) { reply(.error(error)) }
        if let refusal = request.refusal { return fail(refusal) }

        switch request.kind {
        case .submit(let submission):
            submit(submission, requestID: id, from: routing)

        case .status(let group?, _):
            do {
                reply(.group(try scheduler.groupSnapshot(group).wireDetail))
            } catch {
                fail(error.wire)
            }
        case .status(nil, let filter):
            listGroups(filter, requestID: id, from: routing)

        case .result(let group, let path):
            do {
                let outcome = try scheduler.result(group, path: path)
                let child = path.flatMap { try? scheduler.childSnapshot(group, path: $0) }
                let truncated = try OutputTruncation.ofResult(path: path, child: child) {
                    () throws(SchedulerError) in try scheduler.groupSnapshot(group).children
                }
                reply(.result(ResultReply(group: group, path: path, outcome: outcome.wire, outputTruncated: truncated)))
            } catch {
                fail(error.wire)
            }

        case .cancel(let group, let path, let reason):
            // A running child of the group that cancels it (with its attempt token) is named.
            var why = CancellationReason.asked(by: session, words: reason)
            if let token = request.attemptToken, case .success(let child) = tokenHolder(token, for: request.kind) {
                why = .cancelledByChild(path: child.path, attempt: child.attempt, reason: reason)
            }
            do {
                let finished = scheduler.finishedPhase(group, path: path)
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
                pendingCancels.append(
                    PendingCancel(routing: routing, requestID: id, group: group, path: path, alreadyFinished: finished))
                answerSettledCancels()
            } catch {
                fail(error.wire)
            }

        case .addChildren(let group, let addition):
            addChildren(addition, to: group, requestID: id, from: routing)

        case .logs(let query):
            readLogs(query, requestID: id, from: routing)

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
                changeWatches { $0.add(group, by: routing, requestID: id) }
            }

        case .unwatch(let group):
            changeWatches { $0.remove(group, by: routing) }
            reply(.acknowledged)

        case .workers:
            reply(.workers(scheduler.wireWorkers(now: now)))

        case .locks:
            reply(.locks(scheduler.wireLocks(now: now)))

        case .disconnect:
            peers.close(routing)
            dropWatches(of: routing)

        case .drain(let name):
            let worker: WorkerRecord
            switch DrainTarget.find(name, among: scheduler.workerRecords()) {
            case .success(let found): worker = found
            case .failure(let error): return fail(error)
            }
            guard worker.state != .lost else {
                return fail(
                    ProtocolError(
                        code: .notFound, message: "worker \"\(worker.name)\" is not connected (it left recently)"))
            }
            logger.info(
                "worker draining",
                metadata: ["worker.id": "\(worker.id)", "worker.name": "\(worker.name)", "reason": "asked by a client"])
            apply(scheduler.workerDrainedByOperator(worker.id, now: now))
            reply(.acknowledged)

        case .undrain(let name):
            do {
                apply(try scheduler.workerUndrained(name, now: now))
            } catch {
                return fail(error.wire)
            }
            logger.info("worker undrained", metadata: ["worker": "\(name)", "reason": "asked by a client"])
            reply(.acknowledged)

        case .rerun(let group, let newID):
            rerun(group, id: newID, requestID: id, from: routing)
        }
    }

    /// Ends every watch of a client (it left, or sending to it failed).
    func dropWatches(of routing: RoutingID) {
        changeWatches { $0.removeAll(by: routing) }
    }

    /// Sends a watch event to everyone watching `group`.
    func notifyWatchers(of group: String, _ kind: WatchEvent.Kind) {
        let list = watches.watches(of: group)
        guard !list.isEmpty else { return }
        let event = WatchEvent(group: group, at: now.wire, kind)
        for watch in list {
            outbox.send(CoordinatorReply(requestID: watch.requestID, .watchEvents([event])), to: watch.routing)
        }
    }
}

extension CoordinatorLoop {
    /// Acknowledges each accepted cancel once none of the attempts it covers can still start
    /// on a worker (``PendingCancels``).
    func answerSettledCancels() {
        guard !pendingCancels.isEmpty else { return }
        let settled = pendingCancels.settled { group, path in
            scheduler.hasUnconfirmedDispatches(group, path: path)
        }
        for cancel in settled {
            outbox.send(
                CoordinatorReply(
                    requestID: cancel.requestID,
                    .cancelAccepted(
                        group: cancel.group, path: cancel.path, alreadyFinished: cancel.alreadyFinished?.wire)),
                to: cancel.routing)
        }
    }
}
