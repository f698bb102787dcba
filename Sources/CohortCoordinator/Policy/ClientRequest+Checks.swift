import CohortCore
import CohortWire

/// What the coordinator checks of a client's request before carrying it out, and the words of
/// a client's cancel.
extension ClientRequest {
    /// Why the request is refused as it stands, or `nil`: an id of 0 names no request (0 is
    /// for unsolicited messages; ClientDisconnect is never answered, so it needs none), and an
    /// empty path is not an absent one (docs/protocol.md §4.4).
    var refusal: ProtocolError? {
        if requestID == 0, !kind.isDisconnect {
            return ProtocolError(code: .invalidRequest, message: "request_id must be greater than 0")
        }
        if let path = kind.path, path.isEmpty {
            return ProtocolError(
                code: .invalidRequest, message: "path is empty; leave it out to name the whole group")
        }
        return nil
    }
}

extension ClientRequest.Kind {
    var isDisconnect: Bool {
        if case .disconnect = self { true } else { false }
    }

    /// The child path a request names, if it names one.
    var path: String? {
        switch self {
        case .result(_, let path), .cancel(_, let path, _): path
        default: nil
        }
    }
}

extension CancellationReason {
    /// The reason of a client's cancel: its own `words`, or, without any, that the client
    /// (by its name, else its peer id) cancelled it.
    static func asked(by session: PeerSession, words: String) -> CancellationReason {
        guard words.isEmpty else { return .custom(words) }
        return .cancelledByClient(session.name.isEmpty ? session.peerID : session.name)
    }
}
