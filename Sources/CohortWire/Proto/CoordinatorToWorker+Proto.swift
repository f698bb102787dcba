// Coordinator-to-worker family <-> heartbeat (kind 1) … LogAck (kind 8).
// `dispatch` and `cancel` are on the hot path: attempt refs inline, batches
// framed by RepeatedMessageField.

extension CoordinatorToWorker: WireBody {
    static var family: WireFamily { .coordinatorToWorker }

    enum WireKind: UInt8 {
        case heartbeat = 1
        case dispatch, cancel, lockGrant, lockDenied, shutdown, error, logStored
    }

    var wireKind: UInt8 {
        let kind: WireKind =
            switch self {
            case .heartbeat: .heartbeat
            case .dispatch: .dispatch
            case .cancel: .cancel
            case .lockGrant: .lockGrant
            case .lockDenied: .lockDenied
            case .shutdown: .shutdown
            case .error: .error
            case .logStored: .logStored
            }
        return kind.rawValue
    }

    func serializedBody() throws(WireError) -> [UInt8] {
        switch self {
        case .heartbeat(let acknowledged):
            guard acknowledged != 0 else { return [] }
            var proto = Cohort_Wire_V1_Heartbeat()
            proto.acknowledged = acknowledged
            return try serialize(proto)
        case .dispatch(let attempts):
            return try RepeatedMessageField.encode(attempts) { $0.proto }
        case .cancel(let cancellations):
            return try RepeatedMessageField.encode(cancellations) { cancellation in
                var message = Cohort_Wire_V1_AttemptCancellation()
                cancellation.ref.write(into: &message)
                message.reason = cancellation.reason
                message.code = cancellation.code.proto
                return message
            }
        case .lockGrant(let grant):
            var proto = Cohort_Wire_V1_LockGrant()
            proto.requestID = grant.requestID
            proto.tokens = grant.tokens
            return try serialize(proto)
        case .lockDenied(let denial):
            var proto = Cohort_Wire_V1_LockDenied()
            proto.requestID = denial.requestID
            proto.kind =
                switch denial.kind {
                case .denied: .denied
                case .cancelled: .cancelled
                case .revoked: .revoked
                }
            proto.reason = denial.reason
            return try serialize(proto)
        case .shutdown(let notice):
            var proto = Cohort_Wire_V1_ShutdownNotice()
            proto.reason = notice.reason
            proto.restarting = notice.restarting
            return try serialize(proto)
        case .error(let error):
            var proto = Cohort_Wire_V1_WorkerError()
            proto.code = error.code.proto
            proto.message = error.message
            if let ref = error.ref { proto.attempt = ref.proto }
            if let requestID = error.requestID { proto.requestID = requestID }
            return try serialize(proto)
        case .logStored(let stored):
            var proto = Cohort_Wire_V1_LogAck()
            proto.attempts = stored.map { stored in
                var message = Cohort_Wire_V1_LogStored()
                message.attemptID = stored.attemptID
                message.sequence = stored.sequence
                return message
            }
            return try serialize(proto)
        }
    }

    static func decode(kind: UInt8, body: UnsafeRawBufferPointer) throws(BodyError) -> CoordinatorToWorker {
        switch WireKind(rawValue: kind) {
        case .heartbeat:
            return .heartbeat(acknowledged: try body.decode(Cohort_Wire_V1_Heartbeat.self).acknowledged)
        case .dispatch:
            var attempts: [AttemptDispatch] = []
            try RepeatedMessageField.decode(body, as: Cohort_Wire_V1_Attempt.self) { attempt, _ in
                attempts.append(AttemptDispatch(proto: attempt))
            }
            return .dispatch(attempts)
        case .cancel:
            var cancellations: [AttemptCancellation] = []
            try RepeatedMessageField.decode(body, as: Cohort_Wire_V1_AttemptCancellation.self) {
                (attempt, _) throws(BodyError) in
                cancellations.append(
                    AttemptCancellation(
                        ref: WireAttemptRef(inline: attempt), reason: attempt.reason,
                        code: try CancelCode(proto: attempt.code)))
            }
            return .cancel(cancellations)
        case .lockGrant:
            let proto = try body.decode(Cohort_Wire_V1_LockGrant.self)
            return .lockGrant(LockGrant(requestID: proto.requestID, tokens: proto.tokens))
        case .lockDenied:
            let proto = try body.decode(Cohort_Wire_V1_LockDenied.self)
            let kind: LockDenial.Kind
            switch proto.kind {
            case .denied: kind = .denied
            case .cancelled: kind = .cancelled
            case .revoked: kind = .revoked
            case .unspecified, .UNRECOGNIZED: throw BodyError("lock denial kind \(proto.kind.rawValue) is unknown")
            }
            return .lockDenied(LockDenial(requestID: proto.requestID, kind: kind, reason: proto.reason))
        case .shutdown:
            let proto = try body.decode(Cohort_Wire_V1_ShutdownNotice.self)
            return .shutdown(ShutdownNotice(reason: proto.reason, restarting: proto.restarting))
        case .error:
            let proto = try body.decode(Cohort_Wire_V1_WorkerError.self)
            return .error(
                WorkerError(
                    code: try ProtocolError.Code(proto: proto.code), message: proto.message,
                    ref: proto.hasAttempt ? WireAttemptRef(proto: proto.attempt) : nil,
                    requestID: proto.hasRequestID ? proto.requestID : nil))
        case .logStored:
            let proto = try body.decode(Cohort_Wire_V1_LogAck.self)
            return .logStored(proto.attempts.map { LogStored(attemptID: $0.attemptID, sequence: $0.sequence) })
        case nil:
            throw .unknownKind
        }
    }
}

extension AttemptDispatch {
    @inline(__always)
    init(proto: Cohort_Wire_V1_Attempt) {
        self.init(
            ref: WireAttemptRef(inline: proto),
            kind: proto.kind,
            input: proto.input,
            fencingTokens: proto.fencingTokens,
            timeout: proto.timeoutMs == 0 ? nil : .milliseconds(Int64(clamping: proto.timeoutMs)),
            env: proto.env, holds: proto.holds, attemptToken: proto.attemptToken.isEmpty ? nil : proto.attemptToken)
    }

    @inline(__always)
    var proto: Cohort_Wire_V1_Attempt {
        var proto = Cohort_Wire_V1_Attempt()
        ref.write(into: &proto)
        proto.kind = kind
        proto.input = input
        proto.fencingTokens = fencingTokens
        // A timeout that rounds to 0 ms would read as "none": send 1 ms instead.
        if let timeout { proto.timeoutMs = max(1, timeout.milliseconds(clampedTo: UInt64.self)) }
        proto.env = env
        proto.holds = holds
        if let attemptToken { proto.attemptToken = attemptToken }
        return proto
    }
}
