#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Conversions of the types every family shares. Enum value 0 (unspecified)
// and values this version does not know are refused: within one protocol
// version, both sides know the same set.

extension WireAttemptRef {
    @inline(__always)
    init(proto: Cohort_Wire_V1_AttemptRef) {
        self.init(id: proto.id, group: proto.group, path: proto.path, attempt: proto.attempt)
    }

    @inline(__always)
    var proto: Cohort_Wire_V1_AttemptRef {
        var proto = Cohort_Wire_V1_AttemptRef()
        proto.id = id
        proto.group = group
        proto.path = path
        proto.attempt = attempt
        return proto
    }
}

/// Hot messages carry an attempt ref inline, as fields 1-4 (see cohort.proto).
protocol InlineAttemptRef {
    var attemptID: UInt64 { get set }
    var group: String { get set }
    var path: String { get set }
    var attempt: UInt32 { get set }
}

extension Cohort_Wire_V1_Attempt: InlineAttemptRef {}
extension Cohort_Wire_V1_AttemptResult: InlineAttemptRef {}
extension Cohort_Wire_V1_AttemptStarted: InlineAttemptRef {}
extension Cohort_Wire_V1_AttemptCancellation: InlineAttemptRef {}
extension Cohort_Wire_V1_RunningAttempt: InlineAttemptRef {}

extension WireAttemptRef {
    @inline(__always)
    init(inline proto: some InlineAttemptRef) {
        self.init(id: proto.attemptID, group: proto.group, path: proto.path, attempt: proto.attempt)
    }

    @inline(__always)
    func write(into proto: inout some InlineAttemptRef) {
        proto.attemptID = id
        proto.group = group
        proto.path = path
        proto.attempt = attempt
    }
}

extension WireTimestamp {
    /// 0 on the wire means absent.
    @inline(__always)
    static func optional(_ nanoseconds: Int64) -> WireTimestamp? {
        nanoseconds == 0 ? nil : WireTimestamp(nanosecondsSinceEpoch: nanoseconds)
    }
}

extension Optional where Wrapped == WireTimestamp {
    @inline(__always)
    var wireValue: Int64 { self?.nanosecondsSinceEpoch ?? 0 }
}

extension Duration {
    /// Whole milliseconds, clamped to `0...max` (the wire has no negative durations).
    func milliseconds<T: FixedWidthInteger & UnsignedInteger>(clampedTo _: T.Type) -> T {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return T.max }
        let total = ms.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        guard !total.overflow, total.partialValue >= 0 else { return total.overflow ? T.max : 0 }
        return T(clamping: total.partialValue)
    }
}

extension WireOutcome {
    init(proto: Cohort_Wire_V1_Outcome) throws(BodyError) {
        switch proto.kind {
        case .output(let output): self = .succeeded(output: output)
        case .error(let error): self = .failed(error: error)
        case .cancelled(let reason): self = .cancelled(reason: reason, code: try CancelCode(proto: proto.cancelCode))
        case nil: throw BodyError("outcome has no kind")
        }
    }

    var proto: Cohort_Wire_V1_Outcome {
        var proto = Cohort_Wire_V1_Outcome()
        switch self {
        case .succeeded(let output): proto.kind = .output(output)
        case .failed(let error): proto.kind = .error(error)
        case .cancelled(let reason, let code):
            proto.kind = .cancelled(reason)
            proto.cancelCode = code.proto
        }
        return proto
    }
}

extension ProtocolError.Code {
    init(proto: Cohort_Wire_V1_ErrorCode) throws(BodyError) {
        switch proto {
        case .invalidSpec: self = .invalidSpec
        case .notFound: self = .notFound
        case .unsupportedVersion: self = .unsupportedVersion
        case .badFrame: self = .badFrame
        case .permissionDenied: self = .permissionDenied
        case .shuttingDown: self = .shuttingDown
        case .tooLarge: self = .tooLarge
        case .internal: self = .internal
        case .conflict: self = .conflict
        case .handshakeRequired: self = .handshakeRequired
        case .superseded: self = .superseded
        case .invalidRequest: self = .invalidRequest
        case .noCapableWorker: self = .noCapableWorker
        case .notLeader: self = .notLeader
        case .unspecified, .UNRECOGNIZED: throw BodyError("error code \(proto.rawValue) is unknown")
        }
    }

    var proto: Cohort_Wire_V1_ErrorCode {
        switch self {
        case .invalidSpec: .invalidSpec
        case .notFound: .notFound
        case .unsupportedVersion: .unsupportedVersion
        case .badFrame: .badFrame
        case .permissionDenied: .permissionDenied
        case .shuttingDown: .shuttingDown
        case .tooLarge: .tooLarge
        case .internal: .internal
        case .conflict: .conflict
        case .handshakeRequired: .handshakeRequired
        case .superseded: .superseded
        case .invalidRequest: .invalidRequest
        case .noCapableWorker: .noCapableWorker
        case .notLeader: .notLeader
        }
    }
}

extension GroupState {
    init(proto: Cohort_Wire_V1_GroupState) throws(BodyError) {
        switch proto {
        case .pending: self = .pending
        case .running: self = .running
        case .succeeded: self = .succeeded
        case .failed: self = .failed
        case .cancelled: self = .cancelled
        case .unspecified, .UNRECOGNIZED: throw BodyError("group state \(proto.rawValue) is unknown")
        }
    }

    var proto: Cohort_Wire_V1_GroupState {
        switch self {
        case .pending: .pending
        case .running: .running
        case .succeeded: .succeeded
        case .failed: .failed
        case .cancelled: .cancelled
        }
    }
}

extension ChildState {
    init(proto: Cohort_Wire_V1_ChildState) throws(BodyError) {
        switch proto {
        case .pending: self = .pending
        case .waiting: self = .waiting
        case .ready: self = .ready
        case .running: self = .running
        case .succeeded: self = .succeeded
        case .failed: self = .failed
        case .cancelled: self = .cancelled
        case .skipped: self = .skipped
        case .unspecified, .UNRECOGNIZED: throw BodyError("child state \(proto.rawValue) is unknown")
        }
    }

    var proto: Cohort_Wire_V1_ChildState {
        switch self {
        case .pending: .pending
        case .waiting: .waiting
        case .ready: .ready
        case .running: .running
        case .succeeded: .succeeded
        case .failed: .failed
        case .cancelled: .cancelled
        case .skipped: .skipped
        }
    }
}

extension CancelCode {
    init(proto: Cohort_Wire_V1_CancelCode) throws(BodyError) {
        switch proto {
        case .custom: self = .custom
        case .timedOut: self = .timedOut
        case .cancelledByClient: self = .cancelledByClient
        case .superseded: self = .superseded
        case .producerFailed: self = .producerFailed
        case .producerCancelled: self = .producerCancelled
        case .groupFinished: self = .groupFinished
        case .dependencyFailed: self = .dependencyFailed
        case .workerLost: self = .workerLost
        case .handedBack: self = .handedBack
        case .shutdown: self = .shutdown
        case .skipped: self = .skipped
        case .cancelledByChild: self = .cancelledByChild
        case .unspecified, .UNRECOGNIZED: throw BodyError("cancel code \(proto.rawValue) is unknown")
        }
    }

    var proto: Cohort_Wire_V1_CancelCode {
        switch self {
        case .custom: .custom
        case .timedOut: .timedOut
        case .cancelledByClient: .cancelledByClient
        case .superseded: .superseded
        case .producerFailed: .producerFailed
        case .producerCancelled: .producerCancelled
        case .groupFinished: .groupFinished
        case .dependencyFailed: .dependencyFailed
        case .workerLost: .workerLost
        case .handedBack: .handedBack
        case .shutdown: .shutdown
        case .skipped: .skipped
        case .cancelledByChild: .cancelledByChild
        }
    }
}

extension LogLine {
    init(proto: Cohort_Wire_V1_LogLine, index: Int) throws(BodyError) {
        let stream: Stream
        switch proto.stream {
        case .stdout: stream = .stdout
        case .stderr: stream = .stderr
        case .kind: stream = .kind
        case .marker: stream = .marker
        case .unspecified, .UNRECOGNIZED:
            throw BodyError("lines[\(index)] has an unknown stream \(proto.stream.rawValue)")
        }
        self.init(
            sequence: proto.sequence, at: WireTimestamp(nanosecondsSinceEpoch: proto.at), stream: stream,
            text: Array(proto.text), partial: proto.partial, level: proto.level)
    }

    var proto: Cohort_Wire_V1_LogLine {
        var proto = Cohort_Wire_V1_LogLine()
        proto.sequence = sequence
        proto.at = at.nanosecondsSinceEpoch
        proto.stream =
            switch stream {
            case .stdout: .stdout
            case .stderr: .stderr
            case .kind: .kind
            case .marker: .marker
            }
        proto.text = Data(text)
        proto.partial = partial
        proto.level = level
        return proto
    }
}
