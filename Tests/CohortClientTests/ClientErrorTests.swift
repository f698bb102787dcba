import CohortClient
import CohortPeerSupport
import CohortSpec
import CohortTestSupport
import CohortWire
import Foundation
import Testing

/// Every `ClientError` code a client can get, each from the situation that causes it: a fake
/// coordinator (a ROUTER) where the coordinator must misbehave, a real in-process one otherwise.
@Suite struct ClientErrorTests {
    // MARK: Connecting

    /// A refused connection is an answer: unreachable at once, saying so, not after the
    /// connect timeout (60 s here, so waiting it out would fail the bound; the bound is wide
    /// because a loaded machine may take seconds to run the client's first turns).
    @Test func nothingListeningIsUnreachableAtOnce() async throws {
        let unused = try UnusedEndpoint()
        let endpoint = unused.endpoint
        let start = ContinuousClock.now
        let error = await clientError {
            try await CohortClient.connect(configuration(endpoint) { $0.connectTimeout = .seconds(60) })
        }
        let took = ContinuousClock.now - start
        #expect(error?.code == .unreachable)
        #expect(error?.message.contains(endpoint) == true, "names the endpoint: \(error?.message ?? "")")
        #expect(error?.message.contains("refused") == true, "says it was refused: \(error?.message ?? "")")
        #expect(error?.exitCode == 69)
        #expect(took < .seconds(15), "gave up after \(took)")
        withExtendedLifetime(unused) {}
    }

    /// A coordinator that accepts the connection but never answers: unreachable after the
    /// connect timeout, naming it.
    @Test func aSilentCoordinatorIsUnreachableAfterTheConnectTimeout() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*", behaviour: .init(welcomes: []))
        defer { fake.stop() }
        let start = ContinuousClock.now
        let error = await clientError {
            try await CohortClient.connect(configuration(fake.endpoint) { $0.connectTimeout = .milliseconds(500) })
        }
        let took = ContinuousClock.now - start
        #expect(error?.code == .unreachable)
        #expect(error?.message.contains("500 ms") == true, "names the timeout: \(error?.message ?? "")")
        #expect(took >= .milliseconds(500), "gave up after \(took)")
    }

    @Test func aCoordinatorThatNeverWelcomesIsUnreachable() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*", behaviour: .init(welcomes: []))
        defer { fake.stop() }
        let error = await clientError {
            try await CohortClient.connect(configuration(fake.endpoint) { $0.connectTimeout = .milliseconds(500) })
        }
        #expect(error?.code == .unreachable)
        let hello = try await fake.hello()
        #expect(hello.role == .client)
        #expect(hello.peerName == "client-tests")
    }

    @Test func aMalformedEndpointOrSettingIsRejectedBeforeConnecting() async throws {
        let endpoint = await clientError {
            try await CohortClient.connect(ClientConfiguration(coordinator: "127.0.0.1:7400"))
        }
        #expect(endpoint?.code == .rejected)
        #expect(endpoint?.message.hasPrefix("coordinator:") == true, "\(endpoint?.message ?? "")")
        #expect(endpoint?.exitCode == 64)
        let timeout = await clientError {
            try await CohortClient.connect(configuration("tcp://127.0.0.1:1") { $0.requestTimeout = .zero })
        }
        #expect(timeout?.code == .rejected)
        #expect(timeout?.message.hasPrefix("requestTimeout:") == true, "\(timeout?.message ?? "")")
    }

    @Test func aWelcomeInAnotherProtocolVersionIsAMismatchNamingBothVersions() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*", behaviour: .init(welcomes: []))
        defer { fake.stop() }
        let connecting = Task { await clientError { try await CohortClient.connect(configuration(fake.endpoint)) } }
        _ = try await fake.hello()
        // "CHRT", the next protocol version, family 1 (handshake), kind 2 (welcome), and a body.
        let future = UInt8(WireVersion.current + 1)
        try fake.sendRaw([Array("CHRT".utf8) + [0, future, 1, 2], Array("welcome from the future".utf8)])
        let error = try await within(Deadline.event, "the refused connect") { await connecting.value }
        #expect(error?.code == .protocolMismatch)
        #expect(error?.message.contains("speaks protocol version \(future)") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("this client speaks \(WireVersion.current)") == true, "\(error?.message ?? "")")
    }

    /// The coordinator's handshake refusals, by code: another version is a mismatch (its
    /// message names the versions), a refused key is a permission error, a stopping
    /// coordinator says so.
    @Test(arguments: [
        (
            HandshakeError.unsupportedVersion(9), ClientError.Code.protocolMismatch,
            "protocol version 9 is not supported; this coordinator speaks \(WireVersion.current)"
        ),
        (
            HandshakeError(code: .permissionDenied, message: "key not authorised"), .permissionDenied,
            "key not authorised"
        ),
        (HandshakeError(code: .shuttingDown, message: "coordinator stopping"), .shuttingDown, "coordinator stopping"),
    ])
    func aHandshakeRefusalBecomesItsCode(refusal: HandshakeError, code: ClientError.Code, words: String) async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*", behaviour: .init(welcomes: []))
        defer { fake.stop() }
        let connecting = Task { await clientError { try await CohortClient.connect(configuration(fake.endpoint)) } }
        _ = try await fake.hello()
        fake.send(wire: .handshake(.error(refusal)))
        let error = try await within(Deadline.event, "the refused connect") { await connecting.value }
        #expect(error?.code == code)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(fake.endpoint) == true, "names the endpoint: \(error?.message ?? "")")
        if code == .permissionDenied { #expect(error?.exitCode == 77) }
    }

    // MARK: Requests a real coordinator refuses

    @Test func anUnknownGroupIsNotFound() async throws {
        try await withCoordinator { coordinator in
            try await CohortClient.withClient(configuration(coordinator.endpoint)) { client in
                let status = await clientError { try await client.status("g-nope") }
                #expect(status?.code == .notFound)
                #expect(status?.message.contains("g-nope") == true, "\(status?.message ?? "")")
                #expect(status?.exitCode == 64)
                #expect(await clientError { try await client.result("g-nope", child: nil) }?.code == .notFound)
                #expect(await clientError { try await client.cancel("g-nope") }?.code == .notFound)
                #expect(await clientError { try await client.drain(worker: "nobody") }?.code == .notFound)
            }
        }
    }

    @Test func anInvalidSpecNamesEveryFaultByItsPath() async throws {
        try await withCoordinator { coordinator in
            try await CohortClient.withClient(configuration(coordinator.endpoint)) { client in
                let spec = """
                    children:
                      - {name: a, run: echo}
                      - {name: a, run: echo}
                      - {name: c, run: echo, after: [nope]}
                    """
                let error = await clientError { try await client.submit(specText: spec, sourceName: "bad.yaml") }
                #expect(error?.code == .invalidSpec)
                #expect(error?.exitCode == 65)
                let paths = Set(error?.specErrors.map { $0.path } ?? [])
                #expect(paths == ["children[1].name", "children[2].after[0]"], "\(error?.description ?? "")")
                #expect(error?.message.contains("bad.yaml") == true)
                // Nothing reached the coordinator.
                let groups = try await client.status()
                #expect(groups.isEmpty)
            }
        }
    }

    @Test func theCoordinatorsSpecErrorsArriveWithTheirPaths() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { fake.stop() }
        let client = try await CohortClient.connect(configuration(fake.endpoint))
        let submitting = Task { await clientError { try await client.submit(specText: pendingSpec) } }
        let (request, from) = try await fake.awaitRequest("SUBMIT") { if case .submit = $0 { true } else { false } }
        let faults = [CohortWire.SpecError(path: "children[0].run", message: "no procedure kind echo here")]
        try fake.reply(
            request.requestID, .error(ProtocolError(code: .invalidSpec, message: "invalid spec", specErrors: faults)),
            to: from)
        let error = try await within(Deadline.event, "the refused submit") { await submitting.value }
        #expect(error?.code == .invalidSpec)
        #expect(error?.specErrors.map { $0.path } == ["children[0].run"])
        #expect(error?.description.contains("no procedure kind echo here") == true, "\(error?.description ?? "")")
        await client.close()
    }

    @Test func aSpecOverTheCoordinatorsLimitIsASpecErrorNamingTheLimit() async throws {
        try await withCoordinator(configure: { $0.specLimits.maxSpecBytes = 100 }) { coordinator in
            try await CohortClient.withClient(configuration(coordinator.endpoint)) { client in
                let long = String(repeating: "x", count: 200)
                let error = await clientError {
                    try await client.submit(
                        specText: "name: big\nchildren: [{name: a, run: echo, with: {text: \(long)}}]")
                }
                #expect(error?.code == .invalidSpec)
                #expect(error?.specErrors.count == 1)
                #expect(
                    error?.specErrors.first?.message.contains("specLimits.maxSpecBytes") == true,
                    "\(error?.description ?? "")")
                #expect(error?.description.contains("specLimits.maxSpecBytes") == true, "\(error?.description ?? "")")
                #expect(error?.exitCode == 65)
                // A small one still goes through.
                _ = try await client.submit(specText: pendingSpec)
            }
        }
    }

    @Test func aGroupIDReusedForAnotherSpecIsRejected() async throws {
        try await withCoordinator { coordinator in
            try await CohortClient.withClient(configuration(coordinator.endpoint)) { client in
                let first = try await client.submit(specText: pendingSpec, id: "nightly-1")
                #expect(first.id == "nightly-1")
                let again = try await client.submit(specText: pendingSpec, id: "nightly-1")
                #expect(again.alreadySubmitted)
                let error = await clientError {
                    try await client.submit(
                        specText: "name: other\nchildren: [{name: b, run: echo, with: {text: hi}}]", id: "nightly-1")
                }
                #expect(error?.code == .rejected)
            }
        }
    }

    /// What only a misbehaving or locked-down coordinator says, played by the fake.
    @Test(arguments: [
        (ProtocolError.Code.permissionDenied, ClientError.Code.permissionDenied),
        (.internal, .internal),
        (.tooLarge, .rejected),
        (.invalidRequest, .rejected),
        (.shuttingDown, .shuttingDown),
        (.badFrame, .protocolMismatch),
        (.noCapableWorker, .noCapableWorker),
    ])
    func aRequestRefusalBecomesItsCode(refusal: ProtocolError.Code, code: ClientError.Code) async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { fake.stop() }
        let client = try await CohortClient.connect(configuration(fake.endpoint))
        let draining = Task { await clientError { try await client.drain(worker: "w1") } }
        let (request, from) = try await fake.awaitRequest("DRAIN") { if case .drain = $0 { true } else { false } }
        #expect(request.kind == .drain(worker: "w1"))
        try fake.reply(
            request.requestID, .error(ProtocolError(code: refusal, message: "refused: \(refusal)")), to: from)
        let error = try await within(Deadline.event, "the refused drain") { await draining.value }
        #expect(error?.code == code)
        #expect(error?.message == "refused: \(refusal)")
        await client.close()
    }

    /// `status(filter:)` sends its filter and returns the list as the coordinator ordered it;
    /// `undrain(worker:)` sends an UndrainRequest and returns once acknowledged.
    @Test func aFilteredStatusAndAnUndrainSayWhatTheyAsk() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { fake.stop() }
        let client = try await CohortClient.connect(configuration(fake.endpoint))
        let filter = GroupFilter(states: [.failed], nameGlob: "release-*", limit: 3)
        let listing = Task { try await client.status(filter: filter) }
        let (asked, from) = try await fake.awaitRequest("STATUS with a filter") {
            $0 == .status(group: nil, filter: filter)
        }
        let groups = [
            GroupSummary(
                id: "g-2", name: "release-2", state: .failed, submittedAt: WireTimestamp(nanosecondsSinceEpoch: 2)),
            GroupSummary(
                id: "g-1", name: "release-1", state: .failed, submittedAt: WireTimestamp(nanosecondsSinceEpoch: 1)),
        ]
        try fake.reply(asked.requestID, .groups(groups), to: from)
        #expect(try await within(Deadline.event, "the list") { try await listing.value } == groups)

        let undraining = Task { try await client.undrain(worker: "w1") }
        let (request, sender) = try await fake.awaitRequest("UNDRAIN") { $0 == .undrain(worker: "w1") }
        try fake.reply(request.requestID, .acknowledged, to: sender)
        try await within(Deadline.event, "the undrain") { try await undraining.value }
        await client.close()
    }

    // MARK: The connection

    @Test func aCoordinatorThatStopsAnsweringIsConnectionLostAfterTheRequestTimeout() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { fake.stop() }
        let client = try await CohortClient.connect(
            configuration(fake.endpoint) { $0.requestTimeout = .milliseconds(300) })
        let start = ContinuousClock.now
        let error = await clientError { try await client.workers() }
        #expect(error?.code == .connectionLost)
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        // The request did reach it.
        _ = try await fake.awaitRequest("WORKERS") { $0 == .workers }
        await client.close()
    }

    @Test func callsOnAClosedClientAndCallsInFlightFailClosed() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { fake.stop() }
        let client = try await CohortClient.connect(configuration(fake.endpoint))
        let inFlight = Task { await clientError { try await client.locks() } }
        _ = try await fake.awaitRequest("LOCKS") { $0 == .locks }
        await client.close()
        let error = try await within(Deadline.event, "the call in flight") { await inFlight.value }
        #expect(error?.code == .closed)
        #expect(await clientError { try await client.status() }?.code == .closed)
        // Closing said goodbye.
        _ = try await fake.awaitRequest("DISCONNECT") { if case .disconnect = $0 { true } else { false } }
        await client.close()  // idempotent
    }

    @Test func aCancelledCallFailsCancelled() async throws {
        let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
        defer { fake.stop() }
        let client = try await CohortClient.connect(configuration(fake.endpoint))
        let call = Task { await clientError { try await client.status("g-1") } }
        _ = try await fake.awaitRequest("STATUS") { $0 == .status(group: "g-1") }
        call.cancel()
        let error = try await within(Deadline.event, "the cancelled call") { await call.value }
        #expect(error?.code == .cancelled)
        #expect(error?.exitCode == 130)
        // The client serves the next call.
        let next = Task { try await client.status() }
        let (request, from) = try await fake.awaitRequest("STATUS of every group") { $0 == .status(group: nil) }
        try fake.reply(request.requestID, .groups([]), to: from)
        #expect(try await within(Deadline.event, "the next call") { try await next.value }.isEmpty)
        await client.close()
    }
}
