#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Worker-message family <-> Ready (kind 1) … WorkerDisconnect (kind 9).
// `started` and `results` are on the hot path: attempt refs inline, batches
// framed by RepeatedMessageField.

extension WorkerMessage: WireBody {
    static var family: WireFamily { .workerMessage }

    enum WireKind: UInt8 {
        case ready = 1
        case heartbeat, started, results, lockRequest, lockRelease, lockWithdraw, draining, disconnect
        case cancelGroup, addChildren, logLines
    }

    var wireKind: UInt8 {
        let kind: WireKind =
            switch self {
            case .ready: .ready
            case .heartbeat: .heartbeat
            case .started: .started
            case .results: .results
            case .lockRequest: .lockRequest
            case .lockRelease: .lockRelease
            case .lockWithdraw: .lockWithdraw
            case .draining: .draining
            case .disconnect: .disconnect
            case .cancelGroup: .cancelGroup
            case .addChildren: .addChildren
            case .logLines: .logLines
            }
        return kind.rawValue
    }

    func serializedBody() throws(WireError) -> [UInt8] {
        switch self {
        case .ready(let ready):
            var proto = Cohort_Wire_V1_Ready()
            proto.name = ready.name
            proto.host = ready.host
            proto.sessionID = ready.sessionID
            proto.labels = ready.labels
            proto.slots = ready.slots
            proto.kinds = ready.kinds
            proto.draining = ready.draining
            proto.running = ready.running.map { running in
                var message = Cohort_Wire_V1_RunningAttempt()
                running.ref.write(into: &message)
                message.startedAt = running.startedAt.wireValue
                return message
            }
            return try serialize(proto)
        case .heartbeat(let sequence):
            guard sequence != 0 else { return [] }
            var proto = Cohort_Wire_V1_Heartbeat()
            proto.sequence = sequence
            return try serialize(proto)
        case .started(let started):
            return try RepeatedMessageField.encode(started) { start in
                var message = Cohort_Wire_V1_AttemptStarted()
                start.ref.write(into: &message)
                message.startedAt = start.startedAt.nanosecondsSinceEpoch
                return message
            }
        case .results(let results):
            return try RepeatedMessageField.encode(results) { $0.proto }
        case .lockRequest(let request):
            var proto = Cohort_Wire_V1_LockRequest()
            proto.requestID = request.requestID
            proto.attempt = request.ref.proto
            proto.categories = request.categories
            return try serialize(proto)
        case .lockRelease(let requestID):
            var proto = Cohort_Wire_V1_LockRelease()
            proto.requestID = requestID
            return try serialize(proto)
        case .lockWithdraw(let requestID):
            var proto = Cohort_Wire_V1_LockWithdraw()
            proto.requestID = requestID
            return try serialize(proto)
        case .draining(let reason):
            var proto = Cohort_Wire_V1_Draining()
            proto.reason = reason
            return try serialize(proto)
        case .disconnect(let reason):
            var proto = Cohort_Wire_V1_WorkerDisconnect()
            proto.reason = reason
            return try serialize(proto)
        case .cancelGroup(let ref, let reason):
            var proto = Cohort_Wire_V1_GroupCancelByAttempt()
            proto.attempt = ref.proto
            proto.reason = reason
            return try serialize(proto)
        case .addChildren(let ref, let addition):
            var proto = Cohort_Wire_V1_AddChildrenByAttempt()
            proto.attempt = ref.proto
            proto.document = addition.document
            proto.format = addition.format.proto
            if let into = addition.into { proto.into = into }
            return try serialize(proto)
        case .logLines(let attempts):
            var proto = Cohort_Wire_V1_LogLines()
            proto.attempts = attempts.map { attempt in
                var message = Cohort_Wire_V1_AttemptLogLines()
                message.attempt = attempt.ref.proto
                message.lines = attempt.lines.map(\.proto)
                return message
            }
            return try serialize(proto)
        }
    }

    static func decode(kind: UInt8, body: UnsafeRawBufferPointer) throws(BodyError) -> WorkerMessage {
        switch WireKind(rawValue: kind) {
        case .ready:
            let proto = try body.decode(Cohort_Wire_V1_Ready.self)
            return .ready(
                WorkerReady(
                    name: proto.name, host: proto.host, sessionID: proto.sessionID, labels: proto.labels,
                    slots: proto.slots, kinds: proto.kinds,
                    running: proto.running.map {
                        RunningAttempt(ref: WireAttemptRef(inline: $0), startedAt: .optional($0.startedAt))
                    }, draining: proto.draining))
        case .heartbeat:
            return .heartbeat(sequence: try body.decode(Cohort_Wire_V1_Heartbeat.self).sequence)
        case .started:
            var started: [AttemptStart] = []
            try RepeatedMessageField.decode(body, as: Cohort_Wire_V1_AttemptStarted.self) { attempt, _ in
                started.append(
                    AttemptStart(
                        ref: WireAttemptRef(inline: attempt),
                        startedAt: WireTimestamp(nanosecondsSinceEpoch: attempt.startedAt)))
            }
            return .started(started)
        case .results:
            var results: [AttemptResult] = []
            try RepeatedMessageField.decode(body, as: Cohort_Wire_V1_AttemptResult.self) {
                (result, index) throws(BodyError) in
                results.append(try AttemptResult(proto: result, index: index))
            }
            return .results(results)
        case .lockRequest:
            let proto = try body.decode(Cohort_Wire_V1_LockRequest.self)
            guard proto.hasAttempt else { throw BodyError("lock request has no attempt") }
            return .lockRequest(
                LockRequest(
                    requestID: proto.requestID, ref: WireAttemptRef(proto: proto.attempt), categories: proto.categories)
            )
        case .lockRelease:
            return .lockRelease(requestID: try body.decode(Cohort_Wire_V1_LockRelease.self).requestID)
        case .lockWithdraw:
            return .lockWithdraw(requestID: try body.decode(Cohort_Wire_V1_LockWithdraw.self).requestID)
        case .draining:
            return .draining(reason: try body.decode(Cohort_Wire_V1_Draining.self).reason)
        case .disconnect:
            return .disconnect(reason: try body.decode(Cohort_Wire_V1_WorkerDisconnect.self).reason)
        case .cancelGroup:
            let proto = try body.decode(Cohort_Wire_V1_GroupCancelByAttempt.self)
            guard proto.hasAttempt else { throw BodyError("group cancel has no attempt") }
            return .cancelGroup(WireAttemptRef(proto: proto.attempt), reason: proto.reason)
        case .addChildren:
            let proto = try body.decode(Cohort_Wire_V1_AddChildrenByAttempt.self)
            guard proto.hasAttempt else { throw BodyError("children addition has no attempt") }
            return .addChildren(
                WireAttemptRef(proto: proto.attempt),
                ChildrenAddition(
                    document: proto.document, format: try SpecFormat(proto: proto.format),
                    into: proto.hasInto ? proto.into : nil))
        case .logLines:
            let proto = try body.decode(Cohort_Wire_V1_LogLines.self)
            var attempts: [AttemptLogLines] = []
            for (index, attempt) in proto.attempts.enumerated() {
                guard attempt.hasAttempt else { throw BodyError("log lines[\(index)] have no attempt") }
                var lines: [LogLine] = []
                lines.reserveCapacity(attempt.lines.count)
                for (line, proto) in attempt.lines.enumerated() { lines.append(try LogLine(proto: proto, index: line)) }
                attempts.append(AttemptLogLines(ref: WireAttemptRef(proto: attempt.attempt), lines: lines))
            }
            return .logLines(attempts)
        case nil:
            throw .unknownKind
        }
    }
}

extension AttemptResult {
    @inline(__always)
    init(proto: Cohort_Wire_V1_AttemptResult, index: Int) throws(BodyError) {
        let outcome: WireOutcome
        switch proto.outcome {
        case .output(let output): outcome = .succeeded(output: output)
        case .error(let error): outcome = .failed(error: error)
        case .cancelled(let reason): outcome = .cancelled(reason: reason, code: try CancelCode(proto: proto.cancelCode))
        case nil: throw BodyError("results[\(index)] has no outcome")
        }
        self.init(
            ref: WireAttemptRef(inline: proto),
            outcome: outcome,
            startedAt: WireTimestamp(nanosecondsSinceEpoch: proto.startedAt),
            finishedAt: WireTimestamp(nanosecondsSinceEpoch: proto.finishedAt))
    }

    @inline(__always)
    var proto: Cohort_Wire_V1_AttemptResult {
        var proto = Cohort_Wire_V1_AttemptResult()
        ref.write(into: &proto)
        switch outcome {
        case .succeeded(let output): proto.outcome = .output(output)
        case .failed(let error): proto.outcome = .error(error)
        case .cancelled(let reason, let code):
            proto.outcome = .cancelled(reason)
            proto.cancelCode = code.proto
        }
        proto.startedAt = startedAt.nanosecondsSinceEpoch
        proto.finishedAt = finishedAt.nanosecondsSinceEpoch
        return proto
    }
}
