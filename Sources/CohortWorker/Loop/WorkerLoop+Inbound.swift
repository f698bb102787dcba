import CohortWire
import Foundation
import Logging
import ZeroMQ

extension WorkerLoop {
    /// The most messages read in one turn, so posted events and sends interleave with a flood.
    static let receiveBatch = 1_000

    /// Reads every message waiting on the socket (up to ``receiveBatch``).
    func receiveAll(now: ContinuousClock.Instant) {
        for _ in 0..<Self.receiveBatch {
            guard let socket else { return }
            let frames: [[UInt8]]?
            do {
                frames = try socket.receiveFrames(wait: .never)
            } catch {
                logger.error("receiving from the coordinator failed", metadata: ["error": "\(error)"])
                perform([.disconnect(reason: "receive failed: \(error)")], now: now)
                return
            }
            guard let frames else { return }
            do {
                handle(try codec.decode(frames: frames), now: now)
            } catch {
                undecodable += 1
                logger.warning("dropped an undecodable message from the coordinator", metadata: ["error": "\(error)"])
            }
        }
    }

    func handle(_ message: WireMessage, now: ContinuousClock.Instant) {
        switch message {
        case .handshake(.welcome(let welcome)):
            perform(session.received(.welcome(welcome), now: now), now: now)
        case .handshake(.error(let error)):
            perform(session.received(.refused(error), now: now), now: now)
        case .toWorker(let message):
            handle(message, now: now)
        case .handshake(.hello), .clientRequest, .coordinatorReply, .worker:
            undecodable += 1
            logger.warning("dropped a message no coordinator sends", metadata: ["family": "\(message.family)"])
        }
    }

    private func handle(_ message: CoordinatorToWorker, now: ContinuousClock.Instant) {
        switch message {
        case .shutdown(let notice):
            perform(session.received(.shutdown(notice), now: now), now: now)
            return
        case .error(let error) where error.code == .handshakeRequired:
            perform(session.received(.forgotten(error.message), now: now), now: now)
            return
        case .heartbeat(let acknowledged):
            perform(session.received(.heartbeat(acknowledged: acknowledged), now: now), now: now)
        default:
            perform(session.received(.other, now: now), now: now)
        }
        guard session.isReady else { return }
        defer { resumeAfterAdoption() }
        switch message {
        case .heartbeat, .shutdown:
            break
        case .dispatch(let tasks):
            start(tasks)
        case .cancel(let cancellations):
            // Attempts still queued first: cancelling a running one frees a slot, and a queued
            // attempt of the same batch must not take it before its own cancel.
            let queuedFirst = cancellations.sorted { a, b in
                (attempts[a.ref.id]?.startedAt == nil ? 0 : 1) < (attempts[b.ref.id]?.startedAt == nil ? 0 : 1)
            }
            for cancellation in queuedFirst { cancel(cancellation) }
        case .lockGrant(let grant):
            locks.granted(grant)
        case .lockDenied(let denial):
            locks.denied(denial)
        case .error(let error):
            logger.warning(
                "the coordinator refused a message",
                metadata: [
                    "code": "\(error.code)", "error": "\(error.message)",
                    "attempt.id": "\(error.ref?.id.description ?? "-")",
                ])
        }
    }

    /// Puts dispatched attempts on the queue.
    private func start(_ tasks: [AttemptDispatch]) {
        guard stopDeadline == nil else {
            // The coordinator sent these before it saw `draining`; they are not run, and
            // the final `disconnect` tells it every unreported attempt is lost.
            logger.info("dispatch refused while stopping", metadata: ["count": "\(tasks.count)"])
            return
        }
        for dispatch in tasks {
            let task = dispatch.ref
            guard attempts[task.id] == nil else {
                logger.warning("duplicate dispatch ignored", metadata: ["attempt.id": "\(task.id)"])
                continue
            }
            let context = ProcedureContext(
                group: task.group, child: task.path, attempt: Int(task.attempt), attemptID: task.id,
                workerName: configuration.name, fencingTokens: dispatch.fencingTokens, extraEnvironment: dispatch.env,
                logger: logger,
                scope: AttemptScope(
                    exclusivity: .cluster(
                        locks, task, held: dispatch.fencingTokens.filter { dispatch.holds.contains($0.key) })),
                settings: settings)
            let kind = registry.kind(named: dispatch.kind)
            if case .immediate(let body)? = kind?.body, dispatch.fencingTokens.isEmpty, !queue.isSuspended,
                queue.count < configuration.slots
            {
                runHere(dispatch, body, context)
                continue
            }
            let procedure = AttemptProcedure(dispatch: dispatch, kind: kind, context: context, report: report)
            attempts[task.id] = Attempt(procedure: procedure)
            queue.add(procedure)
        }
    }

    /// A built-in that does no waiting (`echo`, `fail`) runs here, on the loop's thread, when
    /// a slot is free and nothing waits for one (the queue would start it at once; it takes
    /// the slot for the time of the call), without the two thread hand-offs of the queue and
    /// the mailbox. Its result goes out with the turn's; no cancel can come while it runs.
    private func runHere(
        _ dispatch: AttemptDispatch, _ body: (Data, ProcedureContext) throws -> Data, _ context: ProcedureContext
    ) {
        let startedAt = WireTimestamp(Date())
        let outcome: WireOutcome
        do {
            outcome = .succeeded(output: try body(dispatch.input, context))
        } catch {
            outcome = .failed(error: AttemptProcedure.describe(error))
        }
        context.scope.close()
        outbox.results.append(
            AttemptResult(ref: dispatch.ref, outcome: outcome, startedAt: startedAt, finishedAt: WireTimestamp(Date())))
    }

    /// Cancels the attempt a cancel names, if this worker runs exactly that attempt.
    private func cancel(_ cancellation: AttemptCancellation) {
        guard let attempt = attempts[cancellation.ref.id], attempt.procedure.dispatch.ref == cancellation.ref else {
            logger.debug(
                "cancel for an attempt not running here ignored", metadata: ["attempt.id": "\(cancellation.ref.id)"])
            return
        }
        attempt.procedure.cancel(with: CancellationReason(cancellation.reason, code: cancellation.code))
    }

    /// Takes an event another thread posted.
    func handle(_ input: LoopInput, now: ContinuousClock.Instant) {
        switch input {
        case .attempt(.started(let start)):
            guard attempts[start.ref.id] != nil else { return }
            attempts[start.ref.id]!.startedAt = start.startedAt
            if session.isReady, !attempts[start.ref.id]!.interrupted { outbox.started.append(start) }
        case .attempt(.finished(let result)):
            guard let attempt = attempts.removeValue(forKey: result.ref.id) else { return }
            if attempt.interrupted {
                logger.debug("interrupted attempt not reported", metadata: ["attempt.id": "\(result.ref.id)"])
            } else if session.isReady {
                outbox.results.append(result)
            } else {
                unsentResults.append(result)
            }
        case .lock(let message):
            if session.isReady {
                outbox.locks.append(message)
            } else if case .request = message {
                // Sent with every other outstanding request after the next READY.
            } else {
                unsentLockMessages.append(message)
            }
        case .stop:
            beginStopping(now: now)
        case .drain:
            beginDraining(now: now)
        }
    }
}
