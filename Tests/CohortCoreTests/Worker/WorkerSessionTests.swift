import CohortCore
import Testing

/// The session state machine, driven with chosen instants: no sockets, no clocks.
struct WorkerSessionTests {
    typealias Instant = Timestamp

    let start = Timestamp.zero + .seconds(1_000)
    let settings = WorkerSession.Settings(
        heartbeatInterval: .seconds(1), heartbeatLiveness: 3, reconnectDelay: .seconds(1),
        maxReconnectDelay: .seconds(32))

    func at(_ seconds: Double) -> Instant { start + .seconds(seconds) }
    /// Exact instants, for sums of durations.
    func ms(_ milliseconds: Int64) -> Instant { start + .milliseconds(milliseconds) }

    func session() -> WorkerSession {
        let counter = Counter()
        return WorkerSession(settings: settings, now: start) { counter.next() }
    }

    func welcome(interval: Duration = .milliseconds(500), liveness: Int = 4) -> WorkerSession.Input {
        .welcome(
            WorkerWelcome(
                peerID: "w-1", heartbeatInterval: interval, heartbeatLiveness: liveness, acknowledgesHeartbeats: true))
    }

    @Test func connectsAtOnceWithAFreshSessionEachTime() {
        var session = session()
        #expect(session.tick(now: start) == [.connect(sessionID: "s1")])
        #expect(session.tick(now: at(1)) == [])
        #expect(session.tick(now: at(3)) == [.disconnect(reason: "no WELCOME from the coordinator within 3.0 seconds")])
        #expect(session.tick(now: at(3.5)) == [])
        #expect(session.tick(now: at(4)) == [.connect(sessionID: "s2")])
    }

    @Test func welcomeMakesTheSessionReadyWithTheCoordinatorsHeartbeat() {
        var session = session()
        _ = session.tick(now: start)
        #expect(
            session.received(welcome(), now: at(0.1)) == [.announce(sessionID: "s1", peerID: "w-1"), .leaseRenewed])
        #expect(session.isReady)
        #expect(session.interval == .milliseconds(500))
        #expect(session.silenceLimit == .seconds(2))
        #expect(session.nextDeadline == at(0.6))
    }

    /// Numbered heartbeats go out every interval, whatever else is sent: the lease runs on
    /// their acknowledgements.
    @Test func heartbeatsEveryIntervalNumberedFromOneInEachSession() {
        var session = session()
        _ = session.tick(now: start)
        _ = session.received(welcome(), now: start)
        #expect(session.tick(now: at(0.4)) == [])
        #expect(session.tick(now: at(0.5)) == [.heartbeat(sequence: 1)])
        _ = session.received(.other, now: at(0.7))
        #expect(session.tick(now: at(0.9)) == [])
        #expect(session.tick(now: at(1.0)) == [.heartbeat(sequence: 2)])
        _ = session.received(.forgotten("restarted"), now: at(1.1))
        _ = session.tick(now: at(1.1))
        _ = session.received(welcome(), now: at(1.2))
        #expect(session.tick(now: at(1.7)) == [.heartbeat(sequence: 1)])
    }

    @Test func anyMessageKeepsTheCoordinatorAlive() {
        var session = session()
        _ = session.tick(now: start)
        _ = session.received(welcome(liveness: 20), now: start)
        _ = session.received(.other, now: at(9))
        #expect(!session.tick(now: at(10.5)).contains { if case .disconnect = $0 { true } else { false } })
        #expect(session.isReady)
    }

    /// Issue 12, item 3: the lease runs from the sending of the latest acknowledged heartbeat
    /// (at first, of the HELLO the WELCOME answered) and lasts one interval less than the
    /// coordinator's silence limit, so it ends before the coordinator can declare the worker
    /// lost and grant its categories again.
    @Test func theLeaseEndsOneIntervalBeforeTheCoordinatorCouldDeclareTheWorkerLost() {
        var session = session()
        _ = session.tick(now: start)  // HELLO at 0
        _ = session.received(welcome(), now: ms(100))  // 0.5 s × 4: silence limit 2 s
        #expect(session.leaseDuration == .milliseconds(1500))
        #expect(session.leaseEnd == ms(1500))
        #expect(session.tick(now: ms(600)) == [.heartbeat(sequence: 1)])
        #expect(session.tick(now: ms(1100)) == [.heartbeat(sequence: 2)])
        // Heartbeat 1 was heard: the coordinator cannot declare the worker lost before
        // 0.6 + 2 s, and the lease ends an interval earlier.
        _ = session.received(.heartbeat(acknowledged: 1), now: ms(1200))
        #expect(session.leaseEnd == ms(2100))
        // An acknowledgement of nothing, or of an unknown number, renews nothing.
        _ = session.received(.heartbeat(acknowledged: 0), now: ms(1300))
        _ = session.received(.heartbeat(acknowledged: 99), now: ms(1300))
        #expect(session.leaseEnd == ms(2100))
        #expect(session.tick(now: ms(1600)) == [.heartbeat(sequence: 3)])
        #expect(session.nextDeadline == ms(2100))
        let lapse = session.tick(now: ms(2100))
        #expect(lapse.first == .leaseEnded(reason: "no heartbeat acknowledged by the coordinator for 1.5 seconds"))
        #expect(!session.holdsLease)
        // Said once; heartbeat 3's late acknowledgement renews it.
        #expect(
            !session.tick(now: ms(2200)).contains(
                .leaseEnded(reason: "no heartbeat acknowledged by the coordinator for 1.5 seconds")))
        _ = session.received(.heartbeat(acknowledged: 3), now: ms(2300))
        #expect(session.holdsLease && session.leaseEnd == ms(3100))
    }

    /// A WELCOME that comes later than the lease it would start (a coordinator slow to
    /// answer) gives no lease: work waits for the first acknowledged heartbeat.
    @Test func aLateWelcomeGivesNoLeaseUntilAHeartbeatIsAcknowledged() {
        var session = session()
        _ = session.tick(now: start)
        #expect(session.received(welcome(), now: ms(1600)) == [.announce(sessionID: "s1", peerID: "w-1")])
        #expect(!session.holdsLease)
        #expect(session.tick(now: ms(2100)) == [.heartbeat(sequence: 1)])
        #expect(session.received(.heartbeat(acknowledged: 1), now: ms(2200)) == [.leaseRenewed])
        #expect(session.holdsLease && session.leaseEnd == ms(3600))
    }

    /// A coordinator that does not acknowledge heartbeats (an older one) keeps no leases: the
    /// worker works without one and never stops its attempts for a lapse.
    @Test func aCoordinatorThatKeepsNoLeasesLeavesTheLeaseUnenforced() {
        var session = session()
        _ = session.tick(now: start)
        let old = WorkerWelcome(
            peerID: "w-1", heartbeatInterval: .milliseconds(500), heartbeatLiveness: 4, acknowledgesHeartbeats: false)
        #expect(
            session.received(.welcome(old), now: ms(100)) == [.announce(sessionID: "s1", peerID: "w-1"), .leaseRenewed])
        for step in 1...6 {
            _ = session.received(.other, now: ms(Int64(step) * 300))
            #expect(
                !session.tick(now: ms(Int64(step) * 300)).contains { if case .leaseEnded = $0 { true } else { false } })
        }
        #expect(session.holdsLease)
    }

    /// An acknowledgement that arrives after the lease it would have renewed has ended
    /// renews nothing: the lease stays lapsed.
    @Test func aLateAcknowledgementDoesNotReviveALapsedLease() {
        var session = session()
        _ = session.tick(now: start)
        _ = session.received(welcome(), now: start)
        #expect(session.tick(now: ms(500)) == [.heartbeat(sequence: 1)])
        _ = session.tick(now: ms(1500))
        #expect(!session.holdsLease)
        // Heartbeat 1 (sent at 0.5 s) could carry the lease only to 2 s.
        _ = session.received(.heartbeat(acknowledged: 1), now: ms(2100))
        #expect(!session.holdsLease)
    }

    @Test func silentCoordinatorIsLostAndReconnectsWithDoublingDelays() {
        var session = session()
        _ = session.tick(now: start)
        _ = session.received(welcome(), now: start)
        #expect(
            session.tick(now: at(2)) == [
                .leaseEnded(reason: "no heartbeat acknowledged by the coordinator for 1.5 seconds"),
                .disconnect(reason: "the coordinator was silent for 2.0 seconds"),
            ])
        #expect(!session.isReady)
        // Reconnect after 1 s; each handshake that times out (2 s here, the coordinator's
        // interval × liveness) doubles the next wait, up to 32 s.
        var now = 2.0
        var waits: [Double] = []
        for attempt in 2...9 {
            let retry = session.nextDeadline!
            waits.append(Double((retry - at(now)).components.seconds))
            now += waits.last!
            #expect(session.tick(now: at(now)) == [.connect(sessionID: "s\(attempt)")])
            now += 2
            #expect(session.tick(now: at(now)).count == 1)
        }
        #expect(waits == [1, 2, 4, 8, 16, 32, 32, 32])
        // A WELCOME starts the delays over.
        _ = session.tick(now: at(now + 32))
        _ = session.received(welcome(), now: at(now + 32))
        _ = session.tick(now: at(now + 40))
        #expect(session.nextDeadline == at(now + 41))
    }

    @Test func refusalForAnotherProtocolVersionStopsForGood() {
        var session = session()
        _ = session.tick(now: start)
        let refusal = WorkerRefusal(.unsupportedVersion, "protocol version 2 is not supported")
        #expect(
            session.received(.refused(refusal), now: at(0.1)) == [
                .disconnect(reason: "refused: \(refusal.message)"), .fail(refusal),
            ])
        #expect(session.phase == .stopped)
        #expect(session.tick(now: at(100)) == [])
    }

    /// A standby's NOT_LEADER is a redirection: the named leader a tenth of the first delay
    /// later, else the next coordinator after the first delay, and the backoff does not grow.
    @Test func aStandbysRefusalReconnectsSoonWithoutGrowingTheBackoff() {
        var session = session()
        _ = session.tick(now: start)
        let named = WorkerRefusal(.notLeader, "a standby; the leader is tcp://b:7400", leader: "tcp://b:7400")
        #expect(!named.isPermanent)
        #expect(session.received(.refused(named), now: at(0.1)) == [.disconnect(reason: "refused: \(named.message)")])
        #expect(session.tick(now: at(0.19)) == [])
        #expect(session.tick(now: at(0.2)) == [.connect(sessionID: "s2")])
        let unnamed = WorkerRefusal(.notLeader, "a standby; no coordinator leads yet")
        _ = session.received(.refused(unnamed), now: at(0.3))
        #expect(session.tick(now: at(1.29)) == [])
        #expect(session.tick(now: at(1.3)) == [.connect(sessionID: "s3")])
        _ = session.received(.refused(unnamed), now: at(1.4))
        #expect(session.tick(now: at(2.4)) == [.connect(sessionID: "s4")], "the delay did not double")
    }

    @Test func forgottenSessionReconnectsAtOnce() {
        var session = session()
        _ = session.tick(now: start)
        _ = session.received(welcome(), now: start)
        #expect(
            session.received(.forgotten("unknown peer"), now: at(1)) == [
                .disconnect(reason: "the coordinator no longer knows this session: unknown peer")
            ])
        #expect(session.tick(now: at(1)) == [.connect(sessionID: "s2")])
    }

    @Test func shutdownNoticeDisconnectsAndRetriesLater() {
        var session = session()
        _ = session.tick(now: start)
        _ = session.received(welcome(), now: start)
        let actions = session.received(.shutdown("restart"), now: at(1))
        #expect(actions == [.disconnect(reason: "the coordinator is shutting down: restart")])
        #expect(session.phase == .disconnected(retryAt: at(2)))
    }
}

/// Session ids `s1`, `s2`, …
final class Counter: @unchecked Sendable {
    // @unchecked: used by one test at a time, on its own session.
    private var value = 0
    func next() -> String {
        value += 1
        return "s\(value)"
    }
}
