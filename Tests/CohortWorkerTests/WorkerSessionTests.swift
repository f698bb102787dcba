import CohortWire
import Testing

@testable import CohortWorker

/// The session state machine, driven with chosen instants: no sockets, no clocks.
struct WorkerSessionTests {
    typealias Instant = ContinuousClock.Instant

    let start = ContinuousClock.now
    let settings = WorkerSession.Settings(
        heartbeatInterval: .seconds(1), heartbeatLiveness: 3, reconnectDelay: .seconds(1),
        maxReconnectDelay: .seconds(32))

    func at(_ seconds: Double) -> Instant { start + .seconds(seconds) }

    func session() -> WorkerSession {
        let counter = Counter()
        return WorkerSession(settings: settings, now: start) { counter.next() }
    }

    func welcome(interval: Duration = .milliseconds(500), liveness: UInt32 = 4) -> WorkerSession.Input {
        .welcome(
            Welcome(
                coordinatorID: "c", epoch: 1, peerID: "w-1", heartbeatInterval: interval, heartbeatLiveness: liveness,
                softwareVersion: "t"))
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
        #expect(session.received(welcome(), now: at(0.1)) == [.announce(sessionID: "s1", peerID: "w-1")])
        #expect(session.isReady)
        #expect(session.interval == .milliseconds(500))
        #expect(session.silenceLimit == .seconds(2))
        #expect(session.nextDeadline == at(0.6))
    }

    @Test func heartbeatsWhenNothingWasSentForAnInterval() {
        var session = session()
        _ = session.tick(now: start)
        _ = session.received(welcome(), now: start)
        #expect(session.tick(now: at(0.4)) == [])
        #expect(session.tick(now: at(0.5)) == [.heartbeat])
        session.didSend(now: at(0.7))
        #expect(session.tick(now: at(1.1)) == [])
        #expect(session.tick(now: at(1.3)) == [.heartbeat])
    }

    @Test func anyMessageKeepsTheCoordinatorAlive() {
        var session = session()
        _ = session.tick(now: start)
        _ = session.received(welcome(), now: start)
        _ = session.received(.other, now: at(1.5))
        session.didSend(now: at(3))
        #expect(session.tick(now: at(3.4)) == [])
        #expect(session.isReady)
    }

    @Test func silentCoordinatorIsLostAndReconnectsWithDoublingDelays() {
        var session = session()
        _ = session.tick(now: start)
        _ = session.received(welcome(), now: start)
        #expect(session.tick(now: at(2)) == [.disconnect(reason: "the coordinator was silent for 2.0 seconds")])
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
        let refusal = HandshakeError.unsupportedVersion(2)
        #expect(
            session.received(.refused(refusal), now: at(0.1)) == [
                .disconnect(reason: "refused: \(refusal.message)"), .fail(refusal),
            ])
        #expect(session.phase == .stopped)
        #expect(session.tick(now: at(100)) == [])
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
        let actions = session.received(.shutdown(ShutdownNotice(reason: "restart", restarting: true)), now: at(1))
        #expect(actions == [.disconnect(reason: "the coordinator is shutting down: restart")])
        #expect(session.nextDeadline == at(2))
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
