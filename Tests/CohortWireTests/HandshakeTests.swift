import CohortWire
import Testing

@Suite struct HandshakeTests {
    let codec = WireCodec()

    /// A HELLO of another protocol version, as that version would encode it:
    /// the handshake family's layout is frozen, only the header's version differs.
    func foreignHello(version: UInt16) throws -> [[UInt8]] {
        var hello = Hello(role: .worker, softwareVersion: "9.0.0", peerName: "future-worker")
        hello.protocolVersion = version
        var frames = try codec.encode(.handshake(.hello(hello)))
        frames[0][4] = UInt8(version >> 8)
        frames[0][5] = UInt8(version & 0xFF)
        return frames
    }

    @Test func theVersionErrorReplyNamesBothVersions() {
        let refusal = HandshakeError.unsupportedVersion(4)
        #expect(refusal.message == "protocol version 4 is not supported; this coordinator speaks 3")
        #expect(refusal.code == .unsupportedVersion)
        #expect(refusal.supportedVersions == 3...3)
        #expect(
            HandshakeError.unsupportedVersion(7, supported: 1...3).message
                == "protocol version 7 is not supported; this coordinator speaks 1 to 3")
    }

    @Test func aCoordinatorAnswersAHelloOfAnotherVersionWithAnErrorReply() throws {
        // Coordinator side: the decoder recognises the version and says which.
        let hello = try foreignHello(version: 4)
        var refusal: HandshakeError?
        do {
            _ = try codec.decode(frames: hello)
            Issue.record("a version 4 hello decoded")
        } catch {
            #expect(error == .unsupportedVersion(got: 4, family: .handshake))
            refusal = HandshakeError(refusing: error)
        }
        let reply = try codec.encode(.handshake(.error(try #require(refusal))))

        // Peer side: the reply decodes into the text a person reads.
        guard case .handshake(.error(let received)) = try codec.decode(frames: reply) else {
            Issue.record("reply is not a handshake error")
            return
        }
        #expect(received.code == .unsupportedVersion)
        #expect(received.message == "protocol version 4 is not supported; this coordinator speaks 3")
    }

    @Test func aPeerReadsAVersionRefusalFromACoordinatorOfAnotherVersion() throws {
        // A version 5 coordinator refuses us; its handshake ERROR still decodes here.
        let refusal = HandshakeError.unsupportedVersion(1, supported: 4...5)
        var frames = try codec.encode(.handshake(.error(refusal)))
        frames[0][5] = 5
        #expect(try codec.decode(frames: frames) == .handshake(.error(refusal)))
    }

    @Test func otherHandshakeMessagesOfAnotherVersionAreStillRefused() throws {
        var frames = try codec.encode(
            .handshake(.welcome(Welcome(coordinatorID: "c", epoch: 1, peerID: "p", softwareVersion: "1"))))
        frames[0][5] = 5
        #expect(throws: WireError.unsupportedVersion(got: 5, family: .handshake)) { try codec.decode(frames: frames) }
    }

    @Test func undecodableMessagesAreAnsweredWithTheirCode() {
        let refusal = HandshakeError(refusing: .wrongFrameCount(got: 3))
        #expect(refusal.code == .badFrame)
        #expect(refusal.message == "expected 2 frames (header, body), got 3")
        #expect(HandshakeError(refusing: .frameTooLarge(frame: 1, size: 20, limit: 10)).code == .tooLarge)
    }

    @Test func welcomeDefaultsToOneSecondHeartbeatsAndThreeMissed() {
        let welcome = Welcome(coordinatorID: "c", epoch: 1, peerID: "w-1", softwareVersion: "0.1.0")
        #expect(welcome.heartbeatInterval == .seconds(1))
        #expect(welcome.heartbeatLiveness == 3)
        #expect(welcome.protocolVersion == WireVersion.current)
    }
}
