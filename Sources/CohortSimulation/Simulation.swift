// CohortSimulation: a deterministic simulation of a Cohort cluster (issue 11, first increment).
//
// One coordinator (CohortCore's `Scheduler` plus an in-memory journal of exactly the
// `.record(...)` actions it emits), N simulated workers and M simulated clients run against
// simulated time over a simulated network, all driven by one seeded generator. Every event
// (a message delivered, time passing, a submit, a cancel, a fault) is one *step*; after every
// step the named invariants (``Invariant``) are checked. The same seed gives the same trace,
// byte for byte (``SimulationReport/traceHash``); a failure names the seed, the step, the
// invariant and the last events, and `cohort-simulate --seed S --steps N` replays it.
//
// What is modelled:
// - the coordinator: the real `Scheduler`; the journal is a value that absorbs the records
//   synchronously (a turn's records are "on disk" before its messages leave, as the real
//   `JournalWriter` guarantees); a crash drops the scheduler, every session and every message
//   in flight, and breaks every connection; a restart rebuilds it with `restore(...)` at a
//   larger epoch (`tokenFloor = epoch << 32`); its client-facing shell (``ClientShell``)
//   is modelled on `CoordinatorLoop+Clients` and runs its `WatchTable` and
//   `PendingCancels`: a submit is answered with its id once the group is journaled, a cancel once nothing it covers can still start (`hasUnconfirmedDispatches`),
//   a watch with a snapshot and then the group's end;
// - workers: the real `WorkerMachine` (slots, prefetch, lease, reconnecting, drain) around a
//   simulated engine: random durations, outcomes and outputs, timeouts, worker-local lock
//   requests of the attempts' code;
// - clients: the real `ClientSession` (CohortClientCore) on simulated time, over their own
//   connections (HELLO/WELCOME, `HANDSHAKE_REQUIRED`, reconnecting and sending again, request
//   deadlines, the watch probe); random group specs built in Swift (DAGs with `after`, nested
//   groups and sequences, `exclusive` at group and child level from three shared categories,
//   `inject`, `retry`, `timeout`), cancels of groups and children, `--id` submissions and
//   resubmissions (what the session failed is submitted again under its id), watches; the
//   invariants learn what a client was told when it receives it;
// - the network between the coordinator and every peer: delays, reordering across
//   connections (FIFO within one), duplicates, lost messages that break their connection,
//   partitions (of workers and clients) and heals;
// - faults: worker crash, restart, pause, drain; operator drains and undrains; coordinator crash and
//   restart from the journal; a leader change (Leadership.swift): the leader paused, shorter
//   or longer than its lease, the standby taking the lease with the next epoch while the
//   deposed leader keeps its memory and connections, and the deposed leader fenced when it
//   resumes, by its clock or (its clock stopped) by the journal's epoch check.
//
// What is not (see docs/simulation.md): status/result queries, watch
// events of single children, spec parsing (a submission names the spec the client built), the
// real sockets, disk and processes.
import CohortCore
import CohortSpec
import Foundation

/// What to simulate.
public struct SimulationConfiguration: Sendable {
    public var seed: UInt64
    /// Steps with faults and new work; then a quiet phase runs until every group finished.
    public var steps: Int
    public var workers: Int = 4
    public var clients: Int = 3
    /// Most unfinished groups at once (clients wait beyond it).
    public var maxActiveGroups: Int = 12
    /// Faults on (off: only the workload, a reliable network and no crashes).
    public var faults: Bool = true
    /// Whether the coordinator crashes (off: every other fault still happens).
    public var coordinatorCrashes = true
    /// Whether the leader is paused, sometimes past its lease so that the standby takes over
    /// (Leadership.swift).
    public var leaderChanges = true
    /// Simulated time the quiet phase may take before liveness fails.
    public var livenessBound: Duration = .seconds(900)
    /// Given every trace line as it happens (`cohort-simulate --trace` prints them); the
    /// library itself writes nothing to the terminal.
    public var onTrace: (@Sendable (String) -> Void)?
    /// A deliberate bug for tests that the invariants bite (never set outside tests).
    public var mutation: Mutation?

    public init(seed: UInt64, steps: Int) {
        self.seed = seed
        self.steps = steps
    }
}

/// Deliberate bugs in the simulated cluster, to show that an invariant catches each
/// (docs/simulation.md, "Bug classes"). The first two are the model's own (its leader and its
/// journal); the others switch on a deliberate bug in the real code, a ``WorkerMachine``
/// mutation or a ``SchedulerMutation``, and exist only in builds with the `DELIBERATE_BUGS`
/// condition (debug builds, and the test build of `scripts/test`).
public enum Mutation: String, Sendable, CaseIterable {
    /// A deposed leader neither checks its lease by its clock nor has its commits refused by
    /// the journal's epoch check: it serves until its next renewal finds the lease taken.
    case deposedLeaderServes
    /// The journal does not check a writer's epoch: a deposed leader whose clock stopped or
    /// ran slow commits until its next renewal (its clock check is still there).
    case unfencedJournal
    #if DELIBERATE_BUGS
        /// Workers ignore their lease: exclusive attempts of a cut-off worker keep running
        /// (``WorkerMachine/Mutation/ignoreLease``).
        case ignoreLease
        /// Workers start attempts even after they were told to cancel them (a prefetched
        /// attempt starts after its group was cancelled;
        /// ``WorkerMachine/Mutation/startCancelledWaiting``).
        case startCancelled
        /// ``SchedulerMutation/deadlockHolds``.
        case deadlockHolds
        /// ``SchedulerMutation/keepLostWorkerGrants``.
        case keepLostWorkerGrants
        /// ``SchedulerMutation/noTokenRaiseAfterRestart``.
        case noTokenRaiseAfterRestart
        /// ``SchedulerMutation/acceptSupersededResult``.
        case acceptSupersededResult

        /// The scheduler's deliberate bug this switches on, if it is one of the scheduler's.
        public var schedulerMutation: SchedulerMutation? { SchedulerMutation(rawValue: rawValue) }
    #endif
}

/// A named guarantee checked after every step.
public enum Invariant: String, Sendable, CaseIterable {
    case exclusiveHolders = "no-two-live-holders"
    case tokensIncrease = "fencing-tokens-increase"
    case noStartAfterCancelAck = "no-start-after-cancel-acknowledged"
    case noStartAfterCancelReceived = "no-start-after-cancel-received"
    case oneOutcome = "exactly-one-outcome"
    case outcomeOfCurrentAttempt = "outcome-of-current-attempt"
    case acceptedIsJournaled = "accepted-groups-journaled"
    case watchSeesOutcome = "watch-sees-the-outcome"
    case dependenciesFirst = "dependencies-finish-first"
    case injectedIsProducerOutput = "injected-input-is-producer-output"
    case liveness = "liveness"
    case schedulerAccepts = "scheduler-accepts-valid-requests"
    case noDispatchToDrained = "no-dispatch-to-drained"
    case boundedObservations = "bounded-observation-bookkeeping"
    case skippedNeverRan = "skipped-never-ran"
    case repeatBounded = "repeat-bounded"
    /// Children added to a group that had finished were accepted (docs/spec.md, "Growing
    /// groups"). Added children are checked like submitted ones by the other invariants
    /// (their group's known leaves grow with them), so a group finishing before them fails
    /// `exactly-one-outcome`.
    case nothingAddedToFinished = "nothing-added-to-a-finished-group"
    /// A map made other procedures than one per item of its producer's journaled list, in
    /// order, each with its item (docs/spec.md, "Fan-out at run time: map").
    case mapMakesItsList = "map-makes-one-procedure-per-item"
    /// More of a map's procedures were dispatched and unfinished at once than its
    /// `maxParallel`.
    case mapParallelBounded = "map-parallel-bounded"
}

/// An invariant that failed.
public struct SimulationFailure: Error, Sendable, CustomStringConvertible {
    public var seed: UInt64
    public var step: Int
    public var invariant: Invariant
    public var message: String
    /// The last events, oldest first.
    public var lastEvents: [String]

    public var description: String {
        var text = "invariant \(invariant.rawValue) failed at step \(step) (seed \(seed)): \(message)\n"
        text +=
            "replay: scripts/simulate --seed \(seed) with the run's --steps, --workers and --clients\nlast events:\n"
        for line in lastEvents { text += "  \(line)\n" }
        return text
    }
}

/// What a run did.
public struct SimulationReport: Sendable {
    public var seed: UInt64
    /// Every step, the quiet phase's included.
    public var steps: Int
    /// FNV-1a of the whole trace.
    public var traceHash: UInt64
    /// Fault kind → how many were injected.
    public var faults: [String: Int]
    /// Event kind → how many happened (submits, dispatches, …).
    public var events: [String: Int]
    public var groupsAccepted: Int
    public var simulatedTime: Duration
    public var failure: SimulationFailure?
}

/// One run of the simulated cluster; see the file's header.
public struct Simulation {
    public let configuration: SimulationConfiguration
    var random: SplitMix64
    var now = Timestamp(nanosecondsSinceEpoch: 1_000_000_000_000)
    var step = 0
    var trace = Trace()
    var faults: [String: Int] = [:]
    var events: [String: Int] = [:]
    var failure: SimulationFailure?

    // The coordinator: the leader's memory (or the deposed leader's, while it acts), the
    // journal and the lease in the database, and a deposed leader (Leadership.swift).
    var scheduler: Scheduler?
    var epoch: UInt64 = 1
    var journal = SimJournal()
    var lease: SimLease
    var leaderPause: LeaderPause?
    var deposed: DeposedLeader?
    /// The coordinator's fields are the deposed leader's (``actAsDeposed(_:)``).
    var actingDeposed = false
    /// The journal refused the deposed leader's turn: nothing more of it is sent.
    var deposedFenced = false
    /// The leader stepped down and nobody leads until the lease expires.
    var awaitingLeader = false
    /// The endpoint of the process that leads (0 or 1), and from which connection on each
    /// endpoint led (``endpoint(of:)``).
    var leaderEndpoint = 0
    var endpointChanges: [(from: UInt64, endpoint: Int)] = [(0, 0)]
    /// Live sessions → the worker and its connection.
    var sessions: [SessionID: (worker: Int, connection: UInt64)] = [:]
    /// The coordinator's routing table: connection → session.
    var routes: [UInt64: SessionID] = [:]
    /// Workers an operator drained (by name: every session of theirs is drained); a second
    /// operator fault on one undrains it, and the quiet phase undrains them all.
    var operatorDrained: Set<Int> = []
    /// The next session id: each coordinator process numbers its sessions from 1, as
    /// `PeerTable` does (a deposed leader and the new one reuse ids at the same time).
    var nextSession: UInt64 = 1
    /// Connections whose HELLO was answered (a duplicated HELLO is answered once).
    var hellosSeen: Set<UInt64> = []
    /// The coordinator's client sessions, watches and cancels waiting to be acknowledged.
    var shell = ClientShell()
    /// Submitted documents → the spec each names (the model sends specs by name).
    var documents: [String: GroupSpec] = [:]

    // Workers, clients, network.
    var workers: [SimWorker] = []
    var clients: [SimClient] = []
    var network: [Envelope] = []
    var nextEnvelope: UInt64 = 0
    var nextConnection: UInt64 = 0

    // What the invariants remember.
    var checker = Checker()
    /// Children running attempts added to their groups so far (names `grownN`).
    var grownChildren = 0
    /// Observations drained from the scheduler (its metrics bookkeeping runs under every fault).
    var observations = 0

    static let heartbeat: Duration = .seconds(1)
    static let liveness = 3
    static let kind = "sim"
    static let categories = ["db", "repo", "prod"]
    /// Counting locks: `repo` is declared with limit 2 by every generated spec (so no
    /// submission disagrees with the limit in force), `prod` has limit 3 from the
    /// coordinator's configuration; `db` stays an exclusive lock (limit 1).
    static let declaredLimits = ["repo": 2]
    static let configuredLimits = ["prod": 3]

    /// How many live holders `category` may have: its configured limit, else its declared
    /// one, else 1.
    static func limit(of category: String) -> Int {
        configuredLimits[category] ?? declaredLimits[category] ?? 1
    }

    public init(_ configuration: SimulationConfiguration) {
        self.configuration = configuration
        self.random = SplitMix64(seed: configuration.seed)
        self.lease = SimLease(now: now)
        for index in 0..<configuration.workers {
            workers.append(
                SimWorker(index: index, slots: random.int(1...3), now: now, mutation: configuration.mutation))
        }
        for index in 0..<configuration.clients { clients.append(SimClient(index: index)) }
        startCoordinator()
        startClients()
    }

    var inFaultPhase: Bool { configuration.faults && step < configuration.steps }

    /// Runs every step, the quiet phase's included, until done or an invariant fails.
    public mutating func run() -> SimulationReport {
        while step < configuration.steps, failure == nil { runStep() }
        if failure == nil { quiet() }
        return report()
    }

    public func report() -> SimulationReport {
        SimulationReport(
            seed: configuration.seed, steps: step, traceHash: trace.hash, faults: faults, events: events,
            groupsAccepted: checker.accepted.count,
            simulatedTime: now - Timestamp(nanosecondsSinceEpoch: 1_000_000_000_000),
            failure: failure)
    }

    /// Faults stop, crashed peers come back, partitions heal; then every accepted group must
    /// finish within ``SimulationConfiguration/livenessBound`` of simulated time.
    mutating func quiet() {
        let start = now
        log("quiet: faults stop")
        // Paused coordinators resume at the next turn of time.
        leaderPause?.until = now
        if deposed?.pausedUntil != nil { deposed?.pausedUntil = now }
        if scheduler == nil, !awaitingLeader { restartCoordinator() }
        for index in clients.indices { clients[index].partitioned = false }
        for index in workers.indices {
            workers[index].partitioned = false
            if workers[index].paused { resumeWorker(index) }
            if !workers[index].up { restartWorker(index) }
        }
        // The operator undrains every worker it drained: each takes work again.
        for index in operatorDrained.sorted() {
            count("operator undrain")
            log("quiet: operator undrains w\(index)")
            operatorDrained.remove(index)
            withScheduler("undrain w\(index)") { scheduler, now throws(SchedulerError) in
                try scheduler.workerUndrained("w\(index)", now: now)
            }
        }
        operatorDrained = []
        while failure == nil {
            // A worker that finished its drain in the quiet phase comes back (its host runs it again).
            for index in workers.indices where !workers[index].up { restartWorker(index) }
            let unfinished = checker.known.keys.filter { checker.groupOutcomes[$0] == nil }
            // Every submission answered, every cancel acknowledged, every watch ended.
            let waiting = clients.contains { !$0.unaccepted.isEmpty || !$0.calls.isEmpty }
            if unfinished.isEmpty, !waiting { return }
            if now - start > configuration.livenessBound {
                let stuck = clients.filter { !$0.unaccepted.isEmpty || !$0.calls.isEmpty }.map { client in
                    "client c\(client.index) (\(client.session.phase)): open \(client.calls.keys.sorted().map { "#\($0) \(client.calls[$0]!)" }), unsent \(client.unaccepted.map(\.id))"
                }
                fail(
                    .liveness,
                    stuck.joined(separator: "; ")
                        + "; \(unfinished.count) groups unfinished \(configuration.livenessBound) after faults stopped: "
                        + unfinished.sorted().prefix(5).joined(separator: ", ")
                        + (scheduler.map { s in
                            " — "
                                + unfinished.sorted().prefix(4).map { id in
                                    ((try? s.groupSnapshot(id))?.children ?? []).filter { !$0.phase.isFinished }
                                        .map { "\($0.path):\($0.phase)(\($0.waitingReason ?? ""))" }.joined(
                                            separator: " ")
                                }.joined(separator: " | ")
                                + " — locks: " + Self.describeLocks(s)
                        } ?? ""))
                return
            }
            runStep()
        }
    }

    /// The cluster's lock table, `db: c0-8/ (waiting: c1-15/c3)`: a deadlock shows as a cycle.
    static func describeLocks(_ scheduler: Scheduler) -> String {
        func name(_ owner: LockOwner) -> String { "\(owner.group)/\(owner.child)" }
        return scheduler.locks.snapshot().filter { $0.holder != nil || !$0.waiters.isEmpty }.map { lock in
            "\(lock.category): \(lock.holder.map(name) ?? "-")"
                + (lock.waiters.isEmpty ? "" : " (waiting: \(lock.waiters.map(name).joined(separator: ", ")))")
        }.joined(separator: "; ")
    }

    /// One event, then the invariants.
    mutating func runStep() {
        step += 1
        let roll = random.int(0...999)
        let deliverable = deliverableMessages()
        switch roll {
        case 0..<450 where !deliverable.isEmpty:
            deliver(network.remove(at: deliverable[random.int(0...(deliverable.count - 1))]))
        case 450..<520 where inFaultPhase:
            submitSomething()
        case 520..<540 where inFaultPhase:
            cancelSomething()
        case 540..<548 where inFaultPhase:
            resubmitSomething()
        case 548..<560 where inFaultPhase:
            injectFault()
        case 560..<620:
            advance(by: .milliseconds(Int64(random.int(1...50))))
        default:
            if !inFaultPhase { retryUnaccepted() }
            advance(by: .milliseconds(Int64(random.int(1...400))))
        }
        // The coordinator drains the scheduler's observations (metrics) every turn.
        scheduler?.drainObservations { _ in observations += 1 }
        if failure == nil { checkAfterStep() }
    }

    /// Each direction of each worker's connection is FIFO (TCP): only the oldest message of a
    /// channel may be delivered; channels interleave in any order.
    func deliverableMessages() -> [Int] {
        var seen = Set<Int>()
        var deliverable: [Int] = []
        // Rarely true: a coordinator is paused.
        let somePaused = leaderPause != nil || deposed?.pausedUntil != nil
        for index in network.indices {
            let peer: Int
            switch network[index].peer {
            case _
            where somePaused && network[index].message.toCoordinator
                && coordinatorPaused(for: network[index].message.connection):
                // A paused coordinator reads nothing.
                continue
            case .worker(let worker):
                guard !workers[worker].partitioned else { continue }
                // A paused worker reads nothing; what it sent before goes on.
                if workers[worker].paused, !network[index].message.toCoordinator { continue }
                peer = worker
            case .client(let client):
                guard !clients[client].partitioned else { continue }
                peer = workers.count + client
            }
            let channel = peer * 2 + (network[index].message.toCoordinator ? 1 : 0)
            if seen.insert(channel).inserted, network[index].deliverAt <= now { deliverable.append(index) }
        }
        return deliverable
    }

    mutating func count(_ fault: String) {
        faults[fault, default: 0] += 1
    }

    mutating func note(_ event: String) {
        events[event, default: 0] += 1
    }

    mutating func log(_ line: String) {
        let line = "\(step) \(now.nanosecondsSinceEpoch / 1_000_000) \(line)"
        configuration.onTrace?(line)
        trace.append(line)
    }

    mutating func fail(_ invariant: Invariant, _ message: String) {
        guard failure == nil else { return }
        log("FAIL \(invariant.rawValue): \(message)")
        failure = SimulationFailure(
            seed: configuration.seed, step: step, invariant: invariant, message: message, lastEvents: trace.last)
    }

    /// Time passes: workers heartbeat, check their leases and finish what is due; the
    /// coordinator's timers run.
    mutating func advance(by duration: Duration) {
        // What is due arrives before time moves on (in a random interleaving of channels).
        var budget = 64
        while budget > 0, failure == nil {
            let deliverable = deliverableMessages()
            guard !deliverable.isEmpty else { break }
            deliver(network.remove(at: deliverable[random.int(0...(deliverable.count - 1))]))
            budget -= 1
        }
        now = now + duration
        for index in workers.indices { workerTick(index) }
        for index in clients.indices { clientTick(index) }
        leaseTick()
        if var scheduler, leaderPause == nil {
            let actions = scheduler.tick(now: now)
            self.scheduler = scheduler
            apply(actions)
            answerSettledCancels()
        }
    }
}

/// The trace: a running FNV-1a hash of every line, and the last lines.
struct Trace {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    private var ring: [String] = []
    private var next = 0
    static let kept = 30

    mutating func append(_ line: String) {
        for byte in line.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        hash = (hash ^ 0x0A) &* 0x0000_0100_0000_01B3
        if ring.count < Self.kept {
            ring.append(line)
        } else {
            ring[next] = line
            next = (next + 1) % Self.kept
        }
    }

    var last: [String] { Array(ring[next...] + ring[..<next]) }
}
