import CohortCore
import CohortWire
import Testing

@testable import CohortCoordinator

@Suite struct IdleClientSweepTests {
    static let start = Timestamp.zero
    static let quiet: RoutingID = [1]
    static let watching: RoutingID = [2]
    static let talking: RoutingID = [3]
    static let worker: RoutingID = [4]

    static func session(_ role: PeerRole, heard: Timestamp) -> PeerSession {
        PeerSession(role: role, peerID: "p", name: "", lastSent: heard, lastHeard: heard)
    }

    static func sessions(talkingAt: Timestamp) -> [RoutingID: PeerSession] {
        [
            quiet: session(.client, heard: start),
            watching: session(.client, heard: start),
            talking: session(.client, heard: talkingAt),
            worker: session(.worker, heard: start),
        ]
    }

    @Test func aClientSilentPastTheLimitWithoutWatchesIsForgotten() {
        var sweep = IdleClientSweep(now: Self.start)
        let late = Self.start + .seconds(3601)
        let expired = sweep.expired(Self.sessions(talkingAt: late), watching: { [Self.watching] }, now: late)
        #expect(expired == [Self.quiet], "not a watching client, nor one heard lately, nor a worker")
    }

    @Test func nothingIsForgottenBeforeTheLimitNorBetweenSweeps() {
        var sweep = IdleClientSweep(now: Self.start)
        let sessions = Self.sessions(talkingAt: Self.start)
        // Silent for exactly the limit: not yet.
        #expect(sweep.expired(sessions, watching: { [] }, now: Self.start + .seconds(3600)).isEmpty)
        // The sweep just ran: the next one is a minute later.
        #expect(sweep.expired(sessions, watching: { [] }, now: Self.start + .seconds(3630)).isEmpty)
        #expect(sweep.lastSweep == Self.start + .seconds(3600))
        let expired = sweep.expired(sessions, watching: { [] }, now: Self.start + .seconds(3661))
        #expect(expired == [Self.quiet, Self.watching, Self.talking])
    }

    @Test func theWatchersAreAskedForOnlyWhenSomeClientIsIdle() {
        var sweep = IdleClientSweep(now: Self.start)
        var asked = false
        let now = Self.start + .seconds(61)
        _ = sweep.expired(
            Self.sessions(talkingAt: now),
            watching: {
                asked = true
                return []
            }, now: now)
        #expect(!asked)
    }
}
