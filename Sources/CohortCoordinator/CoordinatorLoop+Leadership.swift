import CohortCore
import CohortJournal
import CohortWire
import Foundation
import ZeroMQ

/// A coordinator that takes part in leader election (``CoordinatorConfiguration/leadership``):
/// its lease, and what it does while it holds none.
///
/// A standby binds its endpoint and answers every message with a NOT_LEADER handshake error
/// naming the leader, and tries for the lease every lease/3 or 0.5 s, whichever is shorter (so
/// it leads soon after the lease expires). Once it holds the lease it loads the journal, with
/// the epoch the lease gave it (so its fencing tokens and attempt ids exceed every one
/// before), renews the lease (the load may have taken a while) and serves; its first prune
/// waits the usual interval. The leader renews every lease/3, measuring with a
/// monotonic clock from the start of its last successful renewal: when a renewal finds the
/// lease taken, when a write fails `deposed`, or when a lease has passed since its last
/// renewal, it stops at once, sends nothing more and the coordinator starts over as a standby.
///
/// A coordinator that does not stand by (no `--standby`, on a journal with a lease) holds the
/// lease all the same while it serves, so that its writes are fenced: it takes it right after
/// binding, before it reads a message, or refuses to serve (`locked`,
/// exit 75) when another coordinator holds it and renews it; a lease nobody renews (its
/// holder gone, such as its own killed previous run) it waits out, at most a lease and a try.
/// It renews like a leader, and once deposed the loop ends `deposed` (exit 75) instead of
/// standing by.
///
/// Not thread-safe: the loop thread's.
final class Leadership {
    let store: any LeaseJournalStore
    let settings: LeadershipSettings
    /// Whether it stands by for the lease (`--standby`), rather than refusing to start
    /// without it.
    let standsBy: Bool
    /// Stored with the lease and named in refusals: the advertised endpoint, else the bound one.
    var holder = ""

    enum Phase: Equatable {
        case standby
        case leading(epoch: UInt64)
    }
    var phase = Phase.standby
    /// When to try for the lease (standby) or renew it (leading) next.
    var nextTry = ContinuousClock.now
    /// Leading: the lease is this coordinator's at least until then (the start of the last
    /// successful renewal plus the lease).
    var validUntil = ContinuousClock.now
    /// The leader the lease names, for refusals; nil while none holds it.
    var leader: String?
    /// The last failure to reach the database, logged once until it works again.
    var lastProblem: String?

    /// Whether the coordinator was asked to stop (its task cancelled, SIGTERM): read while
    /// the loop thread waits outside the loop (``CoordinatorLoop/takeLeaseAlone(boundEndpoint:)``).
    let stopRequested: @Sendable () -> Bool

    init(
        store: any LeaseJournalStore, settings: LeadershipSettings, standsBy: Bool = true,
        stopRequested: @escaping @Sendable () -> Bool = { false }
    ) {
        self.store = store
        self.settings = settings
        self.standsBy = standsBy
        self.stopRequested = stopRequested
    }

    /// How often a leader renews the lease.
    var interval: Duration { settings.lease / 3 }
    /// How often a standby tries for it.
    var standbyInterval: Duration { min(settings.lease / 3, .milliseconds(500)) }

    var isLeading: Bool { phase != .standby }
}

extension CoordinatorLoop {
    /// Whether this coordinator waits for the lease (and refuses every peer).
    var isStandby: Bool { leadership?.phase == .standby }

    /// Right after binding: the holder's name, and a first try for the lease (a standby's).
    func startLeadership(boundEndpoint: String) throws(JournalError) {
        guard let leadership, leadership.standsBy else { return }
        leadership.holder = leadership.settings.advertise ?? boundEndpoint
        logger.info(
            "coordinator standing by for the journal's lease",
            metadata: ["holder": "\(leadership.holder)", "lease": "\(leadership.settings.lease)"])
        try checkLeadership()
    }

    /// Not standing by, right after binding and before reading a message: takes the lease and
    /// leads, or refuses to serve (`locked`) naming its holder. Whose the lease is is decided by
    /// watching it, not by its holder's name (two coordinators on `tcp://0.0.0.0:7400` on two
    /// hosts share one): a lease that is renewed (or taken) while this one tries has a live
    /// holder, and it refuses at once, within a renewal interval (lease/3) and a try; one that
    /// is not is its holder's last (a coordinator killed without giving it up, such as this
    /// one's previous run), and it tries until the lease expires and takes it, at most a lease
    /// and a try later. A failure worth trying again (`unreachable`: a connection lost, a
    /// lock the lease row was held by too long) is tried again for up to a lease. A stop
    /// (SIGTERM) while it waits ends it without the lease (`stopping`). Peers' messages wait in
    /// the socket meanwhile.
    func takeLeaseAlone(boundEndpoint: String) throws(JournalError) {
        guard let leadership, !leadership.standsBy else { return }
        leadership.holder = leadership.settings.advertise ?? boundEndpoint
        logger.info(
            "coordinator taking the journal's lease",
            metadata: ["holder": "\(leadership.holder)", "lease": "\(leadership.settings.lease)"])
        // The lease as first seen held by another (or this name's previous run).
        var watched: (holder: String, expiresAt: Double)?
        var failingSince: ContinuousClock.Instant?
        while true {
            let start = ContinuousClock.now
            var acquired: UInt64?
            do throws(JournalError) {
                acquired = try leadership.store.acquireLease(holder: leadership.holder, ttl: leadership.settings.lease)
            } catch let error where error.code == .unreachable {
                try keepTrying(after: error, failingSince: &failingSince, start: start)
                if waitOrStop(leadership.standbyInterval) { return }
                continue
            }
            if let epoch = acquired {
                // Outside the retries: a load that fails ends the start as it always did (the
                // lease it took is this coordinator's own, not another's renewal).
                leadership.validUntil = start + leadership.settings.lease
                try lead(epoch: epoch)
                if let deposed { throw deposed }
                return
            }
            do throws(JournalError) {
                failingSince = nil
                let lease = try leadership.store.leaseHolder()
                // Released since the try: try again at once.
                guard let holder = lease.holder, !lease.expired else { continue }
                if let watched, watched.holder != holder || lease.expiresAt > watched.expiresAt {
                    throw JournalError(
                        .locked, path: leadership.store.location,
                        "another coordinator holds the journal's lease: \(holder) leads (the lease was renewed while this one watched it"
                            + (holder == leadership.holder ? ", under this coordinator's own name)" : ")")
                            + "; this coordinator was started without --standby and serves only alone. Start it "
                            + "with --standby to stand by beside the leader, or stop the other coordinator first")
                }
                if watched == nil {
                    watched = (holder, lease.expiresAt)
                    logger.notice(
                        "the journal's lease is held: refusing if it is renewed, else waiting for it to expire",
                        metadata: [
                            "holder": "\(holder)", "lease": "\(leadership.settings.lease)",
                            "ownName": "\(holder == leadership.holder)",
                        ])
                }
            } catch let error where error.code == .unreachable {
                try keepTrying(after: error, failingSince: &failingSince, start: start)
            }
            if waitOrStop(leadership.standbyInterval) { return }
        }
    }

    /// A failure worth trying again (`unreachable`) is noted and tried again for up to a
    /// lease from the first of a row of them; past it, it is thrown.
    private func keepTrying(
        after error: JournalError, failingSince: inout ContinuousClock.Instant?, start: ContinuousClock.Instant
    ) throws(JournalError) {
        let since = failingSince ?? start
        failingSince = since
        guard let leadership, since.duration(to: .now) < leadership.settings.lease else { throw error }
        noteLeadershipProblem(error)
    }

    /// Waits `duration` on the loop thread, in short slices; true (and the loop is stopping)
    /// as soon as a stop was asked for (SIGTERM), which the loop cannot read meanwhile.
    private func waitOrStop(_ duration: Duration) -> Bool {
        let until = ContinuousClock.now + duration
        while true {
            if leadership?.stopRequested() == true {
                logger.info("coordinator stopping before it took the journal's lease")
                stopping = true
                return true
            }
            let left = ContinuousClock.now.duration(to: until)
            guard left > .zero else { return false }
            Thread.sleep(forTimeInterval: min(left, .milliseconds(50)) / .seconds(1))
        }
    }

    /// Once a turn: a standby tries for the lease when due; a leader renews it when due and
    /// steps down when it cannot keep it.
    func checkLeadership() throws(JournalError) {
        guard let leadership, !stopping else { return }
        let start = ContinuousClock.now
        switch leadership.phase {
        case .standby:
            guard start >= leadership.nextTry else { return }
            leadership.nextTry = start + leadership.standbyInterval
            let acquired: UInt64?
            do {
                acquired = try leadership.store.acquireLease(holder: leadership.holder, ttl: leadership.settings.lease)
                leadership.lastProblem = nil
                if acquired == nil { leadership.leader = try leadership.store.leaseHolder().holder }
            } catch {
                // Tried again at the next interval.
                noteLeadershipProblem(error)
                return
            }
            if let acquired {
                leadership.validUntil = start + leadership.settings.lease
                try lead(epoch: acquired)
            }
        case .leading:
            guard stillLeading() else { return }
            guard start >= leadership.nextTry else { return }
            guard case .leading(let epoch) = leadership.phase else { return }
            do {
                if try leadership.store.renewLease(
                    epoch: epoch, holder: leadership.holder, ttl: leadership.settings.lease)
                {
                    leadership.lastProblem = nil
                    leadership.validUntil = start + leadership.settings.lease
                    leadership.nextTry = start + leadership.interval
                } else {
                    stepDown("another coordinator took the journal's lease")
                }
            } catch {
                // Tried again soon; the lease's own deadline decides when to give up.
                leadership.nextTry = ContinuousClock.now + min(leadership.interval, .milliseconds(200))
                noteLeadershipProblem(error)
                _ = stillLeading()
            }
        }
    }

    /// False (and the coordinator steps down) once a lease has passed since the last renewal:
    /// a standby may hold it by now. Checked before every turn's sends.
    @discardableResult
    func stillLeading() -> Bool {
        if deposed != nil { return false }
        guard let leadership, leadership.isLeading else { return true }
        guard ContinuousClock.now >= leadership.validUntil else { return true }
        stepDown("the lease was not renewed within \(leadership.settings.lease)")
        return false
    }

    /// How long the loop may wait before the lease needs it.
    func leadershipWait() -> Duration? {
        guard let leadership else { return nil }
        let now = ContinuousClock.now
        let next = leadership.isLeading ? min(leadership.nextTry, leadership.validUntil) : leadership.nextTry
        return max(now.duration(to: next), .zero)
    }

    /// Holding the lease of `epoch`: tokens above `epoch << 32`, the journal loaded, the lease
    /// renewed (the load may have taken longer than the lease), serving.
    private func lead(epoch: UInt64) throws(JournalError) {
        guard let leadership else { return }
        leadership.phase = .leading(epoch: epoch)
        leadership.leader = leadership.holder
        self.epoch = epoch
        scheduler = Self.makeScheduler(
            configuration, tokenFloor: max(configuration.tokenFloor, epoch << 32), observes: metrics != nil)
        logger.notice("leading: this coordinator holds the journal's lease", metadata: ["epoch": "\(epoch)"])
        let loading = ContinuousClock.now
        try restoreFromJournal()
        logger.info("journal loaded for leading", metadata: ["duration": "\(loading.duration(to: .now))"])
        // A takeover is no time for an hour's prune: the first comes an interval later.
        journalWriter?.lastPrune = clock.now()
        let renewal = ContinuousClock.now
        let kept: Bool
        do {
            kept = try leadership.store.renewLease(
                epoch: epoch, holder: leadership.holder, ttl: leadership.settings.lease)
        } catch {
            // Not serving without the lease: stand by again.
            stepDown("the lease could not be renewed after loading the journal: \(error)")
            return
        }
        guard kept else {
            stepDown("another coordinator took the journal's lease while this one loaded the journal")
            return
        }
        leadership.validUntil = renewal + leadership.settings.lease
        leadership.nextTry = renewal + leadership.interval
        metrics?.role(serving: true, epoch: epoch)
    }

    /// Stops serving at once: nothing held or queued is sent, nothing more is committed (the
    /// committer's writes fail `deposed` too), and the loop ends with `deposed`, after which
    /// the coordinator starts over as a standby (or, not standing by, stops: exit 75).
    func stepDown(_ reason: String) {
        guard deposed == nil else { return }
        logger.warning("stepping down: this coordinator no longer leads", metadata: ["reason": "\(reason)"])
        deposed = JournalError(.deposed, path: journalWriter?.journal.location ?? "", reason)
        // No longer leading: whatever runs after (the listening line, the metrics) says so.
        leadership?.phase = .standby
        metrics?.role(serving: false, epoch: 0)
        stopping = true
        _ = outbox.take()
        journalWriter?.held.removeAll()
    }

    /// A standby's answer to anything: NOT_LEADER, naming the leader.
    func refuseAsStandby(_ routing: RoutingID) {
        let leader = leadership?.leader.flatMap { $0 == leadership?.holder ? nil : $0 }
        let text =
            leader.map { "this coordinator is a standby; the leader is \($0)" }
            ?? "this coordinator is a standby and no coordinator leads yet"
        outbox.send(.error(HandshakeError(code: .notLeader, message: text, leader: leader)), to: routing)
    }

    /// At a graceful stop of the leader: the lease is given up, so a standby leads at once.
    func releaseLeadership() {
        guard let leadership, leadership.isLeading, deposed == nil, journalWriter?.failure == nil else { return }
        do {
            try leadership.store.releaseLease()
            logger.info("released the journal's lease")
        } catch {
            logger.warning("could not release the journal's lease", metadata: ["error": "\(error)"])
        }
    }

    private func noteLeadershipProblem(_ error: any Error) {
        let text = "\(error)"
        guard leadership?.lastProblem != text else { return }
        leadership?.lastProblem = text
        logger.warning("cannot reach the journal's lease", metadata: ["error": "\(text)"])
    }
}
