import CohortCore
import CohortWire
import Foundation
import Logging
import ZeroMQ

extension WorkerLoop {
    /// The most messages read in one turn, so posted events and sends interleave with a flood.
    static let receiveBatch = 1_000

    /// Reads every message waiting on the socket (up to ``receiveBatch``).
    func receiveAll(now: Timestamp) {
        for _ in 0..<Self.receiveBatch {
            guard let socket else { return }
            let frames: [[UInt8]]?
            do {
                frames = try socket.receiveFrames(wait: .never)
            } catch {
                logger.error("receiving from the coordinator failed", metadata: ["error": "\(error)"])
                perform(machine.connectionFailed(now: now, reason: "receive failed: \(error)"))
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

    func handle(_ message: WireMessage, now: Timestamp) {
        switch message {
        case .handshake(.welcome(let welcome)):
            perform(machine.received(.session(.welcome(welcome)), now: now))
        case .handshake(.error(let error)):
            if error.code == .notLeader { redirect = error.leader ?? "" }
            perform(machine.received(.session(.refused(error)), now: now))
        case .toWorker(.logStored(let stored)):
            for attempt in stored { logs.acknowledge(attempt.attemptID, upTo: attempt.sequence) }
        case .toWorker(let message):
            perform(machine.received(received(message), now: now))
        case .handshake(.hello), .clientRequest, .coordinatorReply, .worker:
            undecodable += 1
            logger.warning("dropped a message no coordinator sends", metadata: ["family": "\(message.family)"])
        }
    }

    /// The machine's view of a message from the coordinator; grants and denials also go to
    /// the lock manager, whose waiting procedures they answer.
    private func received(_ message: CoordinatorToWorker) -> Machine.Received {
        switch message {
        case .shutdown(let notice):
            return .session(.shutdown(notice.reason))
        case .error(let error) where error.code == .handshakeRequired:
            return .session(.forgotten(error.message))
        case .heartbeat(let acknowledged):
            return .session(.heartbeat(acknowledged: acknowledged))
        case .dispatch(let tasks):
            return .dispatch(tasks)
        case .cancel(let cancellations):
            // Only a cancel that names exactly the attempt held here.
            let here = cancellations.filter { cancellation in
                guard machine.order(of: cancellation.ref.id)?.ref == cancellation.ref else {
                    logger.debug(
                        "cancel for an attempt not running here ignored",
                        metadata: ["attempt.id": "\(cancellation.ref.id)"])
                    return false
                }
                return true
            }
            return .cancel(here.map { ($0.ref.id, $0) })
        case .lockGrant(let grant):
            if machine.session.isReady { locks.granted(grant) }
            return .lockGranted(requestID: grant.requestID, tokens: grant.tokens)
        case .lockDenied(let denial):
            if machine.session.isReady { locks.denied(denial) }
            return .lockDenied(requestID: denial.requestID)
        case .error(let error):
            logger.warning(
                "the coordinator refused a message",
                metadata: [
                    "code": "\(error.code)", "error": "\(error.message)",
                    "attempt.id": "\(error.ref?.id.description ?? "-")",
                ])
            return .other
        case .logStored:
            return .other  // handled before the machine (handle(_:now:))
        }
    }

    /// Takes an event another thread posted.
    func handle(_ input: LoopInput, now: Timestamp) {
        switch input {
        case .attempt(.started(let start)):
            perform(machine.attemptStarted(start))
        case .attempt(.finished(let result)):
            procedures[result.ref.id] = nil
            logs.finish(result.ref.id)
            metrics?.finished(result.outcome)
            perform(machine.attemptFinished(result, now: now))
        case .lock(.request(let request)):
            perform(machine.lockRequested(requestID: request.requestID, attemptID: request.ref.id, request))
        case .lock(.withdraw(let requestID)):
            perform(machine.lockWithdrawn(requestID: requestID))
        case .lock(.release(let requestID)):
            perform(machine.lockReleased(requestID: requestID))
        case .stop:
            logger.notice(
                "stopping", metadata: ["running": "\(machine.attemptCount)", "reason": "it was told to stop"])
            perform(machine.stop(now: now))
        case .drain:
            logger.notice(
                "draining",
                metadata: ["running": "\(machine.attemptCount)", "drain.timeout": "\(configuration.drainTimeout)"])
            perform(machine.drain(now: now))
        case .logs:
            logs.wakeReceived()  // shipped at the end of the turn (shipLogs), within the window
        case .groupRequest(let message):
            // Sent only while a session is up: the attempt that asks runs under it (a request
            // made while reconnecting is dropped, and logged; its kind may ask again).
            guard machine.session.isReady else {
                logger.warning("not connected: an attempt's request about its group was dropped")
                return
            }
            send(.worker(message))
        }
    }
}
