import CohortTestSupport
import Testing

@testable import ZeroMQ

@Suite struct CurveKeyTests {
    @Test func z85MatchesTheRFC32TestVector() throws {
        let bytes: [UInt8] = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]
        #expect(Z85.encode(bytes) == "HelloWorld")
        #expect(try Z85.decode("HelloWorld") == bytes)
    }

    @Test(arguments: ["Hell", "HelloWorl", "Hello Wor\u{7F}d", "\u{1}elloWorld"])
    func malformedZ85IsRejected(text: String) {
        let error = #expect(throws: ZeroMQError.self) { try Z85.decode(text) }
        #expect(error?.code == ZeroMQError.Code.invalidArgument)
    }

    @Test func generatedKeysRoundTripThroughZ85AndDeriveTheirPublicKey() throws {
        let pair = try CurveKeyPair.generate()
        #expect(pair.publicKey.bytes.count == 32)
        #expect(pair.publicKey.z85.count == 40)
        #expect(try CurvePublicKey(z85: pair.publicKey.z85) == pair.publicKey)
        #expect(try CurveSecretKey(z85: pair.secretKey.z85) == pair.secretKey)
        #expect(try pair.secretKey.publicKey() == pair.publicKey)
        #expect(try CurveKeyPair(secretKey: pair.secretKey) == pair)
        #expect(try CurveKeyPair.generate() != pair)
    }

    @Test func keysOfTheWrongLengthAreRejected() {
        #expect(throws: ZeroMQError.self) { try CurvePublicKey(bytes: [1, 2, 3]) }
        #expect(throws: ZeroMQError.self) { try CurveSecretKey(z85: "HelloWorld") }
    }

    @Test func secretKeysStayOutOfDescriptions() throws {
        let pair = try CurveKeyPair.generate()
        #expect(!"\(pair.secretKey)".contains(pair.secretKey.z85))
        #expect(!"\(pair)".contains(pair.secretKey.z85))
        #expect("\(pair.publicKey)" == pair.publicKey.z85)
    }
}

/// A CURVE server (ROUTER) with a monitor, and a way to make clients for it.
private struct CurveServer {
    let context: Context
    let keys: CurveKeyPair
    let socket: Socket
    let monitor: Monitor
    let endpoint: String

    init(context: Context, enforceDomain: Bool = true) throws {
        self.context = context
        keys = try CurveKeyPair.generate()
        socket = try context.socket(.router)
        try socket.makeCurveServer(secretKey: keys.secretKey, zapDomain: "cohort")
        if !enforceDomain { try socket.set(.zapEnforceDomain, to: false) }
        monitor = try socket.monitor(.handshakes)
        endpoint = try socket.bindLoopback()
    }

    func client(_ keys: CurveKeyPair) throws -> Socket {
        let client = try context.socket(.dealer)
        try client.makeCurveClient(keyPair: keys, serverKey: self.keys.publicKey)
        try client.connect(endpoint)
        return client
    }
}

@Suite struct CurveAuthenticationTests {
    @Test func anAdmittedKeyGetsThroughAndItsMessagesCarryTheAssignedUserID() throws {
        let context = try Context()
        let worker = try CurveKeyPair.generate()
        let requests = Locked<[ZAPRequest]>([])
        let handler = try ZAPHandler(context: context) { request in
            requests.mutate { $0.append(request) }
            return request.curvePublicKey == worker.publicKey
                ? .allow(userID: "worker:w1") : .deny(reason: "unknown key")
        }
        let zap = TestThread { try? handler.runOnCurrentThread() }
        defer {
            handler.stop()
            #expect(zap.join())
        }
        let server = try CurveServer(context: context)
        let client = try server.client(worker)

        try client.send([[UInt8]("hello")])
        let received = try #require(try server.socket.receiveWithUserID(wait: .upTo(Deadline.event)))
        #expect(received.frames.count == 2)
        #expect(received.frames[1] == [UInt8]("hello"))
        #expect(received.userID == "worker:w1")

        try client.send([[UInt8]("again")])
        let frames = try #require(try server.socket.receive(wait: .upTo(Deadline.event)))
        // The routing-id frame is made locally and has the id only sometimes
        // (libzmq copies it unless a poll prefetched the frame); the payload always has it.
        #expect(frames.count == 2)
        #expect(frames[1].userID == "worker:w1")

        // After a poll (which makes libzmq prefetch the routing-id frame
        // without metadata) the user id is still found.
        try client.send([[UInt8]("polled")])
        let poller = Poller()
        try poller.register(server.socket)
        #expect(try poller.poll(timeout: Deadline.event) == 1)
        let polled = try #require(try server.socket.receiveWithUserID(wait: .never))
        #expect(polled.frames.last == [UInt8]("polled"))
        #expect(polled.userID == "worker:w1")

        let request = try #require(requests.value.first)
        #expect(request.domain == "cohort")
        #expect(request.mechanism == "CURVE")
        #expect(request.address == "127.0.0.1")
        #expect(request.curvePublicKeyZ85 == worker.publicKey.z85)

        // The reply path is encrypted too and works.
        try server.socket.send(to: received.frames[0], [[UInt8]("welcome")])
        #expect(try client.receiveFrames(wait: .upTo(Deadline.event)) == [[UInt8]("welcome")])
    }

    @Test func anUnknownKeyIsRefusedAndNoMessageArrives() throws {
        let context = try Context()
        let known = try CurveKeyPair.generate()
        let handler = try ZAPHandler(context: context) { request in
            request.curvePublicKey == known.publicKey ? .allow(userID: "client:known") : .deny(reason: "unknown key")
        }
        let zap = TestThread { try? handler.runOnCurrentThread() }
        defer {
            handler.stop()
            #expect(zap.join())
        }
        let server = try CurveServer(context: context)
        let stranger = try server.client(try CurveKeyPair.generate())
        try stranger.send([[UInt8]("let me in")], wait: .never)

        let failure = try server.monitor.waitFor(timeout: Deadline.event) { $0.isHandshakeFailure }
        #expect(failure?.kind == .handshakeFailedAuth)
        #expect(failure?.value == 400)
        #expect(try server.socket.receiveFrames(wait: .upTo(Deadline.silence)) == nil)
    }

    @Test func withNoZAPHandlerAnEnforcedDomainRefusesEveryClient() throws {
        let context = try Context()
        let server = try CurveServer(context: context)
        let client = try server.client(try CurveKeyPair.generate())
        try client.send([[UInt8]("anyone home?")], wait: .never)

        let failure = try server.monitor.waitFor(timeout: Deadline.event) { $0.isHandshakeFailure }
        #expect(failure?.kind == .handshakeFailedNoDetail)
        #expect(try server.socket.receiveFrames(wait: .upTo(Deadline.silence)) == nil)
    }

    /// Why the option matters (docs/architecture.md, "ZeroMQ facts the code relies on"): without it, a missing handler lets anyone in.
    @Test func withNoZAPHandlerAndNoEnforcementAnyKeyGetsIn() throws {
        let context = try Context()
        let server = try CurveServer(context: context, enforceDomain: false)
        let client = try server.client(try CurveKeyPair.generate())
        try client.send([[UInt8]("open door")])
        let received = try #require(try server.socket.receiveWithUserID(wait: .upTo(Deadline.event)))
        #expect(received.frames.last == [UInt8]("open door"))
    }

    @Test func aZAPHandlerReturnsWhenTheContextShutsDown() throws {
        let context = try Context()
        let handler = try ZAPHandler(context: context) { _ in .deny(reason: "closed") }
        let outcome = Locked("running")
        let zap = TestThread {
            do {
                try handler.runOnCurrentThread()
                outcome.value = "returned"
            } catch {
                outcome.value = "threw \(error)"
            }
        }
        try context.shutdown()
        #expect(zap.join(timeout: .seconds(5)))
        #expect(outcome.value == "returned")
        let again = #expect(throws: ZeroMQError.self) { try handler.runOnCurrentThread() }
        #expect(again?.code == ZeroMQError.Code.wrongState)
    }

    @Test(.timeLimit(.minutes(1)))
    func aZAPHandlerServiceReturnsWhenItsTaskIsCancelled() async throws {
        let context = try Context()
        let handler = try ZAPHandler(context: context) { _ in .deny(reason: "closed") }
        let service = Task { try await handler.run() }
        service.cancel()
        try await service.value
    }

    @Test func aSecondHandlerInTheSameContextIsRefused() throws {
        let context = try Context()
        let first = try ZAPHandler(context: context) { _ in .deny(reason: "") }
        let error = #expect(throws: ZeroMQError.self) { try ZAPHandler(context: context) { _ in .deny(reason: "") } }
        #expect(error?.code == ZeroMQError.Code.addressInUse)
        _ = first
    }
}
