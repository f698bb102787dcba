import CohortTestSupport
import Testing

@testable import ZeroMQ

@Suite struct OptionsTests {
    @Test func typedOptionsRoundTrip() throws {
        let context = try Context()
        let socket = try context.socket(.router)
        try socket.set(.sendHighWaterMark, to: 123)
        try socket.set(.receiveHighWaterMark, to: 456)
        try socket.set(.immediate, to: true)
        try socket.set(.routingID, to: [UInt8]("router-a"))
        try socket.set(.reconnectInterval, to: .milliseconds(50))
        try socket.set(.reconnectIntervalMax, to: .seconds(2))
        try socket.set(.heartbeatInterval, to: .milliseconds(500))
        try socket.set(.heartbeatTTL, to: .milliseconds(1500))
        try socket.set(.heartbeatTimeout, to: .milliseconds(1200))
        try socket.set(.maxMessageSize, to: 1 << 20)
        try socket.set(.sendTimeout, to: .milliseconds(250))
        try socket.set(.receiveTimeout, to: .milliseconds(-1))
        try socket.set(.zapDomain, to: "cohort")
        try socket.set(.zapEnforceDomain, to: true)

        #expect(try socket.get(.sendHighWaterMark) == 123)
        #expect(try socket.get(.receiveHighWaterMark) == 456)
        #expect(try socket.get(.immediate) == true)
        #expect(try socket.get(.routingID) == [UInt8]("router-a"))
        #expect(try socket.get(.reconnectInterval) == .milliseconds(50))
        #expect(try socket.get(.reconnectIntervalMax) == .seconds(2))
        #expect(try socket.get(.heartbeatInterval) == .milliseconds(500))
        #expect(try socket.get(.heartbeatTTL) == .milliseconds(1500))
        #expect(try socket.get(.heartbeatTimeout) == .milliseconds(1200))
        #expect(try socket.get(.maxMessageSize) == 1 << 20)
        #expect(try socket.get(.sendTimeout) == .milliseconds(250))
        #expect(try socket.get(.receiveTimeout) == .milliseconds(-1))
        #expect(try socket.get(.zapDomain) == "cohort")
        #expect(try socket.get(.zapEnforceDomain) == true)
        #expect(try socket.get(.int32(23)) == 123, "generic int access by number (ZMQ_SNDHWM)")
        try socket.set(.int32(23), to: 7)
        #expect(try socket.get(.sendHighWaterMark) == 7)
    }

    @Test func curveOptionsHoldTheKeys() throws {
        let context = try Context()
        let server = try context.socket(.router)
        let keys = try CurveKeyPair.generate()
        try server.makeCurveServer(secretKey: keys.secretKey)
        #expect(try server.get(.curveServer) == true)
        #expect(try server.get(.curveSecretKey) == keys.secretKey)
        #expect(try server.get(.zapDomain) == "cohort")
        #expect(try server.get(.zapEnforceDomain) == true)

        let client = try context.socket(.dealer)
        let clientKeys = try CurveKeyPair.generate()
        try client.makeCurveClient(keyPair: clientKeys, serverKey: keys.publicKey)
        #expect(try client.get(.curveServerKey) == keys.publicKey)
        #expect(try client.get(.curvePublicKey) == clientKeys.publicKey)
        #expect(try client.get(.curveServer) == false)
    }

    @Test func receiveTimeoutMakesABlockingReceiveReturnNil() throws {
        let context = try Context()
        let socket = try context.socket(.pull)
        try socket.set(.receiveTimeout, to: .milliseconds(30))
        try socket.bind("inproc://rcvtimeo")
        #expect(try socket.receiveFrames() == nil)
    }

    @Test func subscribersGetOnlyTheirPrefix() throws {
        let context = try Context()
        let pub = try context.socket(.pub)
        try pub.bind("inproc://news")
        let sub = try context.socket(.sub)
        try sub.subscribe(to: [UInt8]("cohort."))
        try sub.connect("inproc://news")
        // Subscriptions travel to the publisher asynchronously: publish until one lands.
        let deadline = ContinuousClock.now + Deadline.event
        var received: [[UInt8]]?
        while received == nil, ContinuousClock.now < deadline {
            try pub.send([[UInt8]("other.topic")])
            try pub.send([[UInt8]("cohort.topic")])
            received = try sub.receiveFrames(wait: .upTo(.milliseconds(10)))
        }
        #expect(received == [[UInt8]("cohort.topic")])
    }
}
