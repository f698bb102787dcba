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

/// A loopback endpoint where nothing listens, held for as long as the value lives: the port is
/// bound but never listened on, so a connection is refused, and no other listener (another
/// test's coordinator on a wildcard port, say) can take the port meanwhile.
final class UnusedEndpoint {
    let endpoint: String
    private let descriptor: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        descriptor = fd
        endpoint = "tcp://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
    }

    deinit { close(descriptor) }
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
