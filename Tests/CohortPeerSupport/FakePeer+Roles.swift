import CohortTestSupport
import CohortWire
import Foundation
import Testing

// MARK: - Playing a worker or a client against a real coordinator (DEALER)

extension FakePeer {
    /// Says HELLO as `role` and waits for the WELCOME (a refusal is recorded as an issue).
    @discardableResult
    public func hello(role: PeerRole, name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Welcome
    {
        try send(.handshake(.hello(Hello(role: role, softwareVersion: "test", peerName: name))))
        return try expect("WELCOME", sourceLocation: sourceLocation) { message in
            if case .handshake(.welcome(let welcome)) = message { return welcome }
            if case .handshake(.error(let error)) = message {
                Issue.record("refused: \(error)", sourceLocation: sourceLocation)
            }
            return nil
        }
    }

    /// Sends a client request and waits for the reply with its id.
    public func request(_ kind: ClientRequest.Kind, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> CoordinatorReply.Kind
    {
        let id = makeRequestID()
        try send(.clientRequest(ClientRequest(requestID: id, kind)))
        return try expect("reply to request \(id)", sourceLocation: sourceLocation) { message in
            if case .coordinatorReply(let reply) = message, reply.requestID == id { return reply.kind }
            return nil
        }
    }

    /// Submits a YAML spec; returns the reply.
    public func submit(_ yaml: String, id: String? = nil, strict: Bool = false) throws -> CoordinatorReply.Kind {
        try request(
            .submit(Submission(groupID: id, document: yaml, format: .yaml, sourceName: "test.yaml", strict: strict)))
    }

    public func status(_ group: String) throws -> GroupDetail {
        let reply = try request(.status(group: group))
        guard case .group(let detail) = reply else { throw UnexpectedReply(reply: reply) }
        return detail
    }

    /// Polls the group's status until `predicate` holds.
    @discardableResult
    public func waitForStatus(
        _ group: String, timeout: Duration = Deadline.event, sourceLocation: SourceLocation = #_sourceLocation,
        until predicate: (GroupDetail) -> Bool
    ) throws -> GroupDetail {
        let deadline = ContinuousClock.now + timeout
        var last = try status(group)
        while !predicate(last), ContinuousClock.now < deadline {
            sleepBriefly(.milliseconds(10))
            last = try status(group)
        }
        #expect(
            predicate(last),
            "status never matched; last: \(last.state) \(last.children.map { "\($0.path)=\($0.state)" })",
            sourceLocation: sourceLocation)
        return last
    }

    /// The next dispatch (its attempts).
    public func dispatched(timeout: Duration = Deadline.event, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [AttemptDispatch]
    {
        try expect("DISPATCH", timeout: timeout, sourceLocation: sourceLocation) { message in
            if case .toWorker(.dispatch(let attempts)) = message { return attempts }
            return nil
        }
    }

    /// Reports an attempt started and finished with `outcome`.
    public func finish(_ attempt: AttemptDispatch, _ outcome: WireOutcome) throws {
        let now = WireTimestamp(Date())
        try send(.worker(.started([AttemptStart(ref: attempt.ref, startedAt: now)])))
        try send(
            .worker(.results([AttemptResult(ref: attempt.ref, outcome: outcome, startedAt: now, finishedAt: now)])))
    }
}

// MARK: - Playing the coordinator for a real worker or client (ROUTER)

extension FakePeer {
    /// Sends `message` to the last peer that said HELLO (the worker under test); a peer that is
    /// gone is not an error here (the worker may be reconnecting).
    public func send(_ message: CoordinatorToWorker) {
        try? send(.toWorker(message))
    }

    /// Sends any wire message (a handshake error, …) to the last peer that said HELLO, or to `peer`.
    public func send(wire message: WireMessage, to peer: [UInt8]? = nil) {
        try? send(message, to: peer)
    }

    /// The next HELLO (from any role).
    public func hello(timeout: Duration = Deadline.event) async throws -> Hello {
        try await next("HELLO", timeout: timeout) {
            if case .handshake(.hello(let hello))? = $0.message { hello } else { nil }
        }
    }

    /// The next READY.
    public func ready(timeout: Duration = Deadline.event) async throws -> WorkerReady {
        try await workerMessage("READY", timeout: timeout) { if case .ready(let ready) = $0 { ready } else { nil } }
    }

    /// The result of the attempt `attemptID`, from whichever results batch carries it.
    public func result(_ attemptID: UInt64, timeout: Duration = Deadline.event) async throws -> AttemptResult {
        let received = try await inbox.take("the result of attempt \(attemptID)", timeout: timeout) {
            if case .worker(.results(let results))? = $0.message {
                results.contains { $0.ref.id == attemptID }
            } else {
                false
            }
        }
        guard case .worker(.results(let results))? = received.message else { fatalError() }
        // Put the batch's other results back for later waits.
        let others = results.filter { $0.ref.id != attemptID }
        if !others.isEmpty {
            inbox.post(
                Received(routingID: received.routingID, frames: [], decoded: .success(.worker(.results(others)))))
        }
        return results.first { $0.ref.id == attemptID }!
    }

    /// The first worker message that `extract` turns into a value.
    public func workerMessage<T: Sendable>(
        _ what: String, timeout: Duration = Deadline.event, _ extract: @escaping @Sendable (WorkerMessage) -> T?
    ) async throws -> T {
        try await next(what, timeout: timeout) {
            if case .worker(let message)? = $0.message { extract(message) } else { nil }
        }
    }

    /// Whether the worker ever sent a result for `attemptID`.
    public func sawResult(_ attemptID: UInt64) -> Bool {
        inbox.contains {
            if case .worker(.results(let results))? = $0.message {
                results.contains { $0.ref.id == attemptID }
            } else {
                false
            }
        }
    }

    /// The next client request `extract` accepts, with the routing id to answer it at.
    public func clientRequest<T: Sendable>(
        _ what: String, timeout: Duration = Deadline.event, _ extract: @escaping @Sendable (ClientRequest) -> T?
    ) async throws -> (request: ClientRequest, value: T, from: [UInt8]) {
        try await next(what, timeout: timeout) { received in
            guard case .clientRequest(let request)? = received.message, let value = extract(request) else { return nil }
            return (request, value, received.routingID)
        }
    }

    /// Answers the client request `requestID` of the client at `peer`.
    public func reply(_ requestID: UInt64, _ kind: CoordinatorReply.Kind, to peer: [UInt8]) throws {
        try send(.coordinatorReply(CoordinatorReply(requestID: requestID, kind)), to: peer)
    }
}
