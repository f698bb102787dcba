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
        var outcomeCode: CancellationReason.Code?
        var children: [String: ChildRecord] = [:]
        var cancels: [(path: String, reason: CancellationReason)] = []
        var additions: [(into: String, children: [ChildSpec])] = []
    }

    var groups: [String: Group] = [:]
    var lastTokens: [String: UInt64] = [:]
    /// Group outcomes the journal was asked to change: (group, before, after).
    var overwrittenOutcomes: [(String, GroupPhase, GroupPhase)] = []
    /// Worker-local grants not released: "attempt/request" → the grant.
    var localLocks: [String: LocalLockRecord] = [:]
    var sequence: UInt64 = 0

    mutating func absorb(_ record: JournalRecord) {
        switch record {
        case .submitted(let id, let spec, _, let at):
            sequence += 1
            groups[id] = Group(spec: spec, sequence: sequence, submittedAt: at)
        case .dispatched(let child), .finished(let child):
            groups[child.group]?.children[child.path] = child
            for (category, token) in child.tokens { lastTokens[category] = max(lastTokens[category] ?? 0, token) }
        case .groupFinished(let id, let phase, let reason, let code, let at):
            // A journaled outcome is final (the invariants check it never changes).
            if let earlier = groups[id]?.outcome, earlier.0 != phase {
                overwrittenOutcomes.append((id, earlier.0, phase))
            }
            groups[id]?.outcome = (phase, reason, at)
            groups[id]?.outcomeCode = code
        case .cancelRequested(let group, let path, let reason, _):
            groups[group]?.cancels.append((path, reason))
        case .childrenAdded(let group, let into, let children, _):
            groups[group]?.additions.append((into, children))
        case .localLock(.granted(let grant)):
            localLocks["\(grant.attemptID)/\(grant.request)"] = grant
            for (category, token) in grant.tokens { lastTokens[category] = max(lastTokens[category] ?? 0, token) }
        case .localLock(.released(let attemptID, let request)):
            localLocks["\(attemptID)/\(request)"] = nil
        }
    }

    func restoredGroups() -> [RestoredGroup] {
        groups.keys.sorted().map { id in
            let group = groups[id]!
            var restored = RestoredGroup(
                id: id, spec: group.spec, sequence: group.sequence, submittedAt: group.submittedAt,
                outcome: group.outcome.map { ($0.0, $0.1, $0.2) },
                children: group.children.keys.sorted().map { group.children[$0]! }, cancels: group.cancels,
                localLocks: localLocks.keys.sorted().compactMap { localLocks[$0] }.filter { $0.group == id },
                outcomeCode: group.outcomeCode)
            restored.additions = group.additions
            return restored
        }
    }
}

extension Simulation {
    static let restartGrace: Duration = .seconds(10)

    func schedulerConfiguration() -> SchedulerConfiguration {
        var configuration = SchedulerConfiguration()
        configuration.prefetch = 2
        configuration.shortAttempt = .milliseconds(2)
        configuration.heartbeatInterval = Self.heartbeat
        configuration.liveness = Self.liveness
        configuration.tokenFloor = epoch << 32
        configuration.lockLimits = Self.configuredLimits
        configuration.priorityAging = .seconds(5)
        configuration.randomSeed = configuration.randomSeed ^ epoch
        #if DELIBERATE_BUGS
            if let mutation = self.configuration.mutation?.schedulerMutation { configuration.mutations = [mutation] }
        #endif
        return configuration
    }

    mutating func startCoordinator() {
        var scheduler = Scheduler(configuration: schedulerConfiguration())
        scheduler.emitsRecords = true
        // As with metrics on: the observation bookkeeping runs (and is checked) under every fault.
        scheduler.observes = true
        self.scheduler = scheduler
    }

    mutating func crashCoordinator() {
        log("FAULT coordinator crash (epoch \(epoch))")
        // A restarted coordinator forgets operator drains (they are not journaled).
        memory = CoordinatorMemory(scheduler: nil, epoch: epoch)
        // Its connections break (a deposed leader's stay): what was on the wire is gone, and
        // each client's socket monitor sees its connection drop.
        let deposedBelow = deposed?.connectionsBelow ?? 0
        network.removeAll { $0.message.connection >= deposedBelow }
        for client in clients.indices
        where clients[client].connection.map({ $0 >= deposedBelow }) ?? false {
            nextConnection += 1
            clients[client].connection = nextConnection
            clients[client].disconnected = true
        }
    }

    /// A coordinator serves from the journal with the next epoch: the one that crashed,
    /// started again, or a standby that took the lease.
    mutating func restartCoordinator(as what: String = "restart coordinator") {
        let next = lease.epoch + 1
        lease = SimLease(now: now)
        lease.epoch = next
        epoch = next
        log("\(what) (epoch \(epoch))")
        note(what == "restart coordinator" ? "coordinator restart" : "standby takeover")
        var scheduler = Scheduler(configuration: schedulerConfiguration())
        scheduler.emitsRecords = true
        // As with metrics on: the observation bookkeeping runs (and is checked) under every fault.
        scheduler.observes = true
        let actions = scheduler.restore(
            journal.restoredGroups(), lastTokens: journal.lastTokens, grace: Self.restartGrace, now: now)
        self.scheduler = scheduler
        // Outcomes the restore made (cancels applied again) are new to the journal.
        for case .record(.finished) in actions { note("outcome journaled at restore") }
        apply(actions)
        checkRestored()
    }

    /// Carries out the scheduler's actions: records first (the journal commits before the
    /// turn's messages leave), then messages.
    mutating func apply(_ actions: [SchedulerAction]) {
        if actingDeposed, !deposedMayCommit(actions) { return }
        for case .record(let record) in actions {
            journal.absorb(record)
            checkRecord(record)
        }
        if let (group, before, after) = journal.overwrittenOutcomes.first {
            fail(.oneOutcome, "the journal's outcome of group \(group) changed from \(before) to \(after)")
        }
        for action in actions {
            switch action {
            case .dispatch(let session, let order):
                note("dispatch")
                checkDispatch(order)
                if let peer = sessions[session], operatorDrained.contains(peer.worker) {
                    fail(
                        .noDispatchToDrained,
                        "\(order.ref) dispatched to session \(session) of w\(peer.worker), which an operator drained")
                }
                if let peer = sessions[session] { send(.dispatch(peer.connection, order), worker: peer.worker) }
            case .cancel(let session, let ref, let reason):
                if let peer = sessions[session] { send(.cancel(peer.connection, ref, reason), worker: peer.worker) }
            case .groupFinished(let group, let phase, let reason):
                log("group \(group) \(phase)")
                checkGroupFinished(group, phase)
                notifyWatchers(of: group, phase, reason: reason)
            case .sessionLost(let session, let loss):
                log("session lost \(session) \(loss)")
                if let peer = sessions.removeValue(forKey: session) { routes[peer.connection] = nil }
            case .grant(let session, let request, let tokens):
                if let peer = sessions[session] {
                    send(.lockGrant(peer.connection, request: request, tokens: tokens), worker: peer.worker)
                }
            case .deny(let session, let request, _, let reason):
                log("deny #\(request) to \(session): \(reason)")
                if let peer = sessions[session] {
                    send(.lockDeny(peer.connection, request: request), worker: peer.worker)
                }
            case .childChanged, .record:
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

    /// The coordinator's shell: a HELLO on a new connection gets a WELCOME and a session; a
    /// READY joins the worker to the scheduler (its answer, the cancels of what it does not
    /// adopt and new dispatches, follows the WELCOME); anything else on a connection the
    /// coordinator does not know is answered `forgotten` (`HANDSHAKE_REQUIRED`).
    mutating func coordinatorReceive(_ message: Message, from worker: Int) {
        let connection = message.connection
        if case .hello = message {
            guard hellosSeen.insert(connection).inserted else { return }
            let session = SessionID(nextSession)
            nextSession += 1
            routes[connection] = session
            sessions[session] = (worker, connection)
            send(.welcome(connection), worker: worker)
            return
        }
        guard let session = routes[connection] else {
            // A result sent on a connection an earlier incarnation knew: accepted if it names
            // an orphan (the coordinator's `orphanFinished`).
            if case .finished(_, let ref, let outcome, let startedAt, let finishedAt) = message, let scheduler,
                scheduler.orphanCount > 0
            {
                withScheduler("orphan result \(ref)", expected: [.notFound, .superseded]) {
                    scheduler, now throws(SchedulerError) in
                    try scheduler.orphanFinished(
                        ref, outcome: outcome, startedAt: startedAt, finishedAt: finishedAt, now: now)
                }
            }
            return send(.forgotten(connection), worker: worker)
        }
        switch message {
        case .ready(_, let running, let started, let draining):
            let slots = workers[worker].slots
            withScheduler("ready") { scheduler, now in
                scheduler.workerReady(
                    session, name: "w\(worker)", host: "sim", labels: [], slots: slots, kinds: [Self.kind],
                    running: running, started: started, draining: draining, now: now)
            }
        case .heartbeat(_, let sequence):
            scheduler?.workerHeard(session, now: now)
            send(.heartbeatAck(connection, sequence: sequence), worker: worker)
        case .started(_, let ref):
            withScheduler("started \(ref)", expected: [.superseded]) { scheduler, now throws(SchedulerError) in
                try scheduler.attemptStarted(ref, worker: session, now: now)
            }
            // A running child sometimes grows its group, or cancels it, as a shell child's
            // `cohort add` / `cohort cancel "$COHORT_GROUP"` with its attempt token would.
            switch actingDeposed ? -1 : random.int(0...29) {
            case 0...3: childGrowsGroup(ref, worker: session)
            case 4: childCancelsGroup(ref, worker: session)
            default: break
            }
        case .finished(_, let ref, let outcome, let startedAt, let finishedAt):
            var accepted = false
            withScheduler("result \(ref)", expected: [.superseded]) { scheduler, now throws(SchedulerError) in
                let actions = try scheduler.attemptFinished(
                    ref, outcome: outcome, worker: session, startedAt: startedAt, finishedAt: finishedAt, now: now)
                accepted = true
                return actions
            }
            if accepted, !deposedFenced, case .succeeded = outcome { checkRepeatRun(ref) }
            if accepted, !deposedFenced, workers[worker].resent.contains(ref.id.rawValue) {
                note("result sent again accepted")
            }
        case .lockRequest(_, let request):
            withScheduler("lock request \(request.requestID)") { scheduler, now in
                scheduler.lockRequested(
                    request.requestID, by: session, for: request.ref, categories: request.categories, now: now)
            }
        case .lockWithdraw(_, let requestID):
            withScheduler("lock withdraw \(requestID)") { scheduler, now in
                scheduler.lockWithdrawn(requestID, by: session, now: now)
            }
        case .lockRelease(_, let requestID):
            withScheduler("lock release \(requestID)") { scheduler, now in
                scheduler.lockReleased(requestID, by: session, now: now)
            }
        case .draining:
            withScheduler("draining") { scheduler, now in scheduler.workerDraining(session, now: now) }
        case .goodbye:
            // It stopped what it ran before it left: handed back, at no cost.
            routes[connection] = nil
            sessions[session] = nil
            withScheduler("goodbye") { scheduler, now in
                scheduler.workerLost(session, reason: "it disconnected", handedBack: true, now: now)
            }
        case .hello, .welcome, .heartbeatAck, .forgotten, .notLeader, .dispatch, .cancel, .lockGrant, .lockDeny,
            .clientHello,
            .request, .clientWelcome, .reply:
            break
        }
    }
}

extension Simulation {
    /// A running attempt adds one or two children to its own group — the top level, or the
    /// nested group it is in, usually not last in document order, so every later node is
    /// renumbered (Scheduler+Growing.swift) — sometimes after itself, as the coordinator does
    /// for a token-bearing `cohort add --into`.
    mutating func childGrowsGroup(_ ref: AttemptRef, worker session: SessionID) {
        guard var scheduler, scheduler.isRunning(ref, on: session),
            let spec = try? scheduler.runningSpec(ref.group)
        else { return }
        let finishedBefore = checker.groupOutcomes[ref.group] != nil
        var names = ref.path.split(separator: "/").map(String.init)
        let name = names.removeLast()
        // Into its own nested group (two additions in three) when the running spec has it as a
        // group (a fan-out's procedures are in a group the coordinator made: those add to the
        // top level). Decided without drawing from `random`.
        let own = names.joined(separator: "/")
        let into = grownChildren % 3 == 0 || spec.children(at: own) == nil ? "" : own
        var children: [ChildSpec] = []
        for _ in 0..<random.int(1...2) {
            grownChildren += 1
            let after: [String]
            if own.isEmpty {
                after = random.int(0...1) == 0 ? [name] : []
            } else {
                after = into == own && grownChildren % 2 == 0 ? [name] : []
            }
            children.append(ChildSpec("grown\(grownChildren)", run: Self.kind, after: after))
        }
        guard let grown = try? spec.adding(children, into: into) else {
            return fail(.schedulerAccepts, "children added by \(ref) are not a valid addition")
        }
        do {
            let (paths, actions) = try scheduler.addChildren(
                ref.group, children: children, into: into, grown: grown, now: now)
            self.scheduler = scheduler
            if finishedBefore {
                fail(.nothingAddedToFinished, "\(paths) added to \(ref.group), which had finished")
            }
            checker.known[ref.group] = grown.flattened()
            note("child adds children")
            log("\(ref) added \(paths) to \(ref.group)")
            apply(actions)
        } catch {
            log("\(ref) could not add to \(ref.group): \(error.message)")
            note("child's addition refused")
            if !finishedBefore, error.code != .invalidRequest {
                fail(.schedulerAccepts, "adding to \(ref.group) refused: \(error.message)")
            }
        }
        answerSettledCancels()
    }

    /// A running attempt cancels its own group (`cohort cancel "$COHORT_GROUP"` with its token).
    mutating func childCancelsGroup(_ ref: AttemptRef, worker session: SessionID) {
        guard scheduler?.isRunning(ref, on: session) == true else { return }
        note("child cancels its group")
        withScheduler("cancel \(ref.group) by \(ref)") { scheduler, now throws(SchedulerError) in
            try scheduler.cancelGroup(
                ref.group, reason: .cancelledByChild(path: ref.path, attempt: ref.attempt, reason: "sim"), now: now)
        }
    }
}
