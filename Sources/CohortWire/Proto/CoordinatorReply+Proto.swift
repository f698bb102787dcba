// Coordinator-reply family <-> Submitted (kind 1) … Acknowledged (kind 10).
// Every body carries the request id as field 1.

extension CoordinatorReply: WireBody {
    static var family: WireFamily { .coordinatorReply }

    enum WireKind: UInt8 {
        case submitted = 1
        case groupList, groupDetail, result, cancelAccepted, watchEvents, workers, locks, error, acknowledged
        case childrenAdded, logs
    }

    var wireKind: UInt8 {
        let kind: WireKind =
            switch kind {
            case .submitted: .submitted
            case .groups: .groupList
            case .group: .groupDetail
            case .result: .result
            case .cancelAccepted: .cancelAccepted
            case .watchEvents: .watchEvents
            case .workers: .workers
            case .locks: .locks
            case .error: .error
            case .acknowledged: .acknowledged
            case .childrenAdded: .childrenAdded
            case .logs: .logs
            }
        return kind.rawValue
    }

    func serializedBody() throws(WireError) -> [UInt8] {
        switch kind {
        case .submitted(let submitted):
            var proto = Cohort_Wire_V1_Submitted()
            proto.requestID = requestID
            proto.id = submitted.id
            proto.name = submitted.name
            proto.warnings = submitted.warnings
            proto.alreadySubmitted = submitted.alreadySubmitted
            proto.reused = UInt32(clamping: submitted.reused)
            if let rerunOf = submitted.rerunOf { proto.rerunOf = rerunOf }
            return try serialize(proto)
        case .groups(let groups):
            var proto = Cohort_Wire_V1_GroupList()
            proto.requestID = requestID
            proto.groups = groups.map(\.proto)
            return try serialize(proto)
        case .group(let detail):
            var proto = detail.proto
            proto.requestID = requestID
            return try serialize(proto)
        case .result(let result):
            var proto = Cohort_Wire_V1_ResultReply()
            proto.requestID = requestID
            proto.group = result.group
            if let path = result.path { proto.path = path }
            proto.outcome = result.outcome.proto
            proto.outputTruncated = result.outputTruncated
            return try serialize(proto)
        case .cancelAccepted(let group, let path, let alreadyFinished):
            var proto = Cohort_Wire_V1_CancelAccepted()
            proto.requestID = requestID
            proto.group = group
            if let path { proto.path = path }
            if let alreadyFinished { proto.alreadyFinished = alreadyFinished.proto }
            return try serialize(proto)
        case .watchEvents(let events):
            var proto = Cohort_Wire_V1_WatchEvents()
            proto.requestID = requestID
            proto.events = events.map(\.proto)
            return try serialize(proto)
        case .workers(let workers):
            var proto = Cohort_Wire_V1_WorkersReply()
            proto.requestID = requestID
            proto.workers = workers.map(\.proto)
            return try serialize(proto)
        case .locks(let locks):
            var proto = Cohort_Wire_V1_LocksReply()
            proto.requestID = requestID
            proto.locks = locks.map(\.proto)
            return try serialize(proto)
        case .error(let error):
            var proto = Cohort_Wire_V1_ErrorReply()
            proto.requestID = requestID
            proto.code = error.code.proto
            proto.message = error.message
            proto.specErrors = error.specErrors.map { specError in
                var message = Cohort_Wire_V1_SpecError()
                message.path = specError.path
                message.message = specError.message
                if let line = specError.line { message.line = UInt32(clamping: line) }
                if let column = specError.column { message.column = UInt32(clamping: column) }
                return message
            }
            proto.restarting = error.restarting
            return try serialize(proto)
        case .acknowledged:
            var proto = Cohort_Wire_V1_Acknowledged()
            proto.requestID = requestID
            return try serialize(proto)
        case .childrenAdded(let group, let paths):
            var proto = Cohort_Wire_V1_ChildrenAdded()
            proto.requestID = requestID
            proto.group = group
            proto.paths = paths
            return try serialize(proto)
        case .logs(let page):
            var proto = Cohort_Wire_V1_LogsReply()
            proto.requestID = requestID
            proto.group = page.group
            proto.path = page.path
            proto.attempt = page.attempt
            proto.latestAttempt = page.latestAttempt
            proto.state = page.state.proto
            proto.attemptFinished = page.attemptFinished
            proto.lines = page.lines.map(\.proto)
            proto.lastSequence = page.lastSequence
            proto.cutBytes = page.cutBytes
            proto.worker = page.worker
            proto.more = page.more
            if let error = page.error { proto.error = error }
            return try serialize(proto)
        }
    }

    static func decode(kind: UInt8, body: UnsafeRawBufferPointer) throws(BodyError) -> CoordinatorReply {
        switch WireKind(rawValue: kind) {
        case .submitted:
            let proto = try body.decode(Cohort_Wire_V1_Submitted.self)
            return CoordinatorReply(
                requestID: proto.requestID,
                .submitted(
                    SubmitReceipt(
                        id: proto.id, name: proto.name, warnings: proto.warnings,
                        alreadySubmitted: proto.alreadySubmitted, reused: Int(proto.reused),
                        rerunOf: proto.rerunOf.isEmpty ? nil : proto.rerunOf)))
        case .groupList:
            let proto = try body.decode(Cohort_Wire_V1_GroupList.self)
            var groups: [GroupSummary] = []
            groups.reserveCapacity(proto.groups.count)
            for group in proto.groups { groups.append(try GroupSummary(proto: group)) }
            return CoordinatorReply(requestID: proto.requestID, .groups(groups))
        case .groupDetail:
            let proto = try body.decode(Cohort_Wire_V1_GroupDetail.self)
            return CoordinatorReply(requestID: proto.requestID, .group(try GroupDetail(proto: proto)))
        case .result:
            let proto = try body.decode(Cohort_Wire_V1_ResultReply.self)
            guard proto.hasOutcome else { throw BodyError("result has no outcome") }
            return CoordinatorReply(
                requestID: proto.requestID,
                .result(
                    ResultReply(
                        group: proto.group, path: proto.hasPath ? proto.path : nil,
                        outcome: try WireOutcome(proto: proto.outcome),
                        outputTruncated: proto.outputTruncated)))
        case .cancelAccepted:
            let proto = try body.decode(Cohort_Wire_V1_CancelAccepted.self)
            return CoordinatorReply(
                requestID: proto.requestID,
                .cancelAccepted(
                    group: proto.group, path: proto.hasPath ? proto.path : nil,
                    alreadyFinished: proto.alreadyFinished == .unspecified
                        ? nil : try ChildState(proto: proto.alreadyFinished)))
        case .watchEvents:
            let proto = try body.decode(Cohort_Wire_V1_WatchEvents.self)
            var events: [WatchEvent] = []
            events.reserveCapacity(proto.events.count)
            for event in proto.events { events.append(try WatchEvent(proto: event)) }
            return CoordinatorReply(requestID: proto.requestID, .watchEvents(events))
        case .workers:
            let proto = try body.decode(Cohort_Wire_V1_WorkersReply.self)
            var workers: [WorkerInfo] = []
            workers.reserveCapacity(proto.workers.count)
            for worker in proto.workers { workers.append(try WorkerInfo(proto: worker)) }
            return CoordinatorReply(requestID: proto.requestID, .workers(workers))
        case .locks:
            let proto = try body.decode(Cohort_Wire_V1_LocksReply.self)
            return CoordinatorReply(requestID: proto.requestID, .locks(proto.locks.map(LockInfo.init(proto:))))
        case .error:
            let proto = try body.decode(Cohort_Wire_V1_ErrorReply.self)
            return CoordinatorReply(
                requestID: proto.requestID,
                .error(
                    ProtocolError(
                        code: try ProtocolError.Code(proto: proto.code), message: proto.message,
                        specErrors: proto.specErrors.map {
                            SpecError(
                                path: $0.path, message: $0.message, line: $0.hasLine ? Int($0.line) : nil,
                                column: $0.hasColumn ? Int($0.column) : nil)
                        },
                        restarting: proto.restarting)))
        case .acknowledged:
            return CoordinatorReply(
                requestID: try body.decode(Cohort_Wire_V1_Acknowledged.self).requestID, .acknowledged)
        case .childrenAdded:
            let proto = try body.decode(Cohort_Wire_V1_ChildrenAdded.self)
            return CoordinatorReply(
                requestID: proto.requestID, .childrenAdded(group: proto.group, paths: proto.paths))
        case .logs:
            let proto = try body.decode(Cohort_Wire_V1_LogsReply.self)
            var lines: [LogLine] = []
            lines.reserveCapacity(proto.lines.count)
            for (index, line) in proto.lines.enumerated() { lines.append(try LogLine(proto: line, index: index)) }
            return CoordinatorReply(
                requestID: proto.requestID,
                .logs(
                    LogsPage(
                        group: proto.group, path: proto.path, attempt: proto.attempt,
                        latestAttempt: proto.latestAttempt, state: try ChildState(proto: proto.state),
                        attemptFinished: proto.attemptFinished, lines: lines, lastSequence: proto.lastSequence,
                        cutBytes: proto.cutBytes, worker: proto.worker, more: proto.more,
                        error: proto.hasError ? proto.error : nil)))
        case nil:
            throw .unknownKind
        }
    }
}

extension GroupSummary {
    init(proto: Cohort_Wire_V1_GroupSummary) throws(BodyError) {
        self.init(
            id: proto.id, name: proto.name, state: try GroupState(proto: proto.state),
            submittedAt: WireTimestamp(nanosecondsSinceEpoch: proto.submittedAt),
            finishedAt: .optional(proto.finishedAt), priority: proto.priority)
    }

    var proto: Cohort_Wire_V1_GroupSummary {
        var proto = Cohort_Wire_V1_GroupSummary()
        proto.id = id
        proto.name = name
        proto.state = state.proto
        proto.submittedAt = submittedAt.nanosecondsSinceEpoch
        proto.finishedAt = finishedAt?.nanosecondsSinceEpoch ?? 0
        proto.priority = priority
        return proto
    }
}

extension GroupDetail {
    init(proto: Cohort_Wire_V1_GroupDetail) throws(BodyError) {
        var children: [ChildStatus] = []
        children.reserveCapacity(proto.children.count)
        for child in proto.children { children.append(try ChildStatus(proto: child)) }
        self.init(
            id: proto.id, name: proto.name, state: try GroupState(proto: proto.state),
            submittedAt: WireTimestamp(nanosecondsSinceEpoch: proto.submittedAt),
            finishedAt: .optional(proto.finishedAt),
            reason: proto.hasReason ? proto.reason : nil,
            children: children, priority: proto.priority)
    }

    var proto: Cohort_Wire_V1_GroupDetail {
        var proto = Cohort_Wire_V1_GroupDetail()
        proto.id = id
        proto.name = name
        proto.state = state.proto
        proto.submittedAt = submittedAt.nanosecondsSinceEpoch
        proto.finishedAt = finishedAt.wireValue
        if let reason { proto.reason = reason }
        proto.children = children.map(\.proto)
        proto.priority = priority
        return proto
    }
}

extension ChildStatus {
    init(proto: Cohort_Wire_V1_ChildStatus) throws(BodyError) {
        self.init(
            name: proto.name, path: proto.path, state: try ChildState(proto: proto.state),
            worker: proto.hasWorker ? proto.worker : nil,
            attempt: proto.attempt,
            error: proto.hasError ? proto.error : nil,
            startedAt: .optional(proto.startedAt),
            finishedAt: .optional(proto.finishedAt),
            waitingReason: proto.hasWaitingReason ? proto.waitingReason : nil,
            outputTruncated: proto.outputTruncated,
            isGroup: proto.isGroup, dependsOn: proto.dependsOn, kind: proto.kind,
            earlierAttempts: proto.earlierAttempts.map(AttemptSummary.init(proto:)))
    }

    var proto: Cohort_Wire_V1_ChildStatus {
        var proto = Cohort_Wire_V1_ChildStatus()
        proto.name = name
        proto.path = path
        proto.state = state.proto
        if let worker { proto.worker = worker }
        proto.attempt = attempt
        if let error { proto.error = error }
        proto.startedAt = startedAt.wireValue
        proto.finishedAt = finishedAt.wireValue
        if let waitingReason { proto.waitingReason = waitingReason }
        proto.outputTruncated = outputTruncated
        proto.isGroup = isGroup
        proto.dependsOn = dependsOn
        proto.kind = kind
        proto.earlierAttempts = earlierAttempts.map(\.proto)
        return proto
    }
}

extension AttemptSummary {
    init(proto: Cohort_Wire_V1_AttemptSummary) {
        self.init(
            attempt: proto.attempt, worker: proto.worker, startedAt: .optional(proto.startedAt),
            finishedAt: .optional(proto.finishedAt), outcome: proto.outcome, error: proto.error)
    }

    var proto: Cohort_Wire_V1_AttemptSummary {
        var proto = Cohort_Wire_V1_AttemptSummary()
        proto.attempt = attempt
        proto.worker = worker
        proto.startedAt = startedAt.wireValue
        proto.finishedAt = finishedAt.wireValue
        proto.outcome = outcome
        proto.error = error
        return proto
    }
}

extension WatchEvent {
    init(proto: Cohort_Wire_V1_WatchEvent) throws(BodyError) {
        let kind: Kind
        switch proto.kind {
        case .child(let child):
            kind = .child(try ChildStatus(proto: child))
        case .finished(let finished):
            kind = .finished(
                state: try GroupState(proto: finished.state), reason: finished.hasReason ? finished.reason : nil)
        case nil:
            throw BodyError("watch event has no kind")
        }
        self.init(group: proto.group, at: WireTimestamp(nanosecondsSinceEpoch: proto.at), kind)
    }

    var proto: Cohort_Wire_V1_WatchEvent {
        var proto = Cohort_Wire_V1_WatchEvent()
        proto.group = group
        proto.at = at.nanosecondsSinceEpoch
        switch kind {
        case .child(let child):
            proto.kind = .child(child.proto)
        case .finished(let state, let reason):
            var finished = Cohort_Wire_V1_GroupFinished()
            finished.state = state.proto
            if let reason { finished.reason = reason }
            proto.kind = .finished(finished)
        }
        return proto
    }
}

extension WorkerInfo {
    init(proto: Cohort_Wire_V1_WorkerInfo) throws(BodyError) {
        let state: WorkerState
        switch proto.state {
        case .joining: state = .joining
        case .ready: state = .ready
        case .draining: state = .draining
        case .lost: state = .lost
        case .unspecified, .UNRECOGNIZED: throw BodyError("worker state \(proto.state.rawValue) is unknown")
        }
        self.init(
            id: proto.id, name: proto.name, host: proto.host, labels: proto.labels,
            slots: proto.slots, running: proto.running, state: state, kinds: proto.kinds, drained: proto.drained,
            lastHeardAgo: proto.hasLastHeardNanos ? .nanoseconds(Int64(clamping: proto.lastHeardNanos)) : nil)
    }

    var proto: Cohort_Wire_V1_WorkerInfo {
        var proto = Cohort_Wire_V1_WorkerInfo()
        proto.id = id
        proto.name = name
        proto.host = host
        proto.labels = labels
        proto.slots = slots
        proto.running = running
        proto.kinds = kinds
        proto.drained = drained
        if let lastHeardAgo { proto.lastHeardNanos = lastHeardAgo.wireNanos }
        proto.state =
            switch state {
            case .joining: .joining
            case .ready: .ready
            case .draining: .draining
            case .lost: .lost
            }
        return proto
    }
}

extension LockInfo {
    init(proto: Cohort_Wire_V1_LockInfo) {
        func holder(_ message: Cohort_Wire_V1_LockHolderStatus) -> LockHolderStatus {
            LockHolderStatus(
                group: message.group, child: message.child, attempt: message.attempt,
                worker: message.worker.isEmpty ? nil : message.worker,
                heldFor: message.hasHeldNanos ? .nanoseconds(Int64(clamping: message.heldNanos)) : nil,
                token: message.hasToken ? message.token : nil)
        }
        // An older coordinator sends only `holder`.
        let holders =
            proto.holders.isEmpty ? (proto.hasHolder ? [holder(proto.holder)] : []) : proto.holders.map(holder)
        self.init(
            category: proto.category, token: proto.token, limit: max(proto.limit, 1), holders: holders,
            waiters: proto.waiters.map {
                LockWaiter(
                    group: $0.group, child: $0.child,
                    waitingFor: $0.hasWaitingNanos ? .nanoseconds(Int64(clamping: $0.waitingNanos)) : nil)
            })
    }

    var proto: Cohort_Wire_V1_LockInfo {
        var proto = Cohort_Wire_V1_LockInfo()
        proto.category = category
        proto.token = token
        proto.limit = limit
        proto.holders = holders.map { holder in
            var message = Cohort_Wire_V1_LockHolderStatus()
            message.group = holder.group
            message.child = holder.child
            message.attempt = holder.attempt
            message.worker = holder.worker ?? ""
            if let held = holder.heldFor { message.heldNanos = held.wireNanos }
            if let token = holder.token { message.token = token }
            return message
        }
        if let first = proto.holders.first { proto.holder = first }
        proto.waiters = waiters.map { waiter in
            var message = Cohort_Wire_V1_LockWaiter()
            message.group = waiter.group
            message.child = waiter.child
            if let waiting = waiter.waitingFor { message.waitingNanos = waiting.wireNanos }
            return message
        }
        return proto
    }
}

extension Duration {
    /// Whole nanoseconds for a `uint64` field: 0 for a negative duration, saturating above.
    var wireNanos: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (scaled, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        return scaled.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000)).partialValue
    }
}
