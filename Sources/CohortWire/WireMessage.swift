/// Any message of the protocol, by family.
///
/// The family says who sends it to whom; it is frame 0's family byte.
public enum WireMessage: Hashable, Sendable {
    /// HELLO, WELCOME, handshake ERROR (both directions).
    case handshake(Handshake)
    /// Client → coordinator.
    case clientRequest(ClientRequest)
    /// Coordinator → client.
    case coordinatorReply(CoordinatorReply)
    /// Worker → coordinator.
    case worker(WorkerMessage)
    /// Coordinator → worker.
    case toWorker(CoordinatorToWorker)

    /// The header this message is sent with in the current protocol version.
    public var header: WireHeader {
        let kind =
            switch self {
            case .handshake(let message): message.wireKind
            case .clientRequest(let message): message.wireKind
            case .coordinatorReply(let message): message.wireKind
            case .worker(let message): message.wireKind
            case .toWorker(let message): message.wireKind
            }
        return WireHeader(family: family, kind: kind)
    }

    /// The message's family (its header's family byte).
    public var family: WireFamily {
        switch self {
        case .handshake: .handshake
        case .clientRequest: .clientRequest
        case .coordinatorReply: .coordinatorReply
        case .worker: .workerMessage
        case .toWorker: .coordinatorToWorker
        }
    }
}

/// Who sends a message to whom; byte 6 of the header.
public enum WireFamily: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// ``Handshake``: HELLO, WELCOME, handshake ERROR. Frozen across versions.
    case handshake = 1
    /// ``ClientRequest``: client → coordinator.
    case clientRequest = 2
    /// ``CoordinatorReply``: coordinator → client.
    case coordinatorReply = 3
    /// ``WorkerMessage``: worker → coordinator.
    case workerMessage = 4
    /// ``CoordinatorToWorker``: coordinator → worker.
    case coordinatorToWorker = 5

    public var description: String {
        switch self {
        case .handshake: "handshake"
        case .clientRequest: "client request"
        case .coordinatorReply: "coordinator reply"
        case .workerMessage: "worker message"
        case .coordinatorToWorker: "coordinator-to-worker"
        }
    }
}
