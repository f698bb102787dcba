import CohortClientCore
import CohortTestSupport
import CohortWire
import Testing

@testable import CohortClient

/// The client's session as a state machine, driven with a manual clock: no socket, no waiting.
@Suite struct ClientSessionTests {
    typealias Session = ClientSession<ManualClock.Instant>

    static let endpoint = "tcp://127.0.0.1:7400"

    static func at(_ offset: Duration) -> ManualClock.Instant { ManualClock.Instant(offset: offset) }
    static let start = at(.zero)

    static func settings(curve: Bool = false) -> Session.Settings {
        var settings = Session.Settings(endpoint: endpoint)
        settings.curve = curve
        return settings
    }

    static func welcome(epoch: UInt64 = 1) -> Welcome {
        Welcome(coordinatorID: "coordinator", epoch: epoch, peerID: "c-1", softwareVersion: "test")
    }

    /// A session welcomed at ``start``.
    static func welcomed() -> Session {
        var session = Session(settings: settings())
        _ = session.connect(now: start)
        _ = session.received(.success(.handshake(.welcome(welcome()))), now: start)
        return session
    }

    static func reply(_ id: UInt64, _ kind: CoordinatorReply.Kind) -> Result<WireMessage, WireError> {
        .success(.coordinatorReply(CoordinatorReply(requestID: id, kind)))
    }

    static func failures(_ actions: [Session.Action]) -> [UInt64: ClientError] {
        var failed: [UInt64: ClientError] = [:]
        for case .fail(let id, let error) in actions { failed[id] = error }
        return failed
    }

    static func sent(_ actions: [Session.Action]) -> [ClientRequest] {
        actions.compactMap { if case .send(let request) = $0 { request } else { nil } }
    }

    static func stopped(_ actions: [Session.Action]) -> ClientError? {
        for case .stop(let error) in actions { return error }
        return nil
    }

    // MARK: - Handshake

    @Test func helloIsSentAndAWelcomeOpensTheSession() {
        var session = Session(settings: Self.settings())
        #expect(session.connect(now: Self.start) == [.sendHello])
        #expect(session.isHandshaking)
        let actions = session.received(.success(.handshake(.welcome(Self.welcome()))), now: Self.at(.seconds(1)))
        #expect(actions == [.welcomed(Self.welcome())])
        #expect(!session.isHandshaking)
        #expect(session.endedWith == nil)
    }

    @Test func noWelcomeWithinTheConnectTimeoutIsUnreachable() {
        var session = Session(settings: Self.settings())
        _ = session.connect(now: Self.start)
        #expect(session.wait(now: Self.at(.seconds(1))) == .seconds(4))
        #expect(session.tick(now: Self.at(.milliseconds(4999))).isEmpty)
        let error = Self.stopped(session.tick(now: Self.at(.seconds(5))))
        #expect(error?.code == .unreachable)
        #expect(error?.message.contains("no answer within 5 s") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("give this client its keys") == true)
        #expect(session.endedWith == error)
    }

    // MARK: - A coordinator and its standbys

    static let pair = "tcp://a:7400,tcp://b:7400"

    static func notLeader(_ leader: String?) -> Result<WireMessage, WireError> {
        .success(.handshake(.error(HandshakeError(code: .notLeader, message: "a standby", leader: leader))))
    }

    /// NOT_LEADER naming the leader: HELLO there, the handshake goes on.
    @Test func aStandbysRefusalSendsTheClientToTheLeaderItNames() {
        var settings = Session.Settings(endpoint: Self.pair)
        settings.connectTimeout = .seconds(5)
        var session = Session(settings: settings)
        #expect(session.endpoint == "tcp://a:7400")
        _ = session.connect(now: Self.start)
        let actions = session.received(Self.notLeader("tcp://c:7400"), now: Self.at(.milliseconds(10)))
        #expect(actions.contains(.moveTo("tcp://c:7400")) && actions.last == .sendHello, "\(actions)")
        #expect(session.endpoint == "tcp://c:7400")
        #expect(session.isHandshaking)
        // No leader named: the next of the list (after c, not in it: the first).
        let next = session.received(Self.notLeader(nil), now: Self.at(.milliseconds(20)))
        #expect(next.contains(.moveTo("tcp://a:7400")), "\(next)")
        let welcomed = session.received(.success(.handshake(.welcome(Self.welcome()))), now: Self.at(.seconds(1)))
        #expect(welcomed == [.welcomed(Self.welcome())])
    }

    /// One endpoint and a standby that names no leader: nowhere to go, the client fails.
    @Test func aLoneStandbyWithoutALeaderEndsTheSession() {
        var session = Session(settings: Self.settings())
        _ = session.connect(now: Self.start)
        let error = Self.stopped(session.received(Self.notLeader(nil), now: Self.at(.milliseconds(10))))
        #expect(error?.code == .unreachable)
        #expect(error?.exitCode == 69)
    }

    /// A coordinator of a list that stays silent is left for the next after 2 s, during the
    /// handshake (the shell is woken for it) and while reconnecting.
    @Test func aSilentCoordinatorOfAListIsLeftForTheNext() {
        var session = Session(settings: Session.Settings(endpoint: Self.pair))
        _ = session.connect(now: Self.start)
        #expect(session.wait(now: Self.start) == .seconds(2))
        #expect(session.tick(now: Self.at(.milliseconds(1999))).isEmpty)
        #expect(session.tick(now: Self.at(.seconds(2))).contains(.moveTo("tcp://b:7400")))
        _ = session.received(.success(.handshake(.welcome(Self.welcome()))), now: Self.at(.seconds(3)))
        _ = session.request(1, .workers, answering: .stream, now: Self.at(.seconds(3)))
        // The leader's connection drops: HELLO again, there, then the next of the list.
        let lost = session.connection(.disconnected, now: Self.at(.seconds(4)))
        #expect(lost.last == .sendHello)
        #expect(!session.tick(now: Self.at(.seconds(5))).contains(.moveTo("tcp://a:7400")))
        #expect(session.tick(now: Self.at(.seconds(6))).contains(.moveTo("tcp://a:7400")))
        let back = session.received(.success(.handshake(.welcome(Self.welcome(epoch: 2)))), now: Self.at(.seconds(7)))
        #expect(Self.sent(back).map(\.requestID) == [1], "the watch is sent again to the new leader")
    }

    /// Serving, a request answered NOT_LEADER (the leader stepped down and stands by): the
    /// coordinator is lost, not unreachable; the session goes to the leader named, says HELLO
    /// there only, and sends the open request again once welcomed.
    @Test func aNotLeaderWhileServingFollowsTheLeaderItNames() {
        var session = Session(settings: Session.Settings(endpoint: Self.pair))
        _ = session.connect(now: Self.start)
        _ = session.received(.success(.handshake(.welcome(Self.welcome()))), now: Self.at(.seconds(1)))
        _ = session.request(1, .workers, answering: .once, now: Self.at(.seconds(1)))
        let refused = session.received(Self.notLeader("tcp://b:7400"), now: Self.at(.seconds(2)))
        #expect(Self.stopped(refused) == nil, "\(refused)")
        #expect(session.endedWith == nil)
        #expect(refused.contains(.moveTo("tcp://b:7400")), "\(refused)")
        #expect(refused.filter { $0 == .sendHello }.count == 1 && refused.last == .sendHello, "\(refused)")
        #expect(session.endpoint == "tcp://b:7400")
        let back = session.received(.success(.handshake(.welcome(Self.welcome(epoch: 2)))), now: Self.at(.seconds(3)))
        #expect(Self.sent(back).map(\.requestID) == [1], "the request is sent again to the new leader")
    }

    @Test func twoRefusedConnectionsBeforeAnyWasMadeAreUnreachableAtOnce() {
        var session = Session(settings: Self.settings())
        _ = session.connect(now: Self.start)
        #expect(session.connection(.connectRetried, now: Self.start).isEmpty)
        let error = Self.stopped(session.connection(.connectRetried, now: Self.at(.milliseconds(100))))
        #expect(error?.code == .unreachable)
        #expect(error?.message.contains("the connection was refused") == true)
    }

    @Test func aBrokenHandshakeIsARefusalOnlyWhenItRepeatsAndTheLastOneIsWhatTimesOut() {
        let broken = Session.HandshakeFailure(
            explanation: "the handshake failed", detail: "EPIPE", keyRefused: false, definite: false)
        var session = Session(settings: Self.settings(curve: true))
        _ = session.connect(now: Self.start)
        #expect(session.connection(.handshakeFailed(broken), now: Self.start).isEmpty)
        #expect(session.connection(.handshakeFailed(broken), now: Self.start).isEmpty)
        let error = Self.stopped(session.connection(.handshakeFailed(broken), now: Self.start))
        #expect(error?.code == .protocolMismatch)
        #expect(error?.message.contains("refused the handshake: the handshake failed") == true)

        // Once only, then silence: the timeout reports that failure, not "no answer".
        var once = Session(settings: Self.settings(curve: true))
        _ = once.connect(now: Self.start)
        _ = once.connection(.handshakeFailed(broken), now: Self.start)
        #expect(Self.stopped(once.tick(now: Self.at(.seconds(5)))) == error)
    }

    @Test func aRefusedKeyIsAPermissionErrorAtOnce() {
        let refused = Session.HandshakeFailure(
            explanation: "the server refused this CURVE key", detail: "", keyRefused: true, definite: true)
        var session = Session(settings: Self.settings(curve: true))
        _ = session.connect(now: Self.start)
        #expect(Self.stopped(session.connection(.handshakeFailed(refused), now: Self.start))?.code == .permissionDenied)
    }

    @Test func aWelcomeInAnotherProtocolVersionIsAMismatch() {
        var session = Session(settings: Self.settings())
        _ = session.connect(now: Self.start)
        let error = Self.stopped(
            session.received(.failure(.unsupportedVersion(got: 9, family: nil)), now: Self.start))
        #expect(error?.code == .protocolMismatch)
        #expect(error?.message.contains("speaks protocol version 9") == true)
    }

    // MARK: - Requests

    @Test func anAnswerIsDeliveredOnceAndARequestWithoutOneFailsAtItsDeadline() {
        var session = Self.welcomed()
        let asked = session.request(1, .status(group: "g"), answering: .once, now: Self.start)
        #expect(asked == [.send(ClientRequest(requestID: 1, .status(group: "g")))])
        let answered = session.request(2, .status(group: "h"), answering: .once, now: Self.start)
        #expect(Self.sent(answered).map(\.requestID) == [2])

        let reply = CoordinatorReply.Kind.groups([])
        #expect(session.received(Self.reply(2, reply), now: Self.at(.seconds(1))) == [.answer(2, reply)])
        #expect(session.received(Self.reply(2, reply), now: Self.at(.seconds(1))).isEmpty, "answered once")

        #expect(session.wait(now: Self.at(.seconds(29))) == .milliseconds(250))
        #expect(session.wait(now: Self.at(.milliseconds(29_900))) == .milliseconds(100))
        #expect(Self.failures(session.tick(now: Self.at(.milliseconds(29_999)))).isEmpty)
        let failed = Self.failures(session.tick(now: Self.at(.seconds(30))))
        #expect(failed.keys.sorted() == [1])
        #expect(failed[1]?.code == .connectionLost)
        #expect(failed[1]?.message.contains("in time") == true)
        #expect(session.received(Self.reply(1, reply), now: Self.at(.seconds(31))).isEmpty, "failed once")
    }

    @Test func aRequestAbandonedBeforeItArrivesFailsCancelledAndIsNeverSent() {
        var session = Self.welcomed()
        #expect(session.abandon(7, now: Self.start).isEmpty)
        #expect(session.request(7, .workers, answering: .once, now: Self.start) == [.fail(7, .cancelled)])
        // One already open is failed at once.
        _ = session.request(8, .workers, answering: .once, now: Self.start)
        #expect(session.abandon(8, now: Self.start) == [.fail(8, .cancelled)])
        #expect(session.pending.isEmpty)
    }

    @Test func aWatchYieldsUntilTheGroupsEnd() {
        var session = Self.welcomed()
        _ = session.request(3, .watch(group: "g"), answering: .stream, now: Self.start)
        let running = CoordinatorReply.Kind.groups([])
        #expect(session.received(Self.reply(3, running), now: Self.start) == [.yield(3, running)])
        let end = CoordinatorReply.Kind.watchEvents([
            WatchEvent(
                group: "g", at: WireTimestamp(nanosecondsSinceEpoch: 1), .finished(state: .succeeded, reason: nil))
        ])
        #expect(session.received(Self.reply(3, end), now: Self.start) == [.yield(3, end), .finish(3)])
        #expect(!session.isWatching)
        // No deadline for a watch, however long it runs.
        #expect(Self.failures(session.tick(now: Self.at(.seconds(3600)))).isEmpty)
    }

    // MARK: - Probes

    @Test func aSilentWatchIsProbedAndLostWhenTheProbeIsNotAnswered() {
        var session = Self.welcomed()
        _ = session.request(3, .watch(group: "g"), answering: .stream, now: Self.start)
        #expect(Self.sent(session.tick(now: Self.at(.milliseconds(9_999)))).isEmpty)
        let probes = Self.sent(session.tick(now: Self.at(.seconds(10))))
        #expect(probes.map(\.kind) == [.workers])
        #expect(probes.first.map { $0.requestID >= 1 << 62 } == true, "a probe has an id of the session's own")
        #expect(Self.sent(session.tick(now: Self.at(.seconds(15)))).isEmpty, "one probe at a time")
        #expect(Self.failures(session.tick(now: Self.at(.milliseconds(19_999)))).isEmpty)
        let failed = Self.failures(session.tick(now: Self.at(.seconds(20))))
        #expect(failed[3]?.code == .connectionLost)
        #expect(failed[3]?.message.contains("stopped answering") == true)
    }

    @Test func anythingHeardAnswersTheProbe() {
        var session = Self.welcomed()
        _ = session.request(3, .watch(group: "g"), answering: .stream, now: Self.start)
        let probe = Self.sent(session.tick(now: Self.at(.seconds(10))))[0]
        _ = session.received(Self.reply(probe.requestID, .workers([])), now: Self.at(.seconds(11)))
        #expect(session.probe == nil)
        #expect(Self.failures(session.tick(now: Self.at(.seconds(20)))).isEmpty)
        #expect(Self.sent(session.tick(now: Self.at(.seconds(21)))).map(\.kind) == [.workers], "probed again")
    }

    @Test func aProbeThatCannotBeSentIsNoProbe() {
        var session = Self.welcomed()
        _ = session.request(3, .watch(group: "g"), answering: .stream, now: Self.start)
        let probe = Self.sent(session.tick(now: Self.at(.seconds(10))))[0]
        let full = ClientError(.connectionLost, "full")
        #expect(session.requestNotSent(probe.requestID, full, now: Self.at(.seconds(10))).isEmpty)
        #expect(session.probe == nil)
        #expect(Self.failures(session.tick(now: Self.at(.seconds(20)))).isEmpty, "no probe was waited for")
    }

    // MARK: - Reconnecting

    @Test func aDroppedConnectionSaysHelloAgainAndSendsWhatIsOpenAgainAfterTheWelcome() {
        var session = Self.welcomed()
        let resubmittable = Submission(groupID: "g-1", document: "{}", format: .json)
        let unnamed = Submission(document: "{}", format: .json)
        _ = session.request(1, .watch(group: "g"), answering: .stream, now: Self.start)
        _ = session.request(2, .status(group: "g"), answering: .once, now: Self.start)
        _ = session.request(3, .submit(unnamed), answering: .once, now: Self.start)
        _ = session.request(4, .submit(resubmittable), answering: .once, now: Self.start)

        let lost = session.connection(.disconnected, now: Self.at(.seconds(1)))
        #expect(
            lost == [
                .connectionChanged(
                    .waiting(reason: "its connection dropped", restarting: false, timeout: .seconds(30))),
                .sendHello,
            ])
        #expect(session.connection(.disconnected, now: Self.at(.seconds(1))).isEmpty, "lost once")
        #expect(session.tick(now: Self.at(.milliseconds(1_999))).isEmpty)
        #expect(session.tick(now: Self.at(.seconds(2))) == [.sendHello], "HELLO again every second")

        let back = session.received(.success(.handshake(.welcome(Self.welcome(epoch: 2)))), now: Self.at(.seconds(3)))
        #expect(back.first == .connectionChanged(.reconnected(epoch: 2)))
        #expect(Self.sent(back).map(\.requestID) == [1, 2, 4], "sent again under their ids")
        let failed = Self.failures(back)
        #expect(failed.keys.sorted() == [3], "a submission without an id is not sent again")
        #expect(failed[3]?.code == .connectionLost)
        #expect(failed[3]?.message.contains("use --id") == true)
        #expect(session.reconnecting == nil)
    }

    /// Found by the simulation (seed 1): with only one-answer requests open, a HELLO lost with
    /// the coordinator was never said again, and the session stayed "reconnecting" for good:
    /// every later request was answered HANDSHAKE_REQUIRED, ignored, and timed out.
    @Test func helloIsSaidAgainWhileOnlyOneAnswerRequestsWaitAndALaterRequestFindsTheCoordinator() {
        var session = Self.welcomed()
        let submission = Submission(groupID: "g-1", document: "{}", format: .json)
        _ = session.request(1, .submit(submission), answering: .once, now: Self.start)
        #expect(session.connection(.disconnected, now: Self.at(.seconds(1))).last == .sendHello)
        #expect(session.tick(now: Self.at(.seconds(2))) == [.sendHello], "HELLO again every second")
        #expect(session.tick(now: Self.at(.seconds(3))) == [.sendHello])

        // Nothing comes back: the request times out, and nothing waits for the coordinator.
        #expect(Self.failures(session.tick(now: Self.at(.seconds(30))))[1]?.code == .connectionLost)
        #expect(session.reconnecting == nil)

        // The next request meets a coordinator that does not know this connection: HELLO again.
        _ = session.request(2, .submit(submission), answering: .once, now: Self.at(.seconds(40)))
        let unknown = ProtocolError(code: .handshakeRequired, message: "no session: send HELLO first")
        #expect(session.received(Self.reply(2, .error(unknown)), now: Self.at(.seconds(41))).last == .sendHello)
        let back = session.received(.success(.handshake(.welcome(Self.welcome(epoch: 2)))), now: Self.at(.seconds(42)))
        #expect(Self.sent(back).map(\.requestID) == [2], "sent again after the WELCOME")
    }

    @Test func anAnnouncedRestartThatDoesNotComeBackFailsWatchesAtTheReconnectTimeout() {
        var session = Self.welcomed()
        _ = session.request(1, .watch(group: "g"), answering: .stream, now: Self.start)
        let notice = ProtocolError(code: .shuttingDown, message: "SIGTERM", restarting: true)
        let actions = session.received(Self.reply(0, .error(notice)), now: Self.at(.seconds(1)))
        #expect(
            actions.first
                == .connectionChanged(
                    .waiting(reason: "it is restarting (SIGTERM)", restarting: true, timeout: .seconds(30))))
        #expect(session.endedWith == nil, "a restart is waited for")
        #expect(Self.failures(session.tick(now: Self.at(.milliseconds(30_999)))).isEmpty)
        let failed = Self.failures(session.tick(now: Self.at(.seconds(31))))
        #expect(failed[1]?.code == .connectionLost)
        #expect(failed[1]?.message.contains("said it was restarting but was not back within 30 s") == true)
    }

    @Test func aRestartAnnouncedWhileNothingWasOpenIsTheLossTheNextRequestFinds() {
        var session = Self.welcomed()
        let notice = ProtocolError(code: .shuttingDown, message: "SIGTERM", restarting: true)
        #expect(session.received(Self.reply(0, .error(notice)), now: Self.start).isEmpty)
        _ = session.request(5, .watch(group: "g"), answering: .stream, now: Self.at(.seconds(2)))
        let unknown = ProtocolError(code: .handshakeRequired, message: "no session: send HELLO first")
        let actions = session.received(Self.reply(5, .error(unknown)), now: Self.at(.seconds(3)))
        guard case .connectionChanged(.waiting(_, let restarting, _))? = actions.first else {
            Issue.record("no waiting: \(actions)")
            return
        }
        #expect(restarting)
        #expect(actions.contains(.sendHello))
    }

    // MARK: - The end

    @Test(arguments: [
        (
            WireMessage.handshake(.error(HandshakeError(code: .permissionDenied, message: "no"))),
            ClientError.Code.permissionDenied
        ),
        (
            WireMessage.coordinatorReply(
                CoordinatorReply(requestID: 0, .error(ProtocolError(code: .shuttingDown, message: "SIGTERM")))),
            ClientError.Code.shuttingDown
        ),
    ])
    func aRefusalEndsTheSessionAndFailsEverythingOpen(message: WireMessage, code: ClientError.Code) throws {
        var session = Self.welcomed()
        _ = session.request(1, .watch(group: "g"), answering: .stream, now: Self.start)
        _ = session.request(2, .workers, answering: .once, now: Self.start)
        let actions = session.received(.success(message), now: Self.start)
        let error = try #require(Self.stopped(actions))
        #expect(error.code == code)
        #expect(Self.failures(actions) == [1: error, 2: error])
        #expect(session.endedWith == error)
        // Later calls fail with the same reason, without being sent.
        #expect(session.request(3, .workers, answering: .once, now: Self.start) == [.fail(3, error)])
        #expect(session.tick(now: Self.at(.seconds(60))).isEmpty)
    }

    /// With something open, a coordinator that does not know the session is one that restarted
    /// (HELLO again); with nothing open, it forgot this client, which cannot go on.
    @Test func aCoordinatorThatForgetsTheClientWhileNothingIsOpenEndsTheSession() {
        var session = Self.welcomed()
        let unknown = ProtocolError(code: .handshakeRequired, message: "no session: send HELLO first")
        let error = Self.stopped(session.received(Self.reply(1 << 62, .error(unknown)), now: Self.start))
        #expect(error?.code == .connectionLost)
        #expect(error?.message.contains("no longer knows this client") == true)
    }

    @Test func closingSaysGoodbyeThenFailsWhatIsOpenClosed() {
        var session = Self.welcomed()
        _ = session.request(1, .watch(group: "g"), answering: .stream, now: Self.start)
        let actions = session.close(now: Self.start)
        #expect(Self.sent(actions).map(\.kind) == [.disconnect(reason: "client closed")])
        #expect(Self.failures(actions) == [1: .closed])
        #expect(actions.last == .stop(.closed))
        #expect(session.close(now: Self.start).isEmpty, "closed once")
    }
}
