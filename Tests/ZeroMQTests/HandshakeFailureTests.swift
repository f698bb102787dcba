import Testing

@testable import ZeroMQ

/// Failed handshakes are described in words, never as a bare libzmq code.
@Suite struct HandshakeFailureTests {
    @Test func aMechanismMismatchIsNamedNotNumbered() {
        // 285212674 = ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH: a plaintext peer of a CURVE server.
        let event = MonitorEvent(kind: .handshakeFailedProtocol, value: 285_212_674, endpoint: "tcp://127.0.0.1:1")
        #expect(event.handshakeFailureDetail == "the two sides use different security mechanisms")
        let explanation = event.handshakeFailureExplanation(curve: false) ?? ""
        #expect(explanation.contains("requires CURVE") && !explanation.contains("285212674"), "\(explanation)")
    }

    @Test func aClosedConnectionNamesItsErrno() {
        let event = MonitorEvent(kind: .handshakeFailedNoDetail, value: 32, endpoint: "tcp://127.0.0.1:1")  // EPIPE
        #expect(event.handshakeFailureDetail.contains("Broken pipe"), "\(event.handshakeFailureDetail)")
    }

    @Test func anUnknownProtocolErrorIsShownInHex() {
        let event = MonitorEvent(kind: .handshakeFailedProtocol, value: 0x1000_0018, endpoint: "tcp://127.0.0.1:1")
        #expect(event.handshakeFailureDetail == "ZMTP protocol error 0x10000018")
    }
}
