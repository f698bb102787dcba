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

/// Which protobuf envelope frame 1 holds; byte 6 of the header.
public enum WireFamily: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// `Handshake`: HELLO, WELCOME, handshake ERROR. Frozen across versions.
    case handshake = 1
    /// `ClientRequest`.
    case clientRequest = 2
    /// `CoordinatorReply`.
    case coordinatorReply = 3
    /// `WorkerMessage`.
    case workerMessage = 4
    /// `CoordinatorToWorker`.
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
