import DequeModule

/// The types a ``WorkerMachine`` carries without looking inside: the real worker's are the
/// wire's (`AttemptDispatch`, `AttemptResult`, …), the simulation's are its own. The machine
/// needs only their attempt ids, whether an attempt holds cluster-wide categories, and the
/// result of an attempt cancelled before it started.
public protocol WorkerVocabulary {
    /// A dispatched attempt.
    associatedtype Order: Sendable
    /// An attempt's start, as the worker reports it.
    associatedtype Start: Sendable
    /// An attempt's result, as the worker reports it.
    associatedtype Result: Sendable
    /// Why the coordinator cancels an attempt.
    associatedtype Cancellation: Sendable
    /// A lock request made by code an attempt runs.
    associatedtype LockRequest: Sendable
    /// What tells one attempt from every other, its id included (a coordinator without a
    /// journal numbers attempts from 1 again after a restart: the id alone is not enough to
    /// tell a duplicate from a new attempt).
    associatedtype Identity: Hashable & Sendable

    static func attemptID(of order: Order) -> UInt64
    /// Whether the attempt was granted cluster-wide categories of its own (its `holds`): it
    /// must stop when the worker's lease ends.
    static func holdsCategories(_ order: Order) -> Bool
    static func attemptID(of start: Start) -> UInt64
    static func attemptID(of result: Result) -> UInt64
    static func identity(of order: Order) -> Identity
    static func identity(of result: Result) -> Identity
    /// The result of an attempt cancelled before it started.
    static func cancelledBeforeStart(_ order: Order, _ cancellation: Cancellation, at now: Timestamp) -> Result
}

/// Every decision of a worker, as a state machine without I/O (issue 11; the scheduler is
/// the coordinator's): its session with the coordinator (``WorkerSession``: handshake,
/// heartbeats, lease, reconnection), its attempt table, its slots and the queue of attempts
/// dispatched ahead (the prefetch window), when an attempt starts, what a cancel does, the
/// lock requests of code it runs, what it reports and when, draining and stopping.
///
/// `WorkerLoop` (CohortWorker) is a thin shell around it: it feeds in what the socket, the
/// engine and the lock manager say, with the time, and carries out the actions; the
/// simulation (CohortSimulation) drives the same machine with simulated time and a
/// simulated engine.
///
/// **Starting.** Dispatched attempts wait in FIFO order and start (``Action/start(_:)``, the
/// engine runs it) while fewer than `slots` run, the session is ready, the worker holds a
/// lease, the coordinator has answered its READY (its first message that is not a cancel;
/// until then, an attempt it held may be one the coordinator cancels) and it is not stopping. A cancel of a waiting attempt
/// removes it and reports it cancelled at once; of a running one, asks the engine to
/// cancel it (its result comes from the engine).
///
/// **Reporting.** Starts, results and lock messages collect in an outbox that ``flush()``
/// sends once per loop turn: lock messages in order, one `started` for attempts still
/// running, then the results. Results made while no session is ready wait and go after the
/// next READY; lock requests not granted yet are sent again after it.
///
/// **Results are kept until confirmed.** A result sent is kept until the coordinator
/// acknowledges a heartbeat sent after it: the coordinator reads a connection in order and
/// sends a turn's messages only once the turn's journal records are committed, so that
/// acknowledgement says the result is on disk (or was refused as not current). A result
/// still unconfirmed when the session ends (the coordinator crashed or was deposed with it
/// unjournaled, or the connection broke with it on the wire) is sent again after the next
/// READY, whose list of held attempts names its attempt (with its start, if it started), so
/// the coordinator adopts it, leader or not, and takes the result instead of running the
/// child again; an attempt the lease's end killed is not listed (its result is a worker loss
/// either way). A coordinator that acknowledges no heartbeats gets no such promise.
public struct WorkerMachine<V: WorkerVocabulary> {
    public struct Settings: Sendable {
        public var slots: Int
        public var session: WorkerSession.Settings
        /// How long a drain waits for what runs before it stops the rest.
        public var drainTimeout: Duration
        /// How long stopping waits for cancelled attempts to finish (the kill grace and a margin).
        public var stopGrace: Duration

        public init(slots: Int, session: WorkerSession.Settings, drainTimeout: Duration, stopGrace: Duration) {
            self.slots = slots
            self.session = session
            self.drainTimeout = drainTimeout
            self.stopGrace = stopGrace
        }
    }

    /// An attempt the worker holds, for READY: still waiting (`start` nil) or running. (Its
    /// grants are not listed: the coordinator restores them from its own table and journal.)
    public struct Held: Sendable {
        public var order: V.Order
        public var start: V.Start?
    }

    /// What goes to the coordinator.
    public enum Message: Sendable {
        case ready(sessionID: String, held: [Held], draining: Bool)
        case heartbeat(sequence: UInt64)
        /// Send no more work: draining (`stopping` false) or stopping.
        case draining(stopping: Bool)
        case lockRequest(V.LockRequest)
        case lockWithdraw(requestID: UInt64)
        case lockRelease(requestID: UInt64)
        case started([V.Start])
        case results([V.Result])
        /// The last message: the worker stops; `handedBack` attempts were interrupted.
        case disconnect(handedBack: Int)
    }

    public enum Action: Sendable {
        /// Open a new connection and send HELLO on it.
        case connect(sessionID: String)
        case send(Message)
        /// Close the connection.
        case disconnect(reason: String)
        /// The coordinator refused this worker for good: stop.
        case fail(WorkerRefusal)
        /// Hand the attempt to the engine: it runs now.
        case start(V.Order)
        /// Cancel a running attempt; the engine reports its result.
        case cancel(attemptID: UInt64, V.Cancellation)
        /// The lease ended: stop the running attempt at once (its processes killed without
        /// a grace) and report it cancelled as a worker loss.
        case kill(attemptID: UInt64, reason: String)
        /// Stopping: cancel every running attempt (their results are not reported).
        case cancelAll
        /// A session was welcomed and READY sent (for logs and observers); `resent` names the
        /// attempts whose results go out again (READY lists them among the `held`).
        case welcomed(sessionID: String, peerID: String, held: Int, resent: [UInt64])
        case leaseRenewed
        case leaseEnded(reason: String, stopped: Int)
        /// A dispatch not run (for logs): the worker is stopping, or the attempt is held or
        /// ended here already (a duplicate).
        case ignored(attemptID: UInt64, reason: String)
        /// The drain timed out: what still runs is stopped (for logs; ``cancelAll`` follows).
        case drainTimedOut(running: Int)
    }

    /// What the coordinator said, as far as the machine cares.
    public enum Received: Sendable {
        case session(WorkerSession.Input)
        case dispatch([V.Order])
        case cancel([(attemptID: UInt64, cancellation: V.Cancellation)])
        case lockGranted(requestID: UInt64, tokens: [String: UInt64])
        case lockDenied(requestID: UInt64)
        /// Anything else from the coordinator (an error about one message, …): proof of life.
        case other
    }

    #if DELIBERATE_BUGS
        /// Deliberate bugs, to show that the simulation catches them (test builds only).
        public enum Mutation: Hashable, Sendable {
            /// A cancel of an attempt still waiting for a slot is ignored: the prefetched attempt
            /// starts after its group was cancelled.
            case startCancelledWaiting
            /// The lease's end stops nothing: a cut-off worker's exclusive attempts run on.
            case ignoreLease
        }
        public var mutations: Set<Mutation> = []
    #endif

    private struct Running {
        var order: V.Order
        var start: V.Start?
        /// Cancelled because the worker stops: its result is not reported; the final
        /// `disconnect` hands it back.
        var interrupted = false
        /// Killed because the lease ended: its result says so (`workerLost`).
        var killedByLease = false
    }

    private struct LockEntry {
        var attemptID: UInt64
        var request: V.LockRequest
        /// Set once granted.
        var tokens: [String: UInt64]?
    }

    /// A result on its way to the coordinator, with the order and start READY lists it by.
    private struct Report {
        var order: V.Order
        var start: V.Start?
        var result: V.Result
        /// Listed in READY for the coordinator to adopt. Not an attempt the lease's end
        /// killed: its result is a worker loss wherever it lands, and one the coordinator
        /// restored and did not adopt costs no loss (its lease ended because the coordinator
        /// was away).
        var adoptable = true
        /// Sent at least once (and not confirmed when its session ended).
        var sent = false
    }

    private struct Outbox {
        var locks: [Message] = []
        var started: [V.Start] = []
        var results: [Report] = []
        var isEmpty: Bool { locks.isEmpty && started.isEmpty && results.isEmpty }
    }

    public let settings: Settings
    public private(set) var session: WorkerSession
    /// Dispatched, waiting for a slot, oldest first.
    private var waiting: [V.Order] = []
    /// Handed to the engine and not finished.
    private var running: [UInt64: Running] = [:]
    private var locks: [UInt64: LockEntry] = [:]
    /// Attempts that ended here in this session, the most recent ``rememberedEndings``: a
    /// dispatch of one of them again (a duplicated message) is stale, and must not run it a
    /// second time. Forgotten at every WELCOME: a duplicate rides the connection of its
    /// original, and a coordinator without a journal numbers attempts from 1 again after it
    /// restarts.
    private var ended: Set<V.Identity> = []
    private var endedOrder: Deque<V.Identity> = []
    public static var rememberedEndings: Int { 16_384 }
    private var outbox = Outbox()
    /// Results made while no session was ready, or not confirmed when the last one ended:
    /// sent after the next READY.
    private var unsentResults: [Report] = []
    /// Results sent on this session and not confirmed yet, each with the number of the last
    /// heartbeat sent before it: the acknowledgement of a later one confirms it.
    private var unconfirmed: [(after: UInt64, report: Report)] = []
    /// Lock withdrawals and releases made while no session was ready.
    private var unsentLocks: [Message] = []
    /// READY was sent and the coordinator has not answered yet: nothing starts.
    public private(set) var holdingForAdoption = false
    public private(set) var drainDeadline: Timestamp?
    public private(set) var stopDeadline: Timestamp?
    /// How many attempts stopping interrupted.
    public private(set) var interruptedByStop = 0

    public init(settings: Settings, now: Timestamp, makeSessionID: @escaping @Sendable () -> String) {
        self.settings = settings
        session = WorkerSession(settings: settings.session, now: now, makeSessionID: makeSessionID)
    }

    // MARK: Queries

    /// Attempts held: waiting and running.
    public var attemptCount: Int { waiting.count + running.count }
    public var runningCount: Int { running.count }
    public var waitingCount: Int { waiting.count }
    /// Whether the attempt is held here (waiting or running).
    public func order(of attemptID: UInt64) -> V.Order? {
        running[attemptID]?.order ?? waiting.first { V.attemptID(of: $0) == attemptID }
    }
    public var isStopping: Bool { stopDeadline != nil }
    public var isDraining: Bool { drainDeadline != nil }

    /// When ``tick(now:)`` next has something to do.
    public var nextDeadline: Timestamp? {
        [session.nextDeadline, stopDeadline == nil ? drainDeadline : nil, stopDeadline].compactMap { $0 }.min()
    }

    /// Whether the worker is done: stopping and nothing runs (or the grace passed), or
    /// drained (nothing held, every result sent, and confirmed while a coordinator is there
    /// to confirm it; unless the drain timed out). A result sent once to a coordinator that is
    /// gone does not hold a drained worker: the whole cluster may be stopping.
    public func isDone(now: Timestamp) -> Bool {
        if let stopDeadline { return running.isEmpty || now >= stopDeadline }
        if let drainDeadline {
            let delivered =
                outbox.results.isEmpty && unsentResults.allSatisfy(\.sent)
                && (unconfirmed.isEmpty || !session.isReady)
            return waiting.isEmpty && running.isEmpty && (delivered || now >= drainDeadline)
        }
        return false
    }

    /// Results the coordinator has not confirmed yet: waiting for a session, for the turn's
    /// end, or for the acknowledgement of a heartbeat sent after them.
    public var unconfirmedResults: Int { unsentResults.count + outbox.results.count + unconfirmed.count }

    // MARK: Inputs

    /// Time passes: the session connects, heartbeats, gives up on a silent coordinator, and
    /// the lease may end; a drain past its timeout stops.
    public mutating func tick(now: Timestamp) -> [Action] {
        var actions = perform(session.tick(now: now), now: now)
        if stopDeadline == nil, let drainDeadline, now >= drainDeadline, !isDone(now: now) {
            actions.append(.drainTimedOut(running: running.count))
            actions += stop(now: now)
        }
        return actions + startWhatFits(now: now)
    }

    /// A message from the coordinator.
    public mutating func received(_ message: Received, now: Timestamp) -> [Action] {
        let input: WorkerSession.Input =
            switch message {
            case .session(let input): input
            default: .other
            }
        var actions = perform(session.received(input, now: now), now: now)
        if case .session(.heartbeat(let acknowledged)) = message, acknowledged != 0, session.isReady {
            // The coordinator read the heartbeat, and so every result sent before it, and sent
            // this once the turns that took them were committed.
            unconfirmed.removeAll { $0.after < acknowledged }
        }
        switch message {
        case .session(.welcome), .session(.refused), .session(.shutdown), .session(.forgotten):
            return actions + startWhatFits(now: now)
        case .session(.heartbeat), .session(.other), .other, .lockGranted, .lockDenied, .dispatch, .cancel:
            break
        }
        guard session.isReady else { return actions }
        switch message {
        case .dispatch(let orders):
            actions += accept(orders)
        case .cancel(let cancellations):
            for (attemptID, cancellation) in cancellations {
                actions += cancel(attemptID, cancellation, now: now)
            }
        case .lockGranted(let requestID, let tokens):
            locks[requestID]?.tokens = tokens
        case .lockDenied(let requestID):
            locks[requestID] = nil
        case .session, .other:
            break
        }
        // The coordinator's first message after READY that is not a cancel came after its
        // cancels of what it did not adopt: what waited may start. A cancel does not end the
        // wait: the answer's cancels may come as several messages, and an attempt started on
        // the first could be one the next cancels, whose category the coordinator granted to
        // someone else (found by the simulation, seed 47: `no-two-live-holders`).
        if case .cancel = message {} else { holdingForAdoption = false }
        return actions + startWhatFits(now: now)
    }

    /// The connection failed under the session (a send or a receive failed).
    public mutating func connectionFailed(now: Timestamp, reason: String) -> [Action] {
        perform(session.connectionFailed(now: now, reason: reason), now: now)
    }

    /// The engine started an attempt.
    public mutating func attemptStarted(_ start: V.Start) -> [Action] {
        let id = V.attemptID(of: start)
        guard running[id] != nil else { return [] }
        running[id]!.start = start
        if session.isReady, !running[id]!.interrupted { outbox.started.append(start) }
        return []
    }

    /// The engine finished an attempt at `now`: its result goes out (or waits for a
    /// session), and its slot is free. `now` decides whether the lease still holds for what
    /// would start in the slot: a worker paused past its lease may report an attempt's end
    /// before its next tick has seen the lease end (simulation, seed 50:
    /// `no-start-after-cancel-acknowledged`).
    public mutating func attemptFinished(_ result: V.Result, now: Timestamp) -> [Action] {
        guard let attempt = running.removeValue(forKey: V.attemptID(of: result)) else { return [] }
        remember(V.identity(of: result))
        if !attempt.interrupted {
            report(
                Report(
                    order: attempt.order, start: attempt.start, result: result, adoptable: !attempt.killedByLease))
        }
        return startWhatFits(now: now)
    }

    /// Code an attempt runs asked for cluster-wide categories.
    public mutating func lockRequested(requestID: UInt64, attemptID: UInt64, _ request: V.LockRequest) -> [Action] {
        locks[requestID] = LockEntry(attemptID: attemptID, request: request)
        // Not ready: sent with every other outstanding request after the next READY.
        if session.isReady { outbox.locks.append(.lockRequest(request)) }
        return []
    }

    /// Code gave up a request before its grant.
    public mutating func lockWithdrawn(requestID: UInt64) -> [Action] {
        locks[requestID] = nil
        sendLock(.lockWithdraw(requestID: requestID))
        return []
    }

    /// Code released a grant.
    public mutating func lockReleased(requestID: UInt64) -> [Action] {
        locks[requestID] = nil
        sendLock(.lockRelease(requestID: requestID))
        return []
    }

    /// Take no new work, finish what runs (and what was sent already), then stop; what still
    /// runs at the drain timeout is stopped.
    public mutating func drain(now: Timestamp) -> [Action] {
        guard drainDeadline == nil, stopDeadline == nil else { return [] }
        drainDeadline = now + settings.drainTimeout
        return session.isReady ? [.send(.draining(stopping: false))] : []
    }

    /// Stop: no new work, every attempt cancelled (waiting ones dropped); done once what ran
    /// has finished or the grace passed. The final ``disconnect(now:)`` hands them back.
    public mutating func stop(now: Timestamp) -> [Action] {
        guard stopDeadline == nil else { return [] }
        stopDeadline = now + settings.stopGrace
        var actions: [Action] = []
        if session.isReady, drainDeadline == nil { actions.append(.send(.draining(stopping: true))) }
        interruptedByStop = waiting.count + running.count
        waiting = []
        for id in running.keys { running[id]!.interrupted = true }
        if !running.isEmpty { actions.append(.cancelAll) }
        return actions
    }

    /// Sends what the turn produced: lock messages in the order they were made, one
    /// `started` for attempts still running (a result implies its start), then the results.
    public mutating func flush() -> [Action] {
        guard session.isReady, !outbox.isEmpty else { return [] }
        let outbox = self.outbox
        self.outbox = Outbox()
        var actions = outbox.locks.map { Action.send($0) }
        let finished = Set(outbox.results.map { V.attemptID(of: $0.result) })
        let started = outbox.started.filter { !finished.contains(V.attemptID(of: $0)) }
        if !started.isEmpty { actions.append(.send(.started(started))) }
        if !outbox.results.isEmpty {
            actions.append(.send(.results(outbox.results.map(\.result))))
            // Kept until a later heartbeat's acknowledgement confirms them (the type's doc).
            if session.leaseEnforced {
                let after = session.heartbeatSequence
                unconfirmed += outbox.results.map { report in
                    var report = report
                    report.sent = true
                    return (after, report)
                }
            }
        }
        return actions
    }

    /// The worker's last words, when its loop ends: what the turn still has, then
    /// `disconnect` with the number of attempts handed back.
    public mutating func disconnect() -> [Action] {
        guard session.isReady else {
            session.stop()
            return []
        }
        let actions = flush() + [.send(.disconnect(handedBack: interruptedByStop))]
        session.stop()
        return actions
    }

    // MARK: Decisions

    private mutating func perform(_ sessionActions: [WorkerSession.Action], now: Timestamp) -> [Action] {
        var actions: [Action] = []
        for action in sessionActions {
            switch action {
            case .connect(let sessionID):
                actions.append(.connect(sessionID: sessionID))
            case .announce(let sessionID, let peerID):
                actions += announce(sessionID: sessionID, peerID: peerID)
            case .heartbeat(let sequence):
                actions.append(.send(.heartbeat(sequence: sequence)))
            case .leaseEnded(let reason):
                actions += leaseEnded(reason: reason)
            case .leaseRenewed:
                actions.append(.leaseRenewed)
            case .disconnect(let reason):
                // What the outbox held, and what was sent and not confirmed, waits for the
                // next session; lock requests are sent again from the table.
                unsentResults += unconfirmed.map(\.report) + outbox.results
                unconfirmed = []
                unsentLocks += outbox.locks.filter {
                    if case .lockRequest = $0 { false } else { true }
                }
                outbox = Outbox()
                holdingForAdoption = false
                actions.append(.disconnect(reason: reason))
            case .fail(let refusal):
                actions.append(.fail(refusal))
            }
        }
        return actions
    }

    /// Welcomed: READY lists every attempt held (waiting or running) and every one whose
    /// result waits to be sent (the coordinator adopts each or cancels it in its answer; an
    /// adopted one's result is then current, whoever leads now), then what waited for a
    /// session goes out.
    private mutating func announce(sessionID: String, peerID: String) -> [Action] {
        let held =
            (waiting.map { Held(order: $0, start: nil) }
            + running.values.filter { !$0.interrupted }.map { Held(order: $0.order, start: $0.start) }
            + unsentResults.filter(\.adoptable).map { Held(order: $0.order, start: $0.start) })
            .sorted { V.attemptID(of: $0.order) < V.attemptID(of: $1.order) }
        holdingForAdoption = true
        ended = []
        endedOrder = []
        let draining = drainDeadline != nil || stopDeadline != nil
        outbox.locks += locks.sorted { $0.key < $1.key }.filter { $0.value.tokens == nil }.map {
            .lockRequest($0.value.request)
        }
        outbox.locks += unsentLocks
        unsentLocks = []
        let resent = unsentResults.map { V.attemptID(of: $0.result) }
        outbox.results += unsentResults
        unsentResults = []
        var actions: [Action] = [.send(.ready(sessionID: sessionID, held: held, draining: draining))]
        // READY says it already; the message is for coordinators that do not read that field.
        if draining { actions.append(.send(.draining(stopping: stopDeadline != nil))) }
        return actions + [.welcomed(sessionID: sessionID, peerID: peerID, held: held.count, resent: resent)]
    }

    /// The lease ended (docs/scheduling.md, "Leases"): every running attempt that holds a
    /// cluster-wide category, or whose code holds or waits for one, is stopped at once: the
    /// coordinator may soon grant the category to someone else. Others carry on; nothing
    /// new starts until the lease is renewed.
    private mutating func leaseEnded(reason: String) -> [Action] {
        #if DELIBERATE_BUGS
            if mutations.contains(.ignoreLease) { return [.leaseEnded(reason: reason, stopped: 0)] }
        #endif
        // Attempts that stopping cancelled already are killed too: their processes may be in
        // their grace (docs/scheduling.md, "Leases"); their results stay unreported.
        let doomed = running.filter { id, attempt in
            V.holdsCategories(attempt.order) || locks.values.contains { $0.attemptID == id }
        }
        .keys.sorted()
        for id in doomed { running[id]?.killedByLease = true }
        return [.leaseEnded(reason: reason, stopped: doomed.count)]
            + doomed.map { .kill(attemptID: $0, reason: reason) }
    }

    private mutating func accept(_ orders: [V.Order]) -> [Action] {
        // While stopping, the coordinator sent these before it saw `draining`: they are not
        // run, and the final `disconnect` tells it every unreported attempt is lost.
        guard stopDeadline == nil else {
            return orders.map { .ignored(attemptID: V.attemptID(of: $0), reason: "the worker is stopping") }
        }
        var ignored: [Action] = []
        for order in orders {
            let id = V.attemptID(of: order)
            if running[id] != nil || waiting.contains(where: { V.attemptID(of: $0) == id }) {
                ignored.append(.ignored(attemptID: id, reason: "a duplicate of an attempt held here"))
            } else if ended.contains(V.identity(of: order)) {
                ignored.append(.ignored(attemptID: id, reason: "a duplicate of an attempt that ended here"))
            } else {
                waiting.append(order)
            }
        }
        return ignored
    }

    private mutating func cancel(_ attemptID: UInt64, _ cancellation: V.Cancellation, now: Timestamp) -> [Action] {
        if running[attemptID] != nil { return [.cancel(attemptID: attemptID, cancellation)] }
        guard let index = waiting.firstIndex(where: { V.attemptID(of: $0) == attemptID }) else { return [] }
        #if DELIBERATE_BUGS
            if mutations.contains(.startCancelledWaiting) { return [] }
        #endif
        let order = waiting.remove(at: index)
        remember(V.identity(of: order))
        report(Report(order: order, start: nil, result: V.cancelledBeforeStart(order, cancellation, at: now)))
        return []
    }

    /// Whether attempts may start at `now`: the lease must still run then, whether or not a
    /// tick has seen it end.
    private func canStart(now: Timestamp) -> Bool {
        session.isReady && session.holdsLease && session.holdsLease(at: now) && !holdingForAdoption
            && stopDeadline == nil
    }

    /// Starts waiting attempts, oldest first, while slots are free.
    private mutating func startWhatFits(now: Timestamp) -> [Action] {
        var actions: [Action] = []
        while canStart(now: now), running.count < settings.slots, !waiting.isEmpty {
            let order = waiting.removeFirst()
            running[V.attemptID(of: order)] = Running(order: order)
            actions.append(.start(order))
        }
        return actions
    }

    private mutating func remember(_ identity: V.Identity) {
        guard ended.insert(identity).inserted else { return }
        endedOrder.append(identity)
        if endedOrder.count > Self.rememberedEndings { ended.remove(endedOrder.removeFirst()) }
    }

    private mutating func report(_ report: Report) {
        if session.isReady { outbox.results.append(report) } else { unsentResults.append(report) }
    }

    private mutating func sendLock(_ message: Message) {
        if session.isReady { outbox.locks.append(message) } else { unsentLocks.append(message) }
    }
}
