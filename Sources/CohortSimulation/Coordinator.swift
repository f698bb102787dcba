import CohortCore
import CohortSpec
import Foundation

/// The coordinator's journal in memory: exactly the `.record` actions the scheduler emits,
/// kept as the SQLite journal keeps them (the latest record of each child, outcomes, cancels,
/// the largest token per category).
struct SimJournal {
    struct Group {
        var spec: GroupSpec
        var sequence: UInt64
        var submittedAt: Timestamp
        var outcome: (GroupPhase, String?, Timestamp)?
        var children: [String: ChildRecord] = [:]
        var cancels: [(path: String, reason: String)] = []
    }

    var groups: [String: Group] = [:]
    var lastTokens: [String: UInt64] = [:]
    var sequence: UInt64 = 0

    mutating func absorb(_ record: JournalRecord) {
        switch record {
        case .submitted(let id, let spec, _, let at):
            sequence += 1
            groups[id] = Group(spec: spec, sequence: sequence, submittedAt: at)
        case .dispatched(let child), .finished(let child):
            groups[child.group]?.children[child.path] = child
            for (category, token) in child.tokens { lastTokens[category] = max(lastTokens[category] ?? 0, token) }
        case .groupFinished(let id, let phase, let reason, let at):
            groups[id]?.outcome = (phase, reason, at)
        case .cancelRequested(let group, let path, let reason, _):
            groups[group]?.cancels.append((path, reason))
        case .localLock:
            break  // the simulated workers make no local lock requests
        }
    }

    func restoredGroups() -> [RestoredGroup] {
        groups.keys.sorted().map { id in
            let group = groups[id]!
            return RestoredGroup(
                id: id, spec: group.spec, sequence: group.sequence, submittedAt: group.submittedAt,
                outcome: group.outcome.map { ($0.0, $0.1, $0.2) },
                children: group.children.keys.sorted().map { group.children[$0]! }, cancels: group.cancels)
        }
    }
}

extension Simulation {
    static let restartGrace: Duration = .seconds(10)

    func schedulerConfiguration() -> SchedulerConfiguration {
        var configuration = SchedulerConfiguration()
        configuration.prefetch = 2
        configuration.heartbeatInterval = Self.heartbeat
        configuration.liveness = Self.liveness
        configuration.tokenFloor = epoch << 32
        configuration.randomSeed = configuration.randomSeed ^ epoch
        #if DEBUG
            if let mutation = self.configuration.mutation?.schedulerMutation { configuration.mutations = [mutation] }
        #endif
        return configuration
    }

    mutating func startCoordinator() {
        var scheduler = Scheduler(configuration: schedulerConfiguration())
        scheduler.emitsRecords = true
        self.scheduler = scheduler
    }

    mutating func crashCoordinator() {
        log("FAULT coordinator crash (epoch \(epoch))")
        scheduler = nil
        sessions = [:]
        pendingCancels = []
        // Connections break: what was on the wire is gone.
        network.removeAll()
    }

    mutating func restartCoordinator() {
        epoch += 1
        log("restart coordinator (epoch \(epoch))")
        note("coordinator restart")
        var scheduler = Scheduler(configuration: schedulerConfiguration())
        scheduler.emitsRecords = true
        let actions = scheduler.restore(
            journal.restoredGroups(), lastTokens: journal.lastTokens, grace: Self.restartGrace, now: now)
        self.scheduler = scheduler
        apply(actions)
        checkRestored()
    }

    /// Carries out the scheduler's actions: records first (the journal commits before the
    /// turn's messages leave), then messages.
    mutating func apply(_ actions: [SchedulerAction]) {
        for case .record(let record) in actions {
            journal.absorb(record)
            checkRecord(record)
        }
        for action in actions {
            switch action {
            case .dispatch(let session, let order):
                note("dispatch")
                checkDispatch(order)
                if let worker = sessions[session] { send(.dispatch(session, order), worker: worker) }
            case .cancel(let session, let ref, let reason):
                if let worker = sessions[session] { send(.cancel(session, ref, reason), worker: worker) }
            case .groupFinished(let group, let phase, _):
                log("group \(group) \(phase)")
                checkGroupFinished(group, phase)
            case .sessionLost(let session, let loss):
                log("session lost \(session) \(loss)")
                sessions[session] = nil
            case .grant, .deny, .childChanged, .record:
                break
            }
        }
    }

    /// Calls the scheduler; a refusal of something the model believes valid is a failure
    /// unless `expected` says the refusal is possible.
    mutating func withScheduler(
        _ what: String, expected: Set<SchedulerError.Code> = [],
        _ body: (inout Scheduler, Timestamp) throws(SchedulerError) -> [SchedulerAction]
    ) {
        guard var scheduler else { return }
        do {
            let actions = try body(&scheduler, now)
            self.scheduler = scheduler
            apply(actions)
        } catch {
            self.scheduler = scheduler
            log("refused \(what): \(error.message)")
            if !expected.contains(error.code) { fail(.schedulerAccepts, "\(what) refused: \(error.message)") }
        }
        answerSettledCancels()
    }

    mutating func coordinatorReceive(_ message: Message, from worker: Int) {
        switch message {
        case .hello(let connection, let running, let sentAt):
            guard hellosSeen.insert(connection).inserted else { return }
            let session = SessionID(nextSession)
            nextSession += 1
            sessions[session] = worker
            let slots = workers[worker].slots
            // The WELCOME first, then what the READY causes (cancels of the attempts not
            // adopted, dispatches): the worker holds what it had until that first answer
            // (`WorkerLoop`'s `resumeAfterAdoption`). A dispatch never precedes the WELCOME.
            send(.welcome(connection: connection, session), worker: worker)
            withScheduler("hello") { scheduler, now in
                scheduler.workerReady(
                    session, name: "w\(worker)", host: "sim", labels: [], slots: slots, kinds: [Self.kind],
                    running: running, now: now)
            }
            _ = sentAt
        case .heartbeat(let session, let sequence):
            guard sessions[session] == worker else { return send(.reconnect(session), worker: worker) }
            scheduler?.workerHeard(session, now: now)
            send(.heartbeatAck(session, sequence: sequence), worker: worker)
        case .started(let session, let ref):
            guard sessions[session] == worker else { return send(.reconnect(session), worker: worker) }
            withScheduler("started \(ref)", expected: [.superseded]) { scheduler, now throws(SchedulerError) in
                try scheduler.attemptStarted(ref, worker: session, now: now)
            }
        case .finished(let session, let ref, let outcome, let startedAt, let finishedAt):
            guard sessions[session] == worker else {
                // A result sent to an earlier incarnation: accepted if it names an orphan.
                if let scheduler, scheduler.orphanCount > 0 {
                    withScheduler("orphan result \(ref)", expected: [.notFound, .superseded]) {
                        scheduler, now throws(SchedulerError) in
                        try scheduler.orphanFinished(
                            ref, outcome: outcome, startedAt: startedAt, finishedAt: finishedAt, now: now)
                    }
                }
                return send(.reconnect(session), worker: worker)
            }
            withScheduler("result \(ref)", expected: [.superseded]) { scheduler, now throws(SchedulerError) in
                try scheduler.attemptFinished(
                    ref, outcome: outcome, worker: session, startedAt: startedAt, finishedAt: finishedAt, now: now)
            }
        default:
            break
        }
    }

    /// Acknowledges every cancel that no attempt can still escape (the coordinator's
    /// `answerSettledCancels`): from now on nothing it covers may start.
    mutating func answerSettledCancels() {
        guard let scheduler, !pendingCancels.isEmpty else { return }
        var still: [(group: String, path: String)] = []
        for cancel in pendingCancels {
            if scheduler.hasUnconfirmedDispatches(cancel.group, path: cancel.path) {
                still.append(cancel)
            } else {
                log("cancel acknowledged \(cancel.group)/\(cancel.path)")
                checker.acknowledgedCancels[cancel.group, default: []].append(cancel.path)
            }
        }
        pendingCancels = still
    }
}
