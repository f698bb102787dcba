import CohortCoordinator
import CohortPeerSupport
import CohortWire
import Foundation
import Testing

@Suite struct HandshakeTests {
    @Test func workersAndClientsAreWelcomedWithTheirSessionIDsAndTheHeartbeatSettings() async throws {
        try await withCoordinator(configure: {
            $0.heartbeatInterval = .milliseconds(700)
            $0.heartbeatLiveness = 5
        }) {
            cluster in
            let worker = try cluster.peer()
            let welcome = try worker.hello(role: .worker, name: "w")
            #expect(welcome.peerID.hasPrefix("w-"))
            #expect(welcome.heartbeatInterval == .milliseconds(700))
            #expect(welcome.heartbeatLiveness == 5)
            #expect(welcome.protocolVersion == WireVersion.current)
            let client = try cluster.peer()
            let clientWelcome = try client.hello(role: .client, name: "c")
            #expect(clientWelcome.peerID.hasPrefix("c-"))
            #expect(clientWelcome.epoch == welcome.epoch)
        }
    }

    @Test func aPeerOfAnotherProtocolVersionIsToldBothVersions() async throws {
        try await withCoordinator { cluster in
            let peer = try cluster.peer()
            var frames = try WireCodec().encode(
                .handshake(.hello(Hello(role: .client, protocolVersion: 4, softwareVersion: "9", peerName: "future"))))
            frames[0][4] = 0
            frames[0][5] = 4
            try peer.sendRaw(frames)
            let refusal = try peer.expect("HANDSHAKE ERROR") { message -> HandshakeError? in
                if case .handshake(.error(let error)) = message { return error }
                return nil
            }
            #expect(refusal.code == .unsupportedVersion)
            #expect(refusal.message == "protocol version 4 is not supported; this coordinator speaks 3")
            #expect(cluster.coordinator.counters.wrongVersion == 1)
            // The coordinator keeps serving.
            let client = try cluster.client()
            guard case .groups = try client.request(.status(group: nil)) else {
                Issue.record("status failed after a wrong-version peer")
                return
            }
        }
    }

    @Test func aHelloWhoseBodyVersionDiffersFromItsHeaderIsRefusedAsAnUnsupportedVersion() async throws {
        try await withCoordinator { cluster in
            let peer = try cluster.peer()
            try peer.send(
                .handshake(.hello(Hello(role: .worker, protocolVersion: 7, softwareVersion: "x", peerName: "w"))))
            let refusal = try peer.expect("HANDSHAKE ERROR") { message -> HandshakeError? in
                if case .handshake(.error(let error)) = message { return error }
                return nil
            }
            // The peer speaks the body's version: refused as a version mismatch naming both.
            #expect(refusal.code == .unsupportedVersion)
            #expect(refusal.message == "protocol version 7 is not supported; this coordinator speaks 3")
            #expect(refusal.supportedVersions == WireVersion.supported)
            #expect(cluster.coordinator.counters.wrongVersion == 1)
            #expect(cluster.coordinator.counters.badFrames == 0)
            // The coordinator keeps serving the next peer.
            let worker = try cluster.peer()
            #expect(try worker.hello(role: .worker, name: "w").peerID.hasPrefix("w-"))
        }
    }

    @Test func garbageFramesAreCountedAnsweredAndTheCoordinatorKeepsServing() async throws {
        try await withCoordinator { cluster in
            let stranger = try cluster.peer()
            try stranger.sendRaw([[0xDE, 0xAD, 0xBE, 0xEF], [1, 2, 3]])
            let refusal = try stranger.expect("HANDSHAKE ERROR") { message -> HandshakeError? in
                if case .handshake(.error(let error)) = message { return error }
                return nil
            }
            #expect(refusal.code == .badFrame)
            // Random bytes of every length, from a peer without a session and from a client.
            var generator = SystemRandomNumberGenerator()
            for length in 0..<50 {
                try stranger.sendRaw([(0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }])
            }
            let client = try cluster.client()
            try client.sendRaw([Array("CHRT".utf8) + [0, UInt8(WireVersion.current), 2, 1], [0xFF, 0xFF, 0xFF]])
            let error = try client.expect("ERROR REPLY") { message -> ProtocolError? in
                if case .coordinatorReply(let reply) = message, reply.requestID == 0,
                    case .error(let error) = reply.kind
                {
                    return error
                }
                return nil
            }
            #expect(error.code == .badFrame)
            // Still serving: a worker and a submit go through.
            let worker = try cluster.worker("w1")
            guard case .submitted = try client.submit("children: [{name: a, run: echo}]") else {
                Issue.record("submit failed after garbage")
                return
            }
            let tasks = try worker.dispatched()
            #expect(tasks.map(\.ref.path) == ["a"])
            #expect(cluster.coordinator.counters.badFrames >= 2)
        }
    }

    @Test func aMessageWithoutASessionAsksForAHandshake() async throws {
        try await withCoordinator { cluster in
            let peer = try cluster.peer()
            try peer.send(.clientRequest(ClientRequest(requestID: 5, .workers)))
            let error = try peer.expect("ERROR REPLY") { message -> ProtocolError? in
                if case .coordinatorReply(let reply) = message, reply.requestID == 5,
                    case .error(let error) = reply.kind
                {
                    return error
                }
                return nil
            }
            #expect(error.code == .handshakeRequired)
            try peer.send(.worker(.heartbeat(sequence: 0)))
            let workerError = try peer.expect("WORKER ERROR") { message -> WorkerError? in
                if case .toWorker(.error(let error)) = message { return error }
                return nil
            }
            #expect(workerError.code == .handshakeRequired)
        }
    }

    @Test func stoppingTellsWorkersAndClientsAndReturnsPromptly() async throws {
        let configuration = CoordinatorConfiguration(endpoint: "tcp://127.0.0.1:*")
        let coordinator = Coordinator(configuration: configuration, logger: .init(label: "test"))
        let service = Task { try await coordinator.run() }
        defer { service.cancel() }
        let endpoint = try await coordinator.boundEndpoint()
        let cluster = CoordinatorHandle(coordinator: coordinator, endpoint: endpoint, service: service)
        let worker = try cluster.worker("w1")
        let client = try cluster.client()
        _ = try client.request(.workers)
        let start = ContinuousClock.now
        service.cancel()
        try await service.value
        #expect(ContinuousClock.now - start < .seconds(2))
        let notice = try worker.expect("SHUTDOWN NOTICE") { message -> ShutdownNotice? in
            if case .toWorker(.shutdown(let notice)) = message { return notice }
            return nil
        }
        #expect(!notice.restarting)
        let error = try client.expect("SHUTTING DOWN") { message -> ProtocolError? in
            if case .coordinatorReply(let reply) = message, case .error(let error) = reply.kind { return error }
            return nil
        }
        #expect(error.code == .shuttingDown)
    }

    @Test func aSecondRunIsRefusedAndAnInvalidConfigurationThrows() async throws {
        let bad = CoordinatorConfiguration(endpoint: "nonsense")
        await #expect(throws: CoordinatorConfigurationError.self) {
            try await Coordinator(configuration: bad, logger: .init(label: "test")).run()
        }
        _ = try await withCoordinator { cluster in
            await #expect(throws: CoordinatorError.self) { try await cluster.coordinator.run() }
        }
    }
}
