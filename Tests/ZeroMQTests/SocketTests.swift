import CohortTestSupport
import Testing

@testable import ZeroMQ

@Suite struct SocketTests {
    @Test func requestAndReplyRoundTripOverTCP() throws {
        let context = try Context()
        let server = try context.socket(.rep)
        let endpoint = try server.bindLoopback()
        let client = try context.socket(.req)
        try client.connect(endpoint)

        try client.send([[UInt8]("ping")])
        let request = try #require(try server.receiveFrames(wait: .upTo(Deadline.event)))
        #expect(request == [[UInt8]("ping")])
        try server.send([[UInt8]("pong"), [UInt8]("!")])
        let reply = try #require(try client.receiveFrames(wait: .upTo(Deadline.event)))
        #expect(reply == [[UInt8]("pong"), [UInt8]("!")])
    }

    @Test func lastEndpointResolvesTheWildcardPort() throws {
        let context = try Context()
        let socket = try context.socket(.router)
        let endpoint = try socket.bindLoopback()
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        #expect(!endpoint.hasSuffix(":*"))
        #expect(Int(endpoint.split(separator: ":").last ?? "") ?? 0 > 0)
    }

    @Test func routerAndDealerExchangeMultipartMessagesByRoutingID() throws {
        let context = try Context()
        let router = try context.socket(.router)
        try router.set(.routerMandatory, to: true)
        let endpoint = try router.bindLoopback()
        let dealers = try (1...2).map { index throws(ZeroMQError) in
            let dealer = try context.socket(.dealer)
            try dealer.set(.routingID, to: [UInt8]("worker-\(index)"))
            try dealer.connect(endpoint)
            return dealer
        }

        for (index, dealer) in dealers.enumerated() {
            try dealer.send([[UInt8]("hello"), [UInt8]("from \(index + 1)")])
        }
        var seen: Set<[UInt8]> = []
        for _ in dealers {
            let frames = try #require(try router.receiveFrames(wait: .upTo(Deadline.event)))
            #expect(frames.count == 3)
            #expect(frames[1] == [UInt8]("hello"))
            #expect(frames[0] == [UInt8]("worker-") + Array(frames[2].suffix(1)))
            seen.insert(frames[0])
        }
        #expect(seen == [[UInt8]("worker-1"), [UInt8]("worker-2")])

        // Replies reach exactly the peer they are routed to.
        try router.send(to: [UInt8]("worker-2"), [[UInt8]("for"), [UInt8]("two")])
        try router.send(to: [UInt8]("worker-1"), [[UInt8]("for"), [UInt8]("one")])
        #expect(try dealers[0].receiveFrames(wait: .upTo(Deadline.event)) == [[UInt8]("for"), [UInt8]("one")])
        #expect(try dealers[1].receiveFrames(wait: .upTo(Deadline.event)) == [[UInt8]("for"), [UInt8]("two")])
    }

    @Test func routerMandatoryToAnUnknownPeerThrowsHostUnreachable() throws {
        let context = try Context()
        let router = try context.socket(.router)
        try router.set(.routerMandatory, to: true)
        _ = try router.bindLoopback()

        let error = #expect(throws: ZeroMQError.self) {
            try router.send(to: [UInt8]("nobody"), [[UInt8]("lost")])
        }
        #expect(error?.isHostUnreachable == true)
        #expect(error?.code == ZeroMQError.Code.hostUnreachable)
        #expect(error?.call == "zmq_send")
    }

    @Test func routerWithoutMandatoryDropsSilently() throws {
        let context = try Context()
        let router = try context.socket(.router)
        _ = try router.bindLoopback()
        #expect(try router.send(to: [UInt8]("nobody"), [[UInt8]("lost")]))
    }

    @Test func fourMebibyteMessageRoundTripsIntact() throws {
        let context = try Context()
        let server = try context.socket(.rep)
        let endpoint = try server.bindLoopback()
        let client = try context.socket(.req)
        try client.connect(endpoint)

        let size = 4 * 1024 * 1024
        let outgoing = try Message(count: size)
        outgoing.withUnsafeMutableBytes { buffer in
            for index in 0..<size { buffer[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 7) }
        }
        let expected = outgoing.bytes
        try client.send(outgoing)
        #expect(outgoing.count == 0, "a sent message is handed to libzmq")

        // The server echoes the very Message it received: no copy on either side.
        let request = try #require(try server.receive(wait: .upTo(Deadline.event)))
        #expect(request.count == 1)
        #expect(request[0].count == size)
        try server.send(request)

        let reply = try #require(try client.receive(wait: .upTo(Deadline.event)))
        #expect(reply.count == 1)
        #expect(reply[0].bytes == expected)
    }

    @Test func nonBlockingAndTimedReceivesReturnNilWhenNothingArrives() throws {
        let context = try Context()
        let socket = try context.socket(.pull)
        try socket.bind("inproc://idle")
        #expect(try socket.receiveFrames(wait: .never) == nil)
        let message = Message()
        #expect(try socket.receive(into: message, wait: .never) == false)
        var frames: [Message]? = []
        let waited = try elapsed { frames = try socket.receive(wait: .upTo(.milliseconds(50))) }
        #expect(frames == nil)
        #expect(waited >= .milliseconds(45))
    }

    @Test func timedSendReturnsFalseWhenThePeerIsFull() throws {
        let context = try Context()
        let push = try context.socket(.push)
        try push.set(.sendHighWaterMark, to: 1)
        try push.bind("inproc://full")
        // No puller: a PUSH with no peers cannot send at all.
        #expect(try push.send([[UInt8]("x")], wait: .never) == false)
        var sent = true
        let waited = try elapsed { sent = try push.send(bytes: [UInt8]("x"), wait: .upTo(.milliseconds(50))) }
        #expect(!sent)
        #expect(waited >= .milliseconds(45))
    }

    @Test func messagesCarryBytesStringsAndMoreFlags() throws {
        let context = try Context()
        let pull = try context.socket(.pull)
        try pull.bind("inproc://frames")
        let push = try context.socket(.push)
        try push.connect("inproc://frames")

        try push.send([try Message("first"), try Message([UInt8]([1, 2, 3]))])
        let frames = try #require(try pull.receive(wait: .upTo(Deadline.event)))
        #expect(frames.map(\.hasMore) == [true, false])
        #expect(frames[0].string == "first")
        #expect(frames[1].bytes == [1, 2, 3])
        #expect(frames[1].userID == nil, "no ZAP, no User-Id")
    }

    @Test func aClosedSocketThrowsNotASocket() throws {
        let context = try Context()
        let socket = try context.socket(.dealer)
        socket.close()
        #expect(socket.isClosed)
        let error = #expect(throws: ZeroMQError.self) { try socket.connect("inproc://x") }
        #expect(error?.code == ZeroMQError.Code.notASocket)
        socket.close()  // idempotent
    }

    @Test func errorsNameTheCallAndTheOption() throws {
        let context = try Context()
        let router = try context.socket(.router)
        let error = #expect(throws: ZeroMQError.self) { try router.set(.subscribe, to: []) }
        #expect(error?.code == ZeroMQError.Code.invalidArgument)
        #expect(error?.call == "zmq_setsockopt(ZMQ_SUBSCRIBE)")
        #expect(error?.description.contains("Invalid argument") == true)

        let connect = #expect(throws: ZeroMQError.self) { try router.connect("bogus://nowhere") }
        #expect(connect?.call == "zmq_connect")
    }
}
