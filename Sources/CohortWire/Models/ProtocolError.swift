/// An error one side of the protocol reports to the other: a code a program
/// can switch on and a message a person can read.
///
/// Sent to clients as ``CoordinatorReply/Kind/error(_:)``; its ``Code`` is
/// shared with ``HandshakeError`` and ``WorkerError``.
public struct ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, in categories that map onto the CLI's exit codes.
    public enum Code: Hashable, Sendable, CaseIterable {
        /// The spec was rejected; ``ProtocolError/specErrors`` names every fault.
        case invalidSpec
        /// No such group, child, worker or lock request.
        case notFound
        /// The peer's protocol version is not spoken here.
        case unsupportedVersion
        /// A message could not be decoded.
        case badFrame
        /// The peer's key or role may not do this (a worker key submitting, …).
        case permissionDenied
        /// The coordinator is stopping and accepts no new work.
        case shuttingDown
        /// A frame or document exceeds a size limit.
        case tooLarge
        /// A bug or an unexpected failure on the sending side.
        case `internal`
        /// The request contradicts the current state (e.g. a group id reused for another spec).
        case conflict
        /// The peer sent a message before a successful HELLO (or after it was declared lost).
        case handshakeRequired
        /// The attempt named was superseded by a later one; its report is refused.
        case superseded
        /// The request is well-formed but makes no sense (e.g. an empty group id).
        case invalidRequest
        /// A strict submission (`Submission.strict`) some of whose procedures no connected
        /// worker could run: a kind nobody offers, or not with the labels it requires.
        case noCapableWorker
        /// A standby coordinator (docs/operations.md, "High availability") refuses the peer
        /// and names the leader (``HandshakeError/leader``), which the peer follows.
        case notLeader

        /// The `cohort` CLI's exit code for a request that failed with this code
        /// (docs/cli.md: 64 usage error, 65 invalid spec, 69 coordinator unusable, 77 permission denied).
        public var exitCode: Int32 {
            switch self {
            case .invalidSpec: 65
            case .permissionDenied: 77
            case .notFound, .tooLarge, .conflict, .invalidRequest: 64
            case .unsupportedVersion, .badFrame, .shuttingDown, .internal, .handshakeRequired, .superseded,
                .noCapableWorker, .notLeader:
                69
            }
        }
    }

    public var code: Code
    public var message: String
    /// For ``Code/invalidSpec``: every error, each named by its path in the spec.
    public var specErrors: [SpecError]
    /// For ``Code/shuttingDown``: the coordinator keeps a journal and expects to come back
    /// (a planned restart), so a client with open requests or watches waits and reconnects.
    public var restarting: Bool

    public init(code: Code, message: String, specErrors: [SpecError] = [], restarting: Bool = false) {
        self.code = code
        self.message = message
        self.specErrors = specErrors
        self.restarting = restarting
    }

    public var description: String {
        guard !specErrors.isEmpty else { return "\(code): \(message)" }
        return "\(code): \(message)\n" + specErrors.map { "  \($0)" }.joined(separator: "\n")
    }
}

/// One fault in a group spec, named by the path of the field at fault,
/// e.g. `children[2].inject[0].from: no child named "buld"`, and where known by its line and
/// column (1-based) in the document as sent. The path is empty for a fault of the whole
/// document (syntax, size, depth).
public struct SpecError: Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var message: String
    public var line: Int?
    public var column: Int?

    public init(path: String, message: String, line: Int? = nil, column: Int? = nil) {
        self.path = path
        self.message = message
        self.line = line
        self.column = column
    }

    /// `3:5: children[2].inject[0].from: no child named "buld"`.
    public var description: String {
        let position = line.map { line in "\(line)" + (column.map { ":\($0)" } ?? "") + ": " } ?? ""
        return position + (path.isEmpty ? "" : "\(path): ") + message
    }
}
