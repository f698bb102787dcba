import CohortCore
import CohortSpec
import Foundation

/// A simulated worker: the real worker's state machine (``WorkerMachine``, the same code
/// `WorkerLoop` runs) around a simulated engine, whose attempts take random times and end
/// with random outcomes.
struct SimWorker {
    /// The machine's words in the simulation: the scheduler's own types.
    enum Words: WorkerVocabulary {
        struct Start: Sendable {
            var ref: AttemptRef
            var startedAt: Timestamp
        }
        struct Result: Sendable {
            var ref: AttemptRef
            var outcome: AttemptOutcome
            var startedAt: Timestamp?
            var finishedAt: Timestamp
        }
        /// Code of an attempt asks for categories (a `MutuallyExclusive` procedure it runs).
        struct LockRequest: Sendable {
            var requestID: UInt64
            var ref: AttemptRef
            var categories: [String]
        }

        static func attemptID(of order: DispatchOrder) -> UInt64 { order.ref.id.rawValue }
        static func holdsCategories(_ order: DispatchOrder) -> Bool { !order.holds.isEmpty }
        static func attemptID(of start: Start) -> UInt64 { start.ref.id.rawValue }
        static func attemptID(of result: Result) -> UInt64 { result.ref.id.rawValue }
        static func identity(of order: DispatchOrder) -> AttemptRef { order.ref }
        static func identity(of result: Result) -> AttemptRef { result.ref }
        static func cancelledBeforeStart(_ order: DispatchOrder, _ reason: CancellationReason, at now: Timestamp)
            -> Result
        {
            Result(ref: order.ref, outcome: .cancelled(reason: reason), startedAt: nil, finishedAt: now)
        }
    }

    typealias Machine = WorkerMachine<Words>

    /// An attempt the engine runs: when it ends and how (decided as it starts).
    struct Running {
        var order: DispatchOrder
        var startedAt: Timestamp
        var finishAt: Timestamp
        var outcome: AttemptOutcome
        /// Lock requests its code made: request id → the grant's tokens (nil while waiting).
        var locks: [UInt64: [String: UInt64]?] = [:]
    }

    let index: Int
    let slots: Int
    var up = true
    var partitioned = false
    /// Stopped (SIGSTOP): it neither reads, nor writes, nor notices time passing.
    var paused = false
    var machine: Machine
    /// The connection the worker's socket has now (a new number after every reconnection,
    /// libzmq's included); nil while closed.
    var connection: UInt64?
    /// Session ids the machine made.
    var sessions: UInt64 = 0
    var engine: [UInt64: Running] = [:]
    /// The last lock request id its code used (one counter a process, as the lock manager's).
    var lockRequests: UInt64 = 0
    /// Attempts whose results the machine sent again in a new session (for the counts).
    var resent: Set<UInt64> = []

    init(index: Int, slots: Int, now: Timestamp, mutation: Mutation?) {
        self.index = index
        self.slots = slots
        machine = Self.makeMachine(index: index, slots: slots, now: now, mutation: mutation)
    }

    static func makeMachine(index: Int, slots: Int, now: Timestamp, mutation: Mutation?) -> Machine {
        // Session ids only name sessions in traces; the machine needs them unique.
        let counter = SessionCounter(prefix: "w\(index)-")
        var machine = Machine(
            settings: .init(
                slots: slots,
                session: .init(
                    heartbeatInterval: Simulation.heartbeat, heartbeatLiveness: Simulation.liveness,
                    reconnectDelay: .seconds(1), maxReconnectDelay: .seconds(8)),
                drainTimeout: .seconds(3), stopGrace: .seconds(5)),
            now: now, makeSessionID: { counter.next() })
        #if DELIBERATE_BUGS
            switch mutation {
            case .startCancelled: machine.mutations = [.startCancelledWaiting]
            case .ignoreLease: machine.mutations = [.ignoreLease]
            default: break
            }
        #endif
        return machine
    }

    /// The process dies: its attempts, its connection and its memory are gone.
    mutating func crash() {
        up = false
        paused = false
        connection = nil
        engine = [:]
    }
}

/// Session ids `w1-1`, `w1-2`, … (a class: the machine keeps the closure).
final class SessionCounter: @unchecked Sendable {
    // @unchecked: one simulation uses it, on one thread.
    private let prefix: String
    private var value = 0
    init(prefix: String) { self.prefix = prefix }
    func next() -> String {
        value += 1
        return prefix + String(value)
    }
}

extension Simulation {
    /// A procedure's output: `{"n": n, "items": [0, …]}` with `n % 4` items, the list a map
    /// that reads it fans out over (none, often).
    static func output(n: Int) -> Data {
        let items = (0..<(n % 4)).map(String.init).joined(separator: ",")
        return Data("{\"n\":\(n),\"items\":[\(items)]}".utf8)
    }

    static var leaseLength: Duration { heartbeat * (liveness - 1) }

    /// Time passed: the engine finishes what is due, then the machine heartbeats, checks its
    /// lease, reconnects, starts what fits.
    mutating func workerTick(_ index: Int) {
        guard workers[index].up, !workers[index].paused else { return }
        let due = workers[index].engine.values.filter { $0.finishAt <= now }.sorted {
            ($0.finishAt, $0.order.ref.id.rawValue) < ($1.finishAt, $1.order.ref.id.rawValue)
        }
        for attempt in due {
            finishInEngine(index, attempt.order.ref.id.rawValue, outcome: attempt.outcome, at: attempt.finishAt)
        }
        workerPerform(index, workers[index].machine.tick(now: now))
        workerFlush(index)
        if workers[index].machine.isDone(now: now) {
            // Drained (or stopped at the drain timeout): its last words, then the process exits.
            workerPerform(index, workers[index].machine.disconnect())
            log("w\(index) exits")
            note("worker exit")
            workers[index].crash()
        }
    }

    /// SIGCONT: the worker notices the time that passed at once (its lease may have ended).
    mutating func resumeWorker(_ index: Int) {
        log("resume w\(index)")
        workers[index].paused = false
        workerTick(index)
    }

    /// The engine ends an attempt and tells the machine.
    mutating func finishInEngine(_ index: Int, _ id: UInt64, outcome: AttemptOutcome, at finishedAt: Timestamp) {
        guard let attempt = workers[index].engine.removeValue(forKey: id) else { return }
        // Its local procedures end first: what they hold is released, what they wait for withdrawn.
        for (request, tokens) in attempt.locks.sorted(by: { $0.key < $1.key }) {
            workerPerform(
                index,
                tokens == nil
                    ? workers[index].machine.lockWithdrawn(requestID: request)
                    : workers[index].machine.lockReleased(requestID: request))
        }
        log("w\(index) ends \(attempt.order.ref) id=\(id) \(describe(outcome))")
        let result = SimWorker.Words.Result(
            ref: attempt.order.ref, outcome: outcome, startedAt: attempt.startedAt, finishedAt: finishedAt)
        workerPerform(index, workers[index].machine.attemptFinished(result, now: now))
    }

    /// Sends what the machine's turn produced.
    mutating func workerFlush(_ index: Int) {
        workerPerform(index, workers[index].machine.flush())
    }

    /// Carries out the machine's actions, as `WorkerLoop` does.
    mutating func workerPerform(_ index: Int, _ actions: [SimWorker.Machine.Action]) {
        for action in actions {
            switch action {
            case .connect(let sessionID):
                nextConnection += 1
                workers[index].connection = nextConnection
                log("w\(index) connects c\(nextConnection) session \(sessionID)")
                send(.hello(connection: nextConnection), worker: index)
            case .send(let message):
                workerSend(index, message)
            case .disconnect(let reason):
                log("w\(index) disconnects: \(reason)")
                workers[index].connection = nil
            case .fail(let refusal):
                fail(.schedulerAccepts, "w\(index) refused for good: \(refusal.message)")
            case .start(let order):
                startInEngine(index, order)
            case .cancel(let id, let reason):
                finishInEngine(index, id, outcome: .cancelled(reason: reason), at: now)
            case .kill(let id, let reason):
                note("lease kill")
                log("w\(index) lease ended: kills id=\(id)")
                finishInEngine(index, id, outcome: .cancelled(reason: .workerLost(reason)), at: now)
            case .cancelAll:
                for id in workers[index].engine.keys.sorted() {
                    finishInEngine(index, id, outcome: .cancelled(reason: .custom("stopped")), at: now)
                }
            case .welcomed(let sessionID, _, let held, let resent):
                log("w\(index) ready \(sessionID) holding \(held), sending \(resent.count) results again")
                if !resent.isEmpty { note("results sent again") }
                workers[index].resent.formUnion(resent)
            case .leaseRenewed:
                break
            case .ignored(let id, let reason):
                note("dispatch ignored")
                log("w\(index) ignores the dispatch of id=\(id): \(reason)")
            case .drainTimedOut(let running):
                log("w\(index) drain timed out: stops \(running)")
            case .leaseEnded(let reason, let stopped):
                log("w\(index) lease ended (\(reason)): stops \(stopped)")
            }
        }
    }

    private mutating func workerSend(_ index: Int, _ message: SimWorker.Machine.Message) {
        guard let connection = workers[index].connection else { return }
        switch message {
        case .ready(_, let held, let draining):
            send(
                .ready(
                    connection, running: held.map(\.order.ref),
                    started: Set(held.filter { $0.start != nil }.map(\.order.ref.id)), draining: draining),
                worker: index)
        case .heartbeat(let sequence):
            send(.heartbeat(connection, sequence: sequence), worker: index)
        case .started(let starts):
            for start in starts { send(.started(connection, start.ref), worker: index) }
        case .results(let results):
            for result in results {
                send(
                    .finished(
                        connection, result.ref, result.outcome, startedAt: result.startedAt,
                        finishedAt: result.finishedAt),
                    worker: index)
            }
        case .draining:
            send(.draining(connection), worker: index)
        case .disconnect(let handedBack):
            send(.goodbye(connection, handedBack: handedBack), worker: index)
        case .lockRequest(let request):
            send(.lockRequest(connection, request), worker: index)
        case .lockWithdraw(let requestID):
            send(.lockWithdraw(connection, requestID: requestID), worker: index)
        case .lockRelease(let requestID):
            send(.lockRelease(connection, requestID: requestID), worker: index)
        }
    }

    /// The engine starts an attempt: its duration and outcome are drawn now.
    private mutating func startInEngine(_ index: Int, _ order: DispatchOrder) {
        let duration: Duration = .milliseconds(
            Int64(random.int(0...9) == 0 ? random.int(2000...8000) : random.int(5...1500)))
        let finishAt: Timestamp
        let outcome: AttemptOutcome
        if let timeout = order.timeout, duration > timeout {
            finishAt = now + timeout
            outcome = .cancelled(reason: .timedOut)
        } else {
            finishAt = now + duration
            outcome =
                random.int(0...99) < 85
                ? .succeeded(output: Self.output(n: random.int(0...999))) : .failed(error: "exit code 1")
        }
        workers[index].engine[order.ref.id.rawValue] = SimWorker.Running(
            order: order, startedAt: now, finishAt: finishAt, outcome: outcome)
        log("w\(index) starts \(order.ref) id=\(order.ref.id)")
        note("start")
        checkStart(order, worker: index)
        workerPerform(index, workers[index].machine.attemptStarted(.init(ref: order.ref, startedAt: now)))
        // Some attempts' code locks categories of its own (worker-local locks through the
        // cluster): what the attempt holds, or, if it holds nothing, any category.
        guard random.int(0...5) == 0 else { return }
        let categories = order.holds.isEmpty ? [Self.categories[random.int(0...2)]] : order.holds.sorted()
        workers[index].lockRequests += 1
        let request = workers[index].lockRequests
        workers[index].engine[order.ref.id.rawValue]?.locks[request] = .some(nil)
        note("local lock request")
        log("w\(index) \(order.ref) id=\(order.ref.id) asks for \(categories) (request \(request))")
        workerPerform(
            index,
            workers[index].machine.lockRequested(
                requestID: request, attemptID: order.ref.id.rawValue,
                .init(requestID: request, ref: order.ref, categories: categories)))
    }

    /// A message from the coordinator, on the worker's current connection or an old one.
    mutating func workerReceive(_ message: Message, worker index: Int) {
        guard let connection = workers[index].connection, message.connection == connection else {
            log("w\(index) drops \(message.summary): not its connection")
            return
        }
        let received: SimWorker.Machine.Received
        switch message {
        case .welcome:
            received = .session(
                .welcome(
                    WorkerWelcome(
                        peerID: "w\(index)", heartbeatInterval: Self.heartbeat, heartbeatLiveness: Self.liveness,
                        acknowledgesHeartbeats: true)))
        case .heartbeatAck(_, let sequence):
            received = .session(.heartbeat(acknowledged: sequence))
        case .forgotten:
            received = .session(.forgotten("the coordinator does not know this connection"))
        case .notLeader:
            received = .session(
                .refused(WorkerRefusal(.notLeader, "this coordinator is a standby", leader: "e\(leaderEndpoint)")))
        case .dispatch(_, let order):
            received = .dispatch([order])
        case .lockGrant(_, let request, let tokens):
            // The waiting procedure gets its grant (if its attempt still runs here).
            if let id = workers[index].engine.first(where: { $0.value.locks[request] != nil })?.key {
                workers[index].engine[id]?.locks[request] = .some(tokens)
            }
            received = .lockGranted(requestID: request, tokens: tokens)
        case .lockDeny(_, let request):
            // The procedure fails, and its attempt with it.
            received = .lockDenied(requestID: request)
            if let id = workers[index].engine.first(where: { $0.value.locks[request] != nil })?.key {
                workers[index].engine[id]?.locks[request] = nil
                workerPerform(index, workers[index].machine.received(received, now: now))
                finishInEngine(index, id, outcome: .failed(error: "lock request \(request) denied"), at: now)
                workerFlush(index)
                return
            }
        case .cancel(_, let ref, let reason):
            // Only a cancel that names exactly the attempt held here (`WorkerLoop` checks it too).
            let here = workers[index].machine.order(of: ref.id.rawValue)?.ref == ref
            // Held but not started: it must never start now.
            if here, workers[index].engine[ref.id.rawValue] == nil { checker.cancelledAtWorker.insert(ref.id) }
            received = .cancel(here ? [(ref.id.rawValue, reason)] : [])
        case .hello, .ready, .heartbeat, .started, .finished, .draining, .goodbye, .lockRequest, .lockWithdraw,
            .lockRelease, .clientHello, .request, .clientWelcome, .reply:
            return
        }
        workerPerform(index, workers[index].machine.received(received, now: now))
        workerFlush(index)
    }

    mutating func restartWorker(_ index: Int) {
        log("restart w\(index)")
        workers[index].up = true
        workers[index].machine = SimWorker.makeMachine(
            index: index, slots: workers[index].slots, now: now, mutation: configuration.mutation)
    }
}
