import CohortSpec
import CohortWire

/// Why a client call failed: a code a program can switch on and a message a person can read.
///
/// Every error `CohortClient` throws is one of these. ``exitCode`` is the `cohort` CLI's exit
/// status for it (docs/cli.md: 64 usage, 65 invalid spec, 69 coordinator unreachable).
public struct ClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// No coordinator answered the handshake within the connect timeout.
        case unreachable
        /// The coordinator stopped answering after the handshake (a request or a watch timed out).
        case connectionLost
        /// The coordinator refused the handshake (another protocol version, …) or sent something
        /// this client cannot read.
        case protocolMismatch
        /// The spec was rejected; ``ClientError/specErrors`` names every fault by its path.
        case invalidSpec
        /// No such group or child.
        case notFound
        /// The request is well-formed but refused: a group id reused for another spec, a child
        /// that has not finished, a document over a size limit, …
        case rejected
        /// The client's key or role may not do this.
        case permissionDenied
        /// The coordinator is stopping and accepts no new work.
        case shuttingDown
        /// A bug or unexpected failure on the coordinator or in this client.
        case `internal`
        /// The client was closed while the call was in flight.
        case closed
        /// The calling task was cancelled while the call was in flight.
        case cancelled
        /// A typed result was asked of a child that failed or was cancelled (the message says
        /// which, and why).
        case childFailed
        /// A child's output does not decode as the type asked for (the message names the
        /// member at fault).
        case undecodable
        /// A strict submission (``ClientConfiguration/strict``) was refused: no connected worker
        /// offers a kind it runs, with the labels it requires (the message names them).
        case noCapableWorker
    }

    public var code: Code
    public var message: String
    /// For ``Code/invalidSpec``: every fault, each named by its path in the spec.
    public var specErrors: [CohortSpec.SpecError]

    public init(_ code: Code, _ message: String, specErrors: [CohortSpec.SpecError] = []) {
        self.code = code
        self.message = message
        self.specErrors = specErrors
    }

    /// The `cohort` CLI's exit status for this error.
    public var exitCode: Int32 {
        switch code {
        case .invalidSpec, .undecodable: 65
        case .childFailed: 1
        case .notFound, .rejected: 64
        case .noCapableWorker: 69
        case .permissionDenied: 77
        case .unreachable, .connectionLost, .protocolMismatch, .shuttingDown, .internal, .closed: 69
        case .cancelled: 130
        }
    }

    /// The message, then one line per spec error (`path: message`).
    public var description: String {
        guard !specErrors.isEmpty else { return message }
        return ([message] + specErrors.map(\.description)).joined(separator: "\n")
    }
}

extension ClientError {
    /// The client-side view of an error the coordinator sent.
    package init(_ error: ProtocolError) {
        let code: Code =
            switch error.code {
            case .invalidSpec: .invalidSpec
            case .notFound: .notFound
            case .conflict, .invalidRequest, .tooLarge: .rejected
            case .permissionDenied: .permissionDenied
            case .shuttingDown: .shuttingDown
            case .unsupportedVersion, .badFrame, .handshakeRequired, .superseded: .protocolMismatch
            case .internal: .internal
            case .noCapableWorker: .noCapableWorker
            case .notLeader: .unreachable
            }
        let specErrors = error.specErrors.map { wire in
            CohortSpec.SpecError(.invalidValue, path: wire.path, wire.message, line: wire.line, column: wire.column)
        }
        self.init(code, error.message, specErrors: specErrors)
    }

    /// The client-side view of a handshake refusal.
    package init(refusal: HandshakeError, endpoint: String) {
        let code: Code =
            switch refusal.code {
            case .permissionDenied: .permissionDenied
            case .shuttingDown: .shuttingDown
            case .notLeader: .unreachable
            default: .protocolMismatch
            }
        self.init(code, "the coordinator at \(endpoint) refused this client: \(refusal.message)")
    }
}

extension ClientError {
    /// A call made after the client was closed (or its connection ended).
    package static let closed = ClientError(.closed, "the client is closed")

    /// A call whose task was cancelled.
    package static let cancelled = ClientError(.cancelled, "cancelled")
}
