import CohortCore
import CohortWire
import Foundation

/// Worker messages, and carrying out the scheduler's actions.
extension CoordinatorLoop {
    func handleWorker(_ message: WorkerMessage, from routing: RoutingID, worker: SessionID, session: PeerSession) {
        scheduler.workerHeard(worker, now: now)
        switch message {
        case .heartbeat(let sequence):
            // Acknowledged at once: the worker's lease runs from the sending of the latest
            // heartbeat it sees acknowledged, which the coordinator has heard (just above).
            if sequence != 0 { outbox.send(.heartbeat(acknowledged: sequence), to: routing) }
        case .ready(let ready):
            logger.info(
                "worker ready",
                metadata: [
                    "worker.id": "\(worker)", "worker.name": "\(ready.name)", "worker.slots": "\(ready.slots)",
                    "worker.kinds": "\(ready.kinds.joined(separator: ","))",
                ])
            apply(
                scheduler.workerReady(
                    worker, name: ready.name, host: ready.host, labels: ready.labels, slots: Int(ready.slots),
                    kinds: ready.kinds, running: ready.running.map { AttemptRef($0.ref) },
                    started: Set(ready.running.filter { $0.startedAt != nil }.map { AttemptRef($0.ref).id }),
                    draining: ready.draining, now: now))
        case .started(let starts):
            for start in starts {
                do {
                    apply(try scheduler.attemptStarted(AttemptRef(start.ref), worker: worker, now: now))
                } catch {
                    refuseAttempt(start.ref, error, to: routing)
                }
            }
        case .results(let results):
            stats.results.bump(UInt64(results.count))
            for result in results {
                do {
                    let kept = keptOutcome(result.outcome, attempt: result.ref)
                    attemptEnded(result.ref.id, kept.outcome)
                    apply(
                        try scheduler.attemptFinished(
                            AttemptRef(result.ref), outcome: kept.outcome, worker: worker,
                            startedAt: result.startedAt.nanosecondsSinceEpoch == 0 ? nil : Timestamp(result.startedAt),
                            finishedAt: result.finishedAt.nanosecondsSinceEpoch == 0
                                ? nil : Timestamp(result.finishedAt),
                            outputTruncated: kept.truncated, now: now))
                } catch {
                    refuseAttempt(result.ref, error, to: routing)
                }
            }
        case .lockRequest(let request):
            apply(
                scheduler.lockRequested(
                    request.requestID, by: worker, for: AttemptRef(request.ref), categories: request.categories,
                    now: now))
        case .lockRelease(let requestID):
            apply(scheduler.lockReleased(requestID, by: worker, now: now))
        case .lockWithdraw(let requestID):
            apply(scheduler.lockWithdrawn(requestID, by: worker, now: now))
        case .draining(let reason):
            logger.info("worker draining", metadata: ["worker.id": "\(worker)", "reason": "\(reason)"])
            apply(scheduler.workerDraining(worker, now: now))
        case .disconnect(let reason):
            // The worker stopped what it ran before saying goodbye (a drain that timed out, a
            // stop): its attempts are handed back and run again without using up a retry.
            peers.close(routing)
            let reason = reason.isEmpty ? "it disconnected" : "it disconnected: \(reason)"
            logger.info(
                "worker left",
                metadata: ["worker.id": "\(worker)", "worker.name": "\(session.name)", "reason": "\(reason)"])
            apply(scheduler.workerLost(worker, reason: reason, handedBack: true, now: now))
        case .cancelGroup(let ref, let reason):
            cancelGroup(by: AttemptRef(ref), reason: reason, worker: worker, routing: routing)
        case .addChildren(let ref, let addition):
            addChildren(by: AttemptRef(ref), addition, worker: worker, routing: routing)
        case .logLines(let attempts):
            storeLogLines(attempts, from: routing, worker: worker, session: session)
        }
    }

    /// A running attempt (a custom kind's `context.cancelGroup`) cancels its own group, as its
    /// attempt token would let it: refused (a WorkerError naming the attempt) unless the attempt
    /// runs on this worker.
    private func cancelGroup(by ref: AttemptRef, reason: String, worker: SessionID, routing: RoutingID) {
        guard scheduler.isRunning(ref, on: worker) else {
            return refuseAttemptRequest(
                ref, "the attempt is not running on this worker (it ended, or was superseded)", to: routing)
        }
        do {
            apply(
                try scheduler.cancelGroup(
                    ref.group, reason: .cancelledByChild(path: ref.path, attempt: ref.attempt, reason: reason), now: now
                ))
            logger.info("cancel accepted", metadata: ["group.id": "\(ref.group)", "by.child": "\(ref.path)"])
        } catch {
            refuseAttemptRequest(ref, error.message, to: routing)
        }
    }

    /// Refuses what a running attempt asked over its worker's connection: a WorkerError that
    /// names the attempt (the worker's context reports it to the kind's code).
    func refuseAttemptRequest(_ ref: AttemptRef, _ message: String, to routing: RoutingID) {
        stats.refused.bump()
        logger.notice(
            "refused an attempt's request",
            metadata: ["attempt.ref": "\(ref.group)/\(ref.path)#\(ref.attempt)", "error": "\(message)"])
        outbox.send(.error(WorkerError(code: .permissionDenied, message: message, ref: ref.wire)), to: routing)
    }

    private func refuseAttempt(_ attempt: WireAttemptRef, _ error: SchedulerError, to routing: RoutingID) {
        stats.refused.bump()
        logger.notice(
            "refused a report about an attempt that is not current",
            metadata: [
                "attempt.id": "\(attempt.id)", "attempt.ref": "\(attempt.group)/\(attempt.path)#\(attempt.attempt)",
                "error": "\(error.message)",
            ])
        outbox.send(.error(WorkerError(code: error.wire.code, message: error.message, ref: attempt)), to: routing)
    }

    /// Carries out the scheduler's actions, the one stream of everything it decided: records
    /// go into the turn's journal batch (committed before the turn's messages leave), the
    /// rest become the turn's messages.
    func apply(_ actions: [SchedulerAction]) {
        for action in actions {
            switch action {
            case .record(let record):
                journalWriter?.batch.append(record)
            case .sessionLost(let worker, let loss):
                metrics?.sessionEnded(loss)
                // A worker that left was let go where it left; a silent one is forgotten here.
                guard loss == .silent else { continue }
                stats.workersLost.bump()
                if let routing = peers.routingOfWorker[worker] {
                    logger.warning("worker lost", metadata: ["worker.id": "\(worker)"])
                    peers.close(routing)
                }
            case .dispatch(let worker, let order):
                guard let routing = peers.routingOfWorker[worker] else { continue }
                stats.dispatched.bump()
                metrics?.dispatched()
                var dispatch = order.wire
                dispatch.attemptToken = attemptTokens.mint(for: order.ref) { self.scheduler.running($0) }
                outbox.send(.dispatch([dispatch]), to: routing)
            case .cancel(let worker, let ref, let reason):
                guard let routing = peers.routingOfWorker[worker] else { continue }
                outbox.send(
                    .cancel([AttemptCancellation(ref: ref.wire, reason: reason.text, code: reason.wireCode)]),
                    to: routing)
            case .grant(let worker, let request, let tokens):
                guard let routing = peers.routingOfWorker[worker] else { continue }
                outbox.send(.lockGrant(LockGrant(requestID: request, tokens: tokens)), to: routing)
            case .deny(let worker, let request, let refusal, let reason):
                guard let routing = peers.routingOfWorker[worker] else { continue }
                outbox.send(
                    .lockDenied(LockDenial(requestID: request, kind: refusal.wire, reason: reason)), to: routing)
            case .childChanged(let group, let child):
                notifyWatchers(of: group, .child(child.wire))
            case .groupFinished(let group, let phase, let reason):
                logger.info("group finished", metadata: ["group.id": "\(group)", "group.state": "\(phase.rawValue)"])
                metrics?.groupFinished(phase)
                notifyWatchers(of: group, .finished(state: phase.wire, reason: reason))
                changeWatches { $0.end(group) }
            }
        }
    }
}
