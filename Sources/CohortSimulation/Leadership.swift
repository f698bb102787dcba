import CohortCore
import Foundation

// A leader change (issue 16; docs/simulation.md, "Model"), modelled on
// `CoordinatorLoop+Leadership.swift` and the PostgreSQL journal's lease:
//
// - two coordinator processes, each with its endpoint and its memory; the journal is the
//   database's, and so is the lease: an epoch and an expiry, by the database's clock. The
//   leader renews it every lease/3 by its own clock and believes it holds it until a lease
//   after the start of its last renewal (never later than the database's expiry, which the
//   renewal sets a little after it started);
// - a fault pauses the leader (SIGSTOP, a VM that stalls, a host cut off from everyone), its
//   clock stopped too in one pause in three: it reads nothing and renews nothing, and part
//   of what it had sent waits until it resumes (it was paused in the middle of writing it
//   out, after its last check of the lease);
// - once the lease expires (the leader paused, or running late on a clock that stopped) the
//   standby takes it: the next epoch, the journal loaded, serving the connections made from
//   then on, while the old ones stay the deposed leader's (peers leave them as their timers
//   run out);
// - a deposed leader that resumes checks its lease first, as the loop does before it reads
//   anything, and steps down: its connections break, what waited for it is lost, and it
//   stands by (what reaches it is refused NOT_LEADER). One whose clock stopped believes it
//   still leads and acts on what waited for it — and every turn that would commit is
//   refused by the journal's epoch check, which is what fences it; it sends nothing of that
//   turn and steps down, and at the latest its next renewal finds the lease taken.
//
// The mutations `deposedLeaderServes` (both fences off) and `unfencedJournal` (the epoch
// check off) show that the invariants catch what a deposed leader would then do.

/// What one coordinator process holds in memory (the journal is not: it is the database's).
struct CoordinatorMemory {
    var scheduler: Scheduler?
    var epoch: UInt64
    var nextSession: UInt64 = 1
    var sessions: [SessionID: (worker: Int, connection: UInt64)] = [:]
    var routes: [UInt64: SessionID] = [:]
    var hellosSeen: Set<UInt64> = []
    var shell = ClientShell()
    var operatorDrained: Set<Int> = []
}

/// A leader the standby took the lease from while it was paused.
struct DeposedLeader {
    var memory: CoordinatorMemory
    /// The endpoint it serves (``Simulation/endpoint(of:)``).
    var endpoint: Int
    /// Its connections: every one numbered below this (the new leader's come after).
    var connectionsBelow: UInt64
    /// When it resumes; nil once it has.
    var pausedUntil: Timestamp?
    /// Until when it believes it holds the lease, by its own clock.
    var validUntil: Timestamp
    /// When it renews next, by its own clock (and finds the lease taken).
    var nextRenewal: Timestamp
}

/// The leader's pause.
struct LeaderPause {
    var from: Timestamp
    var until: Timestamp
    /// Its clock stops too: it does not count the pause.
    var clockFrozen: Bool

    /// Where its clock's deadline `instant` lies in simulated time.
    func shifted(_ instant: Timestamp) -> Timestamp { clockFrozen ? instant + (until - from) : instant }
}

/// The lease in the journal's database, and the leader's view of it.
struct SimLease {
    /// The epoch of the last coordinator that took it (or started on the journal).
    var epoch: UInt64 = 1
    /// When it expires, by the database's clock.
    var expiresAt: Timestamp
    /// Until when the leader believes it holds it (its last renewal's start plus a lease).
    var validUntil: Timestamp
    var nextRenewal: Timestamp

    init(now: Timestamp) {
        (expiresAt, validUntil, nextRenewal) = (
            now + Simulation.coordinatorLease, now + Simulation.coordinatorLease, now
        )
    }
}

extension Simulation {
    static let coordinatorLease: Duration = .seconds(4)

    /// The coordinator process whose fields ``scheduler``, ``sessions`` and the rest are:
    /// the leader's, or the deposed leader's while it acts (``actingDeposed``).
    var memory: CoordinatorMemory {
        get {
            CoordinatorMemory(
                scheduler: scheduler, epoch: epoch, nextSession: nextSession, sessions: sessions, routes: routes,
                hellosSeen: hellosSeen, shell: shell, operatorDrained: operatorDrained)
        }
        set {
            (scheduler, epoch, nextSession) = (newValue.scheduler, newValue.epoch, newValue.nextSession)
            (sessions, routes) = (newValue.sessions, newValue.routes)
            (hellosSeen, shell, operatorDrained) = (newValue.hellosSeen, newValue.shell, newValue.operatorDrained)
        }
    }

    /// The endpoint (0 or 1: the two coordinator processes) `connection` was made to: the
    /// leader's when it was made (a peer that reaches a standby is sent on with NOT_LEADER and
    /// connects again).
    func endpoint(of connection: UInt64) -> Int {
        // Loops without closures: a closure over `self` copies the whole simulation (this runs
        // for every message on the wire at every step).
        var endpoint = 0
        for change in endpointChanges where change.from <= connection { endpoint = change.endpoint }
        return endpoint
    }

    /// Whether a message on `connection` reaches the deposed leader.
    func reachesDeposed(_ connection: UInt64) -> Bool {
        guard let below = deposed?.connectionsBelow, connection < below else { return false }
        return endpoint(of: connection) == deposed?.endpoint
    }

    /// Whether a message on `connection` reaches a standby (the other endpoint than the
    /// leader's, the deposed leader's aside): it is refused NOT_LEADER.
    func reachesStandby(_ connection: UInt64) -> Bool {
        endpoint(of: connection) != leaderEndpoint && !reachesDeposed(connection)
    }

    /// Whether the coordinator a message to it on `connection` reaches is paused (it waits).
    func coordinatorPaused(for connection: UInt64) -> Bool {
        if reachesDeposed(connection) { return deposed?.pausedUntil != nil }
        return leaderPause != nil && !reachesStandby(connection)
    }

    /// The leader is paused (a fault), from 0.1 s to twice its lease, its clock stopped in
    /// one pause in three: past the lease's expiry, the standby takes over.
    mutating func pauseLeader() {
        guard scheduler != nil, leaderPause == nil, deposed == nil, !awaitingLeader else { return }
        let length: Duration = .milliseconds(Int64(random.int(100...8000)))
        let pause = LeaderPause(from: now, until: now + length, clockFrozen: random.int(0...2) == 0)
        leaderPause = pause
        count(length > Self.coordinatorLease ? "leader paused past its lease" : "leader paused")
        log("FAULT pause coordinator (epoch \(epoch)) for \(length)\(pause.clockFrozen ? ", its clock stopped" : "")")
        // Paused while it wrote out its last turn: part of it leaves when it resumes.
        for index in network.indices where !network[index].message.toCoordinator && random.int(0...1) == 0 {
            network[index].deliverAt = max(network[index].deliverAt, pause.until)
        }
    }

    /// Once a turn of time: the leader renews its lease when its clock says so (a lease that
    /// expired but that nobody took is still its own); the standby takes it once it expired
    /// (the leader paused, or running on a clock that stopped, or stepped down); paused
    /// coordinators resume; a deposed leader that acts checks its lease.
    mutating func leaseTick() {
        if scheduler != nil, leaderPause == nil, !awaitingLeader, now >= lease.nextRenewal {
            // The database runs the renewal a little after the leader sent it.
            lease.expiresAt = now + .milliseconds(Int64(random.int(0...20))) + Self.coordinatorLease
            lease.validUntil = now + Self.coordinatorLease
            lease.nextRenewal = now + Self.coordinatorLease / 3
        }
        if scheduler != nil || awaitingLeader, deposed == nil, now >= lease.expiresAt {
            takeOver()
        }
        if let pause = leaderPause, now >= pause.until {
            leaderPause = nil
            log("resume coordinator (epoch \(epoch))")
            if now >= pause.shifted(lease.validUntil) {
                stepDownLeader("its lease passed while it was paused")
            } else {
                lease.validUntil = pause.shifted(lease.validUntil)
                lease.nextRenewal = pause.shifted(lease.nextRenewal)
            }
        }
        guard var deposed else { return }
        if let until = deposed.pausedUntil {
            guard now >= until else { return }
            deposed.pausedUntil = nil
            self.deposed = deposed
            log("resume deposed coordinator (epoch \(deposed.memory.epoch))")
        }
        if configuration.mutation != .deposedLeaderServes, now >= deposed.validUntil {
            return stepDownDeposed("its lease passed by its clock")
        }
        if now >= deposed.nextRenewal {
            return stepDownDeposed("its renewal found the lease taken (epoch \(lease.epoch))")
        }
        // Its timers run.
        actAsDeposed { simulation in
            guard var scheduler = simulation.scheduler else { return }
            let actions = scheduler.tick(now: simulation.now)
            simulation.scheduler = scheduler
            simulation.apply(actions)
            simulation.answerSettledCancels()
        }
    }

    /// The standby takes the expired lease: the next epoch, the journal loaded, serving. A
    /// paused leader keeps its memory and its connections, deposed without knowing it.
    mutating func takeOver() {
        if !awaitingLeader {
            // Paused, or running on a clock that stopped: deposed without knowing it.
            let pause = leaderPause ?? LeaderPause(from: now, until: now, clockFrozen: false)
            deposed = DeposedLeader(
                memory: memory, endpoint: leaderEndpoint, connectionsBelow: nextConnection + 1,
                pausedUntil: leaderPause?.until, validUntil: pause.shifted(lease.validUntil),
                nextRenewal: pause.shifted(lease.nextRenewal))
            count(leaderPause != nil ? "standby takes over" : "standby takes over from a running leader")
            leaderPause = nil
        }
        awaitingLeader = false
        // The standby is the other process: connections made from now on are to it.
        leaderEndpoint = 1 - leaderEndpoint
        endpointChanges.append((nextConnection + 1, leaderEndpoint))
        memory = CoordinatorMemory(scheduler: nil, epoch: epoch)
        restartCoordinator(as: "standby takes the lease")
    }

    /// The leader steps down by its own clock before a standby took the lease: its process
    /// starts over as a standby, and nobody leads until the lease expires.
    mutating func stepDownLeader(_ reason: String) {
        log("coordinator (epoch \(epoch)) steps down: \(reason)")
        count("leader steps down")
        breakConnections(below: nextConnection + 1)
        memory = CoordinatorMemory(scheduler: nil, epoch: epoch)
        awaitingLeader = true
    }

    /// The deposed leader stops: it sends nothing more, what waited for it is lost, its
    /// connections break (its process starts over as a standby).
    mutating func stepDownDeposed(_ reason: String) {
        guard let deposed else { return }
        log("deposed coordinator (epoch \(deposed.memory.epoch)) steps down: \(reason)")
        note("deposed leader steps down")
        self.deposed = nil
        breakConnections(below: deposed.connectionsBelow)
    }

    /// A coordinator's process stopped serving the connections numbered below `bound`: what
    /// its peers sent on them is lost; a client's socket monitor sees its connection drop (a
    /// worker learns at its next message, answered `forgotten`).
    mutating func breakConnections(below bound: UInt64) {
        network.removeAll { $0.message.toCoordinator && $0.message.connection < bound }
        for client in clients.indices {
            guard let connection = clients[client].connection, connection < bound else { continue }
            nextConnection += 1
            clients[client].connection = nextConnection
            clients[client].disconnected = true
        }
    }

    /// Runs `body` as the deposed leader (its memory in the coordinator's fields); a turn the
    /// journal refused ends it.
    mutating func actAsDeposed(_ body: (inout Simulation) -> Void) {
        guard var deposed else { return }
        let leader = memory
        memory = deposed.memory
        actingDeposed = true
        deposedFenced = false
        body(&self)
        actingDeposed = false
        deposed.memory = memory
        memory = leader
        self.deposed = deposed
        if deposedFenced {
            deposedFenced = false
            stepDownDeposed("the journal refused its commit: its epoch \(deposed.memory.epoch) is over")
        }
    }

    /// Whether the deposed leader's turn may commit `actions`: the journal's epoch check
    /// refuses a turn with records (the mutation lets it through). A refused turn sends
    /// nothing (``send(_:peer:)``).
    mutating func deposedMayCommit(_ actions: [SchedulerAction]) -> Bool {
        guard actions.contains(where: { if case .record = $0 { true } else { false } }) else { return !deposedFenced }
        if configuration.mutation == .deposedLeaderServes || configuration.mutation == .unfencedJournal {
            note("deposed leader commits")
            return true
        }
        if !deposedFenced {
            log("the journal refuses the deposed coordinator's commit (epoch \(epoch) < \(lease.epoch))")
            note("deposed leader's commit refused")
        }
        deposedFenced = true
        return false
    }
}
