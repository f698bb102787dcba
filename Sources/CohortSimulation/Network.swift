import CohortCore
import CohortWire
import Foundation

/// A message between the coordinator and a worker or a client, on a connection: connections are
/// numbered over the whole run and never reused (a new socket, or libzmq reconnecting one
/// after its TCP connection broke, is a new routing id to the coordinator's ROUTER).
enum Message {
    // Worker → coordinator.
    case hello(connection: UInt64)
    /// After the WELCOME: every attempt the worker holds (waiting or running), and which of
    /// them have started.
    case ready(UInt64, running: [AttemptRef], started: Set<AttemptID>, draining: Bool)
    case heartbeat(UInt64, sequence: UInt64)
    case started(UInt64, AttemptRef)
    case finished(UInt64, AttemptRef, AttemptOutcome, startedAt: Timestamp?, finishedAt: Timestamp)
    case lockRequest(UInt64, SimWorker.Words.LockRequest)
    case lockWithdraw(UInt64, requestID: UInt64)
    case lockRelease(UInt64, requestID: UInt64)
    /// The worker drains or stops: no new work.
    case draining(UInt64)
    /// The worker's last message: it stops; what it did not report is handed back.
    case goodbye(UInt64, handedBack: Int)
    // Coordinator → worker.
    case welcome(UInt64)
    case heartbeatAck(UInt64, sequence: UInt64)
    /// The coordinator does not know this connection (`HANDSHAKE_REQUIRED`): say hello again.
    case forgotten(UInt64)
    /// A standby's refusal (`NOT_LEADER`, naming the leader): connect to the leader.
    case notLeader(UInt64)
    case dispatch(UInt64, DispatchOrder)
    case cancel(UInt64, AttemptRef, CancellationReason)
    case lockGrant(UInt64, request: UInt64, tokens: [String: UInt64])
    case lockDeny(UInt64, request: UInt64)
    // Client → coordinator: the session's HELLO and its requests, as on the wire.
    case clientHello(UInt64)
    case request(UInt64, ClientRequest)
    // Coordinator → client.
    case clientWelcome(UInt64, Welcome)
    case reply(UInt64, CoordinatorReply)

    var connection: UInt64 {
        switch self {
        case .hello(let connection), .ready(let connection, _, _, _), .heartbeat(let connection, _),
            .started(let connection, _), .finished(let connection, _, _, _, _), .draining(let connection),
            .goodbye(let connection, _), .lockRequest(let connection, _), .lockWithdraw(let connection, _),
            .lockRelease(let connection, _), .lockGrant(let connection, _, _), .lockDeny(let connection, _),
            .welcome(let connection),
            .heartbeatAck(let connection, _), .forgotten(let connection), .notLeader(let connection),
            .dispatch(let connection, _),
            .cancel(let connection, _, _), .clientHello(let connection), .request(let connection, _),
            .clientWelcome(let connection, _), .reply(let connection, _):
            connection
        }
    }

    var toCoordinator: Bool {
        switch self {
        case .hello, .ready, .heartbeat, .started, .finished, .draining, .goodbye, .lockRequest, .lockWithdraw,
            .lockRelease, .clientHello, .request:
            true
        default: false
        }
    }

    var summary: String {
        switch self {
        case .hello(let connection): "hello c\(connection)"
        case .ready(let connection, let running, let started, let draining):
            "ready c\(connection) running=\(running.map(\.id.rawValue)) started=\(started.map(\.rawValue).sorted())\(draining ? " draining" : "")"
        case .heartbeat(let connection, let sequence): "hb c\(connection) #\(sequence)"
        case .started(let connection, let ref): "started c\(connection) \(ref) id=\(ref.id)"
        case .finished(let connection, let ref, let outcome, _, _):
            "finished c\(connection) \(ref) \(describe(outcome))"
        case .draining(let connection): "draining c\(connection)"
        case .goodbye(let connection, let handedBack): "goodbye c\(connection) handed back \(handedBack)"
        case .lockRequest(let connection, let request):
            "lock-request c\(connection) #\(request.requestID) \(request.ref) \(request.categories)"
        case .lockWithdraw(let connection, let request): "lock-withdraw c\(connection) #\(request)"
        case .lockRelease(let connection, let request): "lock-release c\(connection) #\(request)"
        case .lockGrant(let connection, let request, let tokens):
            "lock-grant c\(connection) #\(request) \(tokens.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" })"
        case .lockDeny(let connection, let request): "lock-deny c\(connection) #\(request)"
        case .welcome(let connection): "welcome c\(connection)"
        case .heartbeatAck(let connection, let sequence): "hb-ack c\(connection) #\(sequence)"
        case .forgotten(let connection): "forgotten c\(connection)"
        case .notLeader(let connection): "not-leader c\(connection)"
        case .dispatch(let connection, let order):
            "dispatch c\(connection) \(order.ref) id=\(order.ref.id) tokens=\(order.tokens.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }) holds=\(order.holds)"
        case .cancel(let connection, let ref, let reason): "cancel c\(connection) \(ref) (\(reason.text))"
        case .clientHello(let connection): "client hello c\(connection)"
        case .request(let connection, let request):
            "request c\(connection) #\(request.requestID) \(describe(request.kind))"
        case .clientWelcome(let connection, let welcome): "client welcome c\(connection) epoch \(welcome.epoch)"
        case .reply(let connection, let reply): "reply c\(connection) #\(reply.requestID) \(describe(reply.kind))"
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

/// A peer of the coordinator.
enum Peer: Hashable {
    case worker(Int)
    case client(Int)
}

/// A message on its way.
struct Envelope {
    var id: UInt64
    /// The peer at the other end.
    var peer: Peer
    var message: Message
    var deliverAt: Timestamp
}

extension Simulation {
    mutating func send(_ message: Message, worker: Int) {
        send(message, peer: .worker(worker))
    }

    /// Puts a message on the network: delayed, maybe dropped or duplicated (in the fault phase).
    mutating func send(_ message: Message, peer: Peer) {
        if actingDeposed, deposedFenced, !message.toCoordinator {
            return log("not sent (the deposed coordinator's turn was refused) \(message.summary)")
        }
        if inFaultPhase, random.int(0...199) == 0 {
            switch peer {
            case .worker(let worker): breakConnection(of: worker, dropping: message)
            case .client(let client): breakClientConnection(of: client, dropping: message)
            }
            return
        }
        let copies = inFaultPhase && random.int(0...199) == 0 ? 2 : 1
        if copies == 2 { count("message duplicated") }
        for _ in 0..<copies {
            let slow = inFaultPhase && random.int(0...49) == 0
            if slow { count("message delayed") }
            let delay: Duration = .milliseconds(Int64(slow ? random.int(500...2500) : random.int(0...30)))
            nextEnvelope += 1
            network.append(Envelope(id: nextEnvelope, peer: peer, message: message, deliverAt: now + delay))
        }
    }

    /// A lost message breaks its connection (TCP does not lose one message and carry on):
    /// what else is on the wire to or from the worker is gone, and libzmq connects again
    /// under a new routing id, which the coordinator does not know (the worker's next message
    /// is answered `forgotten`, and it says hello again).
    mutating func breakConnection(of worker: Int, dropping message: Message? = nil) {
        count("connection broken")
        log("drop \(message?.summary ?? "-"): connection of w\(worker) broken")
        network.removeAll { $0.peer == .worker(worker) }
        guard workers[worker].connection != nil else { return }
        nextConnection += 1
        workers[worker].connection = nextConnection
    }

    /// Delivers a message, unless its worker crashed or the coordinator is down (a cut-off
    /// worker's messages wait on the wire: ``deliverableMessages()`` holds them until the
    /// partition heals or breaks the connection).
    mutating func deliver(_ envelope: Envelope) {
        let worker: Int
        switch envelope.peer {
        case .worker(let index): worker = index
        case .client(let client): return deliverClient(envelope.message, client: client)
        }
        if envelope.message.toCoordinator, reachesDeposed(envelope.message.connection) {
            log("w\(worker) → deposed c \(envelope.message.summary)")
            return actAsDeposed { $0.coordinatorReceive(envelope.message, from: worker) }
        }
        if envelope.message.toCoordinator, reachesStandby(envelope.message.connection) {
            // The other process stands by: whatever the worker sent is refused, not read.
            log("w\(worker) → standby \(envelope.message.summary)")
            return send(.notLeader(envelope.message.connection), worker: worker)
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
        if scheduler == nil, !awaitingLeader, random.int(0...1) == 0 { return restartCoordinator() }
        let roll = random.int(0...99)
        let index = random.int(0...(workers.count - 1))
        switch roll {
        case 0..<25 where random.int(0...3) == 0:
            // A client is cut off too: what it sends and is sent waits, or is lost with its
            // connection when the cut heals.
            let client = random.int(0...(clients.count - 1))
            guard !clients[client].partitioned else { return }
            clients[client].partitioned = true
            count("client partition")
            log("FAULT partition client c\(client)")
        case 0..<25:
            guard !workers[index].partitioned else { return }
            workers[index].partitioned = true
            count("partition")
            log("FAULT partition w\(index)")
        case 25..<55:
            if let client = clients.indices.first(where: { clients[$0].partitioned }), random.int(0...1) == 0 {
                clients[client].partitioned = false
                if random.int(0...2) == 0 { breakClientConnection(of: client) }
                return log("heal client c\(client)")
            }
            let cut = workers.indices.filter { workers[$0].partitioned }
            guard let healed = cut.first else { return }
            workers[healed].partitioned = false
            // A long cut breaks the connection (TCP gives up); a short one only delays.
            if random.int(0...2) == 0 { breakConnection(of: healed) }
            log("heal w\(healed)")
        case 55..<65:
            guard workers[index].up else { return }
            count("worker crash")
            log("FAULT crash w\(index)")
            workers[index].crash()
        case 65..<68:
            guard workers[index].up, !workers[index].paused else { return }
            count("worker paused")
            log("FAULT pause w\(index)")
            workers[index].paused = true
        case 68..<72:
            guard let paused = workers.indices.first(where: { workers[$0].paused }) else { return }
            resumeWorker(paused)
        case 72..<75:
            // The worker is told to drain (SIGTERM): it finishes what it holds, then leaves.
            guard workers[index].up, !workers[index].paused else { return }
            count("worker drain")
            log("FAULT drain w\(index)")
            workerPerform(index, workers[index].machine.drain(now: now))
            workerFlush(index)
        case 75..<77:
            // An operator drains a worker by name (`cohort drain`): the coordinator sends it
            // nothing new, in this session and the next ones, until the operator undrains it
            // (`cohort undrain`), which the same draw does for a worker already drained.
            // The operator's command reaches the leader, unless it is paused.
            guard leaderPause == nil else { return }
            if operatorDrained.contains(index) {
                guard scheduler != nil else { return }
                count("operator undrain")
                log("FAULT operator undrains w\(index)")
                operatorDrained.remove(index)
                withScheduler("undrain w\(index)") { scheduler, now throws(SchedulerError) in
                    try scheduler.workerUndrained("w\(index)", now: now)
                }
                return
            }
            // The worker's oldest session in the table, which may have ended (the operator
            // names a worker that just left: the coordinator answers NOT_FOUND).
            guard let session = sessions.keys.sorted().first(where: { sessions[$0]!.worker == index }) else { return }
            count("operator drain")
            log("FAULT operator drains w\(index)")
            withScheduler("drain w\(index)") { scheduler, now in scheduler.workerDrainedByOperator(session, now: now) }
            // A session the scheduler no longer has is not drained (the coordinator answers
            // NOT_FOUND): the model only counts drains that took.
            if scheduler?.isDrainedByOperator("w\(index)") == true {
                operatorDrained.insert(index)
            } else {
                count("operator drain of a worker not connected")
            }
        case 77..<90:
            guard let down = workers.indices.first(where: { !workers[$0].up }) else { return }
            restartWorker(down)
        case 90..<94:
            guard scheduler != nil, leaderPause == nil, configuration.coordinatorCrashes else { return }
            count("coordinator crash")
            crashCoordinator()
        case 94..<98 where configuration.leaderChanges:
            pauseLeader()
        default:
            guard scheduler == nil, !awaitingLeader else { return }
            restartCoordinator()
        }
    }

}
