import CohortClient
import CohortPeerSupport
import CohortTestSupport
import CohortWire
import Foundation
import Testing

/// Settings for a client of `endpoint` with short timeouts (a failing test fails fast) and
/// every connection change recorded in `changes`.
func configuration(
    _ endpoint: String, changes: Locked<[ConnectionChange]>? = nil,
    configure: (inout ClientConfiguration) -> Void = { _ in }
) -> ClientConfiguration {
    var configuration = ClientConfiguration(coordinator: endpoint)
    configuration.peerName = "client-tests"
    configuration.connectTimeout = .seconds(10)
    configuration.requestTimeout = .seconds(20)
    configuration.reconnectTimeout = .seconds(20)
    if let changes { configuration.onConnectionChange = { change in changes.mutate { $0.append(change) } } }
    configure(&configuration)
    return configuration
}

/// The `ClientError` `body` throws; records an issue if it throws nothing or something else.
func clientError<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async -> ClientError? {
    do {
        let value = try await body()
        Issue.record("expected a ClientError, got \(value)", sourceLocation: sourceLocation)
    } catch let error as ClientError {
        return error
    } catch {
        Issue.record("expected a ClientError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// An endpoint on 127.0.0.1 where nothing listens (a port bound, read and closed).
func unusedEndpoint() throws -> String {
    let fake = try FakePeer(coordinatorAt: "tcp://127.0.0.1:*")
    fake.stop()
    return fake.endpoint
}

/// A fresh, empty state directory for a coordinator's journal, removed by the caller.
func temporaryStateDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-client-tests-\(UUID().uuidString)")
        .path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A group status as a fake coordinator reports it.
func groupDetail(_ id: String, state: GroupState = .pending, reason: String? = nil) -> GroupDetail {
    GroupDetail(
        id: id, name: id, state: state, submittedAt: WireTimestamp(Date()),
        finishedAt: state.isFinished ? WireTimestamp(Date()) : nil, reason: reason, children: [])
}

/// One child that no worker here can run (no worker connects), so the group stays pending.
let pendingSpec = "name: pending\nchildren: [{name: a, run: echo, with: {text: hi}}]"

extension FakePeer {
    /// The next client request of the kind `extract` accepts (a status, a watch, …).
    func awaitRequest(
        _ what: String, _ extract: @escaping @Sendable (ClientRequest.Kind) -> Bool
    ) async throws -> (request: ClientRequest, from: [UInt8]) {
        let (request, _, from) = try await clientRequest(what) { extract($0.kind) ? true : nil }
        return (request, from)
    }
}
