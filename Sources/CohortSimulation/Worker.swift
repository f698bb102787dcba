import CohortCore
import CohortSpec
import Foundation

/// A simulated worker: the decisions of `WorkerLoop` and `WorkerSession` that matter to the
/// cluster's guarantees (docs/scheduling.md, "Leases"), as a value.
struct SimWorker {
    struct Attempt {
        var order: DispatchOrder
        var startedAt: Timestamp?
        /// When it ends and how (decided at its start).
        var finishAt: Timestamp?
        var outcome: AttemptOutcome?
    }

    let index: Int
    let slots: Int
    var up = true
    var partitioned = false
    /// The session it believes it has.
    var session: SessionID?
    /// The connection whose WELCOME it waits for, and when it said hello.
    var connecting: (connection: UInt64, sentAt: Timestamp)?
    var leaseUntil: Timestamp?
    var heartbeatSequence: UInt64 = 0
    var heartbeatSentAt: [UInt64: Timestamp] = [:]
    var lastHeartbeat: Timestamp?
    /// Welcomed, and no other message from the coordinator yet: what it held before waits for
    /// the coordinator's answer to its READY (`WorkerLoop.resumeAfterAdoption`).
    var holdingForAdoption = false
    /// Results of attempts that ended while it had no session, sent after the next WELCOME.
    var unsent: [Result] = []
    /// Attempts it holds, in arrival order.
    var attempts: [Attempt] = []
    /// Attempts it was told to cancel (a dispatch that arrives after its cancel never starts).
    var cancelled: Set<AttemptID> = []

    struct Result {
        var ref: AttemptRef
        var outcome: AttemptOutcome
        var startedAt: Timestamp?
        var finishedAt: Timestamp

        func message(_ session: SessionID) -> Message {
            .finished(session, ref, outcome, startedAt: startedAt, finishedAt: finishedAt)
        }
    }

    init(index: Int, slots: Int) {
        self.index = index
        self.slots = slots
    }

    mutating func crash() {
        up = false
        session = nil
        connecting = nil
        leaseUntil = nil
        heartbeatSentAt = [:]
        attempts = []
        cancelled = []
        unsent = []
    }

    func holdsLease(at now: Timestamp) -> Bool { leaseUntil.map { now < $0 } ?? false }

    var runningCount: Int { attempts.count { $0.startedAt != nil } }
}

extension Simulation {
    static var leaseLength: Duration { heartbeat * (liveness - 1) }

    /// Heartbeats, reconnecting, the lease, and attempts that are due to end.
    mutating func workerTick(_ index: Int) {
        guard workers[index].up else { return }
        var worker = workers[index]
        defer { workers[index] = worker }
        // The lease ended: what holds categories of its own is killed, reported `workerLost`.
        if !worker.holdsLease(at: now), configuration.mutation != .ignoreLease {
            let doomed = worker.attempts.filter { !$0.order.holds.isEmpty && $0.startedAt != nil }
            for attempt in doomed {
                worker.attempts.removeAll { $0.order.ref.id == attempt.order.ref.id }
                log("w\(index) lease ended: kills \(attempt.order.ref) id=\(attempt.order.ref.id)")
                note("lease kill")
                let result = SimWorker.Result(
                    ref: attempt.order.ref, outcome: .cancelled(reason: .workerLost("the lease ended")),
                    startedAt: attempt.startedAt, finishedAt: now)
                if let session = worker.session {
                    workers[index] = worker
                    send(result.message(session), worker: index)
                    worker = workers[index]
                } else {
                    worker.unsent.append(result)  // sent after the next WELCOME, as WorkerLoop does
                }
            }
        }
        // Attempts whose time has come.
        let due = worker.attempts.filter { $0.finishAt.map { $0 <= now } ?? false }
        for attempt in due {
            worker.attempts.removeAll { $0.order.ref.id == attempt.order.ref.id }
            log("w\(index) ends \(attempt.order.ref) id=\(attempt.order.ref.id) \(describe(attempt.outcome!))")
            let result = SimWorker.Result(
                ref: attempt.order.ref, outcome: attempt.outcome!, startedAt: attempt.startedAt,
                finishedAt: attempt.finishAt!)
            if let session = worker.session {
                workers[index] = worker
                send(result.message(session), worker: index)
                worker = workers[index]
            } else {
                worker.unsent.append(result)  // sent after the next WELCOME, as WorkerLoop does
            }
        }
        if worker.session == nil {
            if worker.connecting == nil || now - worker.connecting!.sentAt > .seconds(5) {
                nextConnection += 1
                worker.connecting = (nextConnection, now)
                let running = worker.attempts.map(\.order.ref)
                workers[index] = worker
                send(.hello(connection: nextConnection, running: running, sentAt: now), worker: index)
                worker = workers[index]
            }
        } else if let session = worker.session, worker.lastHeartbeat.map({ now - $0 >= Self.heartbeat }) ?? true {
            worker.heartbeatSequence += 1
            worker.heartbeatSentAt[worker.heartbeatSequence] = now
            worker.lastHeartbeat = now
            workers[index] = worker
            send(.heartbeat(session, sequence: worker.heartbeatSequence), worker: index)
            worker = workers[index]
        }
    }

    /// Starts the oldest queued attempt if a slot is free and the worker holds a lease.
    mutating func startQueued(_ index: Int) {
        let worker = workers[index]
        guard worker.up, worker.holdsLease(at: now), !worker.holdingForAdoption, worker.runningCount < worker.slots,
            let position = worker.attempts.firstIndex(where: { $0.startedAt == nil }), let session = worker.session
        else { return }
        var attempt = worker.attempts[position]
        if configuration.mutation != .startCancelled, worker.cancelled.contains(attempt.order.ref.id) { return }
        attempt.startedAt = now
        let duration: Duration = .milliseconds(
            Int64(random.int(0...9) == 0 ? random.int(2000...8000) : random.int(5...1500)))
        let roll = random.int(0...99)
        if let timeout = attempt.order.timeout, duration > timeout {
            attempt.finishAt = now + timeout
            attempt.outcome = .cancelled(reason: .timedOut)
        } else {
            attempt.finishAt = now + duration
            attempt.outcome =
                roll < 85
                ? .succeeded(output: Data("{\"n\":\(random.int(0...999))}".utf8)) : .failed(error: "exit code 1")
        }
        workers[index].attempts[position] = attempt
        log("w\(index) starts \(attempt.order.ref) id=\(attempt.order.ref.id)")
        note("start")
        checkStart(attempt.order, worker: index)
        send(.started(session, attempt.order.ref), worker: index)
    }

    mutating func workerReceive(_ message: Message, worker index: Int) {
        if case .welcome = message {} else { workers[index].holdingForAdoption = false }
        switch message {
        case .welcome(let connection, let session):
            guard let connecting = workers[index].connecting, connecting.connection == connection else { return }
            workers[index].connecting = nil
            workers[index].session = session
            workers[index].holdingForAdoption = true
            let unsent = workers[index].unsent
            workers[index].unsent = []
            for result in unsent { send(result.message(session), worker: index) }
            workers[index].lastHeartbeat = now
            // The HELLO that a WELCOME answers counts as an acknowledged heartbeat.
            workers[index].leaseUntil = max(
                workers[index].leaseUntil ?? connecting.sentAt, connecting.sentAt + Self.leaseLength)
        case .heartbeatAck(let session, let sequence):
            guard workers[index].session == session, let sentAt = workers[index].heartbeatSentAt[sequence] else {
                return
            }
            workers[index].heartbeatSentAt[sequence] = nil
            workers[index].leaseUntil = max(workers[index].leaseUntil ?? sentAt, sentAt + Self.leaseLength)
        case .reconnect(let session):
            guard workers[index].session == session else { return }
            workers[index].session = nil
            workers[index].leaseUntil = nil
            workers[index].heartbeatSentAt = [:]
        case .dispatch(let session, let order):
            guard workers[index].session == session else { return }
            if workers[index].attempts.contains(where: { $0.order.ref.id == order.ref.id }) { return }
            if workers[index].cancelled.contains(order.ref.id) {
                send(
                    .finished(
                        session, order.ref, .cancelled(reason: .custom("cancelled before it arrived")), startedAt: nil,
                        finishedAt: now),
                    worker: index)
                return
            }
            workers[index].attempts.append(SimWorker.Attempt(order: order))
        case .cancel(_, let ref, let reason):
            // A cancel names its attempt (ids are unique), whichever session it was sent on.
            workers[index].cancelled.insert(ref.id)
            guard let session = workers[index].session ?? workers[index].connecting.map({ _ in SessionID(0) }) else {
                return
            }
            guard let position = workers[index].attempts.firstIndex(where: { $0.order.ref.id == ref.id }) else {
                return
            }
            if configuration.mutation == .startCancelled, workers[index].attempts[position].startedAt == nil { return }
            let attempt = workers[index].attempts.remove(at: position)
            send(
                .finished(session, ref, .cancelled(reason: reason), startedAt: attempt.startedAt, finishedAt: now),
                worker: index)
        default:
            break
        }
    }
}
