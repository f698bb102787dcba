import CohortCore
import Foundation

/// A message between the coordinator and a worker.
enum Message {
    // Worker → coordinator.
    /// A new session: `connection` numbers the worker's connections (never reused), `running`
    /// lists every attempt it holds (queued or running).
    case hello(connection: UInt64, running: [AttemptRef], sentAt: Timestamp)
    case heartbeat(SessionID, sequence: UInt64)
    case started(SessionID, AttemptRef)
    case finished(SessionID, AttemptRef, AttemptOutcome, startedAt: Timestamp?, finishedAt: Timestamp)
    // Coordinator → worker.
    case welcome(connection: UInt64, SessionID)
    case heartbeatAck(SessionID, sequence: UInt64)
    /// The session is unknown: say hello again.
    case reconnect(SessionID)
    case dispatch(SessionID, DispatchOrder)
    case cancel(SessionID, AttemptRef, CancellationReason)

    var toCoordinator: Bool {
        switch self {
        case .hello, .heartbeat, .started, .finished: true
        default: false
        }
    }

    var summary: String {
        switch self {
        case .hello(let connection, let running, _): "hello c\(connection) running=\(running.map(\.id.rawValue))"
        case .heartbeat(let session, let sequence): "hb \(session) #\(sequence)"
        case .started(let session, let ref): "started \(session) \(ref) id=\(ref.id)"
        case .finished(let session, let ref, let outcome, _, _): "finished \(session) \(ref) \(describe(outcome))"
        case .welcome(let connection, let session): "welcome c\(connection) \(session)"
        case .heartbeatAck(let session, let sequence): "hb-ack \(session) #\(sequence)"
        case .reconnect(let session): "reconnect \(session)"
        case .dispatch(let session, let order):
            "dispatch \(session) \(order.ref) id=\(order.ref.id) tokens=\(order.tokens.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }) holds=\(order.holds)"
        case .cancel(let session, let ref, let reason): "cancel \(session) \(ref) (\(reason.text))"
        }
    }
}

func describe(_ outcome: AttemptOutcome) -> String {
    switch outcome {
    case .succeeded(let output): "succeeded \(String(decoding: output, as: UTF8.self))"
    case .failed(let error): "failed \(error)"
    case .cancelled(let reason): "cancelled \(reason.text)"
    }
}

/// A message on its way.
struct Envelope {
    var id: UInt64
    /// The worker at the other end.
    var worker: Int
    var message: Message
    var deliverAt: Timestamp
}

extension Simulation {
    /// Puts a message on the network: delayed, maybe dropped or duplicated (in the fault phase).
    mutating func send(_ message: Message, worker: Int) {
        if workers[worker].partitioned {
            note("dropped by partition")
            return
        }
        if inFaultPhase, random.int(0...199) == 0 {
            // A lost message breaks its connection (TCP does not lose one message and carry
            // on): what else is on the wire to or from the worker is gone, and it says hello.
            count("connection broken")
            log("drop \(message.summary): connection of w\(worker) broken")
            network.removeAll { $0.worker == worker }
            workers[worker].session = nil
            workers[worker].connecting = nil
            return
        }
        let copies = inFaultPhase && random.int(0...199) == 0 ? 2 : 1
        if copies == 2 { count("message duplicated") }
        for _ in 0..<copies {
            let slow = inFaultPhase && random.int(0...49) == 0
            if slow { count("message delayed") }
            let delay: Duration = .milliseconds(Int64(slow ? random.int(500...2500) : random.int(0...30)))
            nextEnvelope += 1
            network.append(Envelope(id: nextEnvelope, worker: worker, message: message, deliverAt: now + delay))
        }
    }

    /// Delivers a message, unless its worker is cut off, crashed, or the coordinator is down.
    mutating func deliver(_ envelope: Envelope) {
        let worker = envelope.worker
        if workers[worker].partitioned {
            log("lost (partition) \(envelope.message.summary)")
            return
        }
        if envelope.message.toCoordinator {
            guard scheduler != nil else {
                log("lost (coordinator down) \(envelope.message.summary)")
                return
            }
            log("w\(worker) → c \(envelope.message.summary)")
            coordinatorReceive(envelope.message, from: worker)
        } else {
            guard workers[worker].up else { return }
            log("c → w\(worker) \(envelope.message.summary)")
            workerReceive(envelope.message, worker: worker)
        }
    }

    // MARK: Faults

    mutating func injectFault() {
        if scheduler == nil, random.int(0...1) == 0 { return restartCoordinator() }
        let roll = random.int(0...99)
        let index = random.int(0...(workers.count - 1))
        switch roll {
        case 0..<25:
            guard !workers[index].partitioned else { return }
            workers[index].partitioned = true
            count("partition")
            log("FAULT partition w\(index)")
        case 25..<55:
            let cut = workers.indices.filter { workers[$0].partitioned }
            guard let healed = cut.first else { return }
            workers[healed].partitioned = false
            log("heal w\(healed)")
        case 55..<70:
            guard workers[index].up else { return }
            count("worker crash")
            log("FAULT crash w\(index)")
            workers[index].crash()
        case 70..<90:
            guard let down = workers.indices.first(where: { !workers[$0].up }) else { return }
            restartWorker(down)
        case 90..<95:
            guard scheduler != nil, configuration.coordinatorCrashes else { return }
            count("coordinator crash")
            crashCoordinator()
        default:
            guard scheduler == nil else { return }
            restartCoordinator()
        }
    }

    mutating func restartWorker(_ index: Int) {
        log("restart w\(index)")
        workers[index].up = true
    }
}
