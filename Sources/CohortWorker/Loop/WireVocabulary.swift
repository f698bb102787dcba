import CohortCore
import CohortWire

/// The real worker's words for its state machine (``WorkerMachine``): the wire's types.
enum WireVocabulary: WorkerVocabulary {
    typealias Order = AttemptDispatch
    typealias Start = AttemptStart
    typealias Result = AttemptResult
    typealias Cancellation = AttemptCancellation
    typealias LockRequest = CohortWire.LockRequest
    typealias Identity = WireAttemptRef

    static func attemptID(of order: AttemptDispatch) -> UInt64 { order.ref.id }
    static func holdsCategories(_ order: AttemptDispatch) -> Bool { !order.holds.isEmpty }
    static func attemptID(of start: AttemptStart) -> UInt64 { start.ref.id }
    static func attemptID(of result: AttemptResult) -> UInt64 { result.ref.id }
    static func identity(of order: AttemptDispatch) -> WireAttemptRef { order.ref }
    static func identity(of result: AttemptResult) -> WireAttemptRef { result.ref }

    /// Cancelled before it started: no start time (0), so the coordinator knows it did not run.
    static func cancelledBeforeStart(
        _ order: AttemptDispatch, _ cancellation: AttemptCancellation, at now: Timestamp
    ) -> AttemptResult {
        AttemptResult(
            ref: order.ref, outcome: .cancelled(reason: cancellation.reason, code: cancellation.code),
            startedAt: WireTimestamp(nanosecondsSinceEpoch: 0),
            finishedAt: WireTimestamp(nanosecondsSinceEpoch: now.nanosecondsSinceEpoch))
    }
}

extension WorkerSession.Input {
    /// The session's view of a WELCOME.
    static func welcome(_ welcome: Welcome) -> Self {
        .welcome(
            WorkerWelcome(
                peerID: welcome.peerID, heartbeatInterval: welcome.heartbeatInterval,
                heartbeatLiveness: Int(welcome.heartbeatLiveness),
                acknowledgesHeartbeats: welcome.acknowledgesHeartbeats))
    }

    /// The session's view of a handshake error.
    static func refused(_ error: HandshakeError) -> Self {
        let kind: WorkerRefusal.Kind =
            switch error.code {
            case .unsupportedVersion: .unsupportedVersion
            case .permissionDenied: .permissionDenied
            case .notLeader: .notLeader
            default: .retry
            }
        return .refused(WorkerRefusal(kind, error.message, leader: error.leader))
    }
}
