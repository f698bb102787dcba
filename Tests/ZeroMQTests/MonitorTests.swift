import CohortTestSupport
import Testing

@testable import ZeroMQ

@Suite struct MonitorTests {
    @Test func connectionEventsAreDecodedWithTheirEndpoints() throws {
        let context = try Context()
        let server = try context.socket(.router)
        let serverEvents = try server.monitor()
        let endpoint = try server.bindLoopback()
        let listening = try serverEvents.waitFor(timeout: Deadline.event) { $0.kind == .listening }
        #expect(listening?.endpoint == endpoint)

        let client = try context.socket(.dealer)
        let clientEvents = try client.monitor()
        try client.connect(endpoint)
        let connected = try clientEvents.waitFor(timeout: Deadline.event) { $0.kind == .connected }
        #expect(connected?.endpoint == endpoint)
        #expect(try serverEvents.waitFor(timeout: Deadline.event) { $0.kind == .accepted } != nil)
        #expect(try serverEvents.waitFor(timeout: Deadline.event) { $0.kind == .handshakeSucceeded } != nil)

        client.close()
        #expect(try serverEvents.waitFor(timeout: Deadline.event) { $0.kind == .disconnected } != nil)
        clientEvents.close()
        serverEvents.close()
    }

    @Test func closingTheMonitoredSocketEndsWithMonitorStopped() throws {
        let context = try Context()
        let socket = try context.socket(.pull)
        let events = try socket.monitor()
        _ = try socket.bindLoopback()
        socket.close()
        #expect(try events.waitFor(timeout: Deadline.event) { $0.kind == .closed } != nil)
        #expect(try events.waitFor(timeout: Deadline.event) { $0.kind == .monitorStopped } != nil)
    }

    @Test func maxMessageSizeDisconnectsAnOversizePeer() throws {
        let context = try Context()
        let server = try context.socket(.pull)
        try server.set(.maxMessageSize, to: 1024)
        let events = try server.monitor()
        let endpoint = try server.bindLoopback()
        let client = try context.socket(.push)
        try client.connect(endpoint)

        try client.send([[UInt8](repeating: 1, count: 100)])
        #expect(try server.receiveFrames(wait: .upTo(Deadline.event))?.first?.count == 100, "small messages pass")

        try client.send([[UInt8](repeating: 2, count: 4096)])
        #expect(try events.waitFor(timeout: Deadline.event) { $0.kind == .disconnected } != nil)
        #expect(try server.receiveFrames(wait: .upTo(Deadline.silence)) == nil)
    }
}
