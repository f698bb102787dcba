import CZeroMQ

/// The ZeroMQ socket patterns Cohort uses.
///
/// Thread-safety: a plain `Sendable` value.
public enum SocketType: Sendable, Hashable, CustomStringConvertible {
    /// Sends requests and receives replies, strictly alternating.
    case req
    /// Receives requests and sends replies, strictly alternating.
    case rep
    /// Asynchronous request side: load-balances sends, fair-queues receives.
    case dealer
    /// Asynchronous reply side: prefixes each received message with the
    /// sender's routing id frame and routes sends by their first frame.
    case router
    /// Publishes to every subscriber.
    case pub
    /// Receives what publishers send, filtered by ``SocketOption/subscribe``.
    case sub
    /// Load-balances messages to pullers.
    case push
    /// Fair-queues messages from pushers.
    case pull
    /// One-to-one, usually over `inproc://`.
    case pair

    var rawValue: Int32 {
        switch self {
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .push: ZMQ_PUSH
        case .pull: ZMQ_PULL
        case .pair: ZMQ_PAIR
        }
    }

    /// The pattern's name in capitals, e.g. `"ROUTER"`.
    public var description: String {
        switch self {
        case .req: "REQ"
        case .rep: "REP"
        case .dealer: "DEALER"
        case .router: "ROUTER"
        case .pub: "PUB"
        case .sub: "SUB"
        case .push: "PUSH"
        case .pull: "PULL"
        case .pair: "PAIR"
        }
    }
}
