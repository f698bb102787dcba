// Coordinator-reply family <-> Cohort_Wire_V1_CoordinatorReply.

extension CoordinatorReply {
    init(proto: Cohort_Wire_V1_CoordinatorReply) throws(BodyError) {
        let kind: Kind
        switch proto.kind {
        case .submitted(let submitted):
            kind = .submitted(Submitted(
                id: submitted.id, name: submitted.name, warnings: submitted.warnings,
                alreadySubmitted: submitted.alreadySubmitted))
        case .groupList(let list):
            var groups: [GroupSummary] = []
            groups.reserveCapacity(list.groups.count)
            for group in list.groups { groups.append(try GroupSummary(proto: group)) }
            kind = .groups(groups)
        case .groupDetail(let detail):
            kind = .group(try GroupDetail(proto: detail))
        case .result(let result):
            guard result.hasOutcome else { throw BodyError("result has no outcome") }
            kind = .result(ResultReply(
                group: result.group, path: result.hasPath ? result.path : nil,
                outcome: try TaskOutcome(proto: result.outcome)))
        case .cancelAccepted(let accepted):
            kind = .cancelAccepted(group: accepted.group, path: accepted.hasPath ? accepted.path : nil)
        case .watchEvents(let batch):
            var events: [WatchEvent] = []
            events.reserveCapacity(batch.events.count)
            for event in batch.events { events.append(try WatchEvent(proto: event)) }
            kind = .watchEvents(events)
        case .workers(let reply):
            var workers: [WorkerInfo] = []
            workers.reserveCapacity(reply.workers.count)
            for worker in reply.workers { workers.append(try WorkerInfo(proto: worker)) }
            kind = .workers(workers)
        case .locks(let reply):
            kind = .locks(reply.locks.map(LockInfo.init(proto:)))
        case .error(let error):
            kind = .error(ProtocolError(
                code: try ProtocolError.Code(proto: error.code), message: error.message,
                specErrors: error.specErrors.map { SpecError(path: $0.path, message: $0.message) }))
        case .acknowledged:
            kind = .acknowledged
        case nil:
            throw .missingKind
        }
        self.init(requestID: proto.requestID, kind)
    }

    var proto: Cohort_Wire_V1_CoordinatorReply {
        var proto = Cohort_Wire_V1_CoordinatorReply()
        proto.requestID = requestID
        switch kind {
        case .submitted(let submitted):
            var message = Cohort_Wire_V1_Submitted()
            message.id = submitted.id
            message.name = submitted.name
            message.warnings = submitted.warnings
            message.alreadySubmitted = submitted.alreadySubmitted
            proto.kind = .submitted(message)
        case .groups(let groups):
            var message = Cohort_Wire_V1_GroupList()
            message.groups = groups.map(\.proto)
            proto.kind = .groupList(message)
        case .group(let detail):
            proto.kind = .groupDetail(detail.proto)
        case .result(let result):
            var message = Cohort_Wire_V1_ResultReply()
            message.group = result.group
            if let path = result.path { message.path = path }
            message.outcome = result.outcome.proto
            proto.kind = .result(message)
        case .cancelAccepted(let group, let path):
            var message = Cohort_Wire_V1_CancelAccepted()
            message.group = group
            if let path { message.path = path }
            proto.kind = .cancelAccepted(message)
        case .watchEvents(let events):
            var message = Cohort_Wire_V1_WatchEvents()
            message.events = events.map(\.proto)
            proto.kind = .watchEvents(message)
        case .workers(let workers):
            var message = Cohort_Wire_V1_WorkersReply()
            message.workers = workers.map(\.proto)
            proto.kind = .workers(message)
        case .locks(let locks):
            var message = Cohort_Wire_V1_LocksReply()
            message.locks = locks.map(\.proto)
            proto.kind = .locks(message)
        case .error(let error):
            var message = Cohort_Wire_V1_ErrorReply()
            message.code = error.code.proto
            message.message = error.message
            message.specErrors = error.specErrors.map { specError in
                var proto = Cohort_Wire_V1_SpecError()
                proto.path = specError.path
                proto.message = specError.message
                return proto
            }
            proto.kind = .error(message)
        case .acknowledged:
            proto.kind = .acknowledged(Cohort_Wire_V1_Acknowledged())
        }
        return proto
    }
}

extension GroupSummary {
    init(proto: Cohort_Wire_V1_GroupSummary) throws(BodyError) {
        self.init(
            id: proto.id, name: proto.name, state: try GroupState(proto: proto.state),
            submittedAt: WireTimestamp(nanosecondsSinceEpoch: proto.submittedAt))
    }

    var proto: Cohort_Wire_V1_GroupSummary {
        var proto = Cohort_Wire_V1_GroupSummary()
        proto.id = id
        proto.name = name
        proto.state = state.proto
        proto.submittedAt = submittedAt.nanosecondsSinceEpoch
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
            children: children)
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
            waitingReason: proto.hasWaitingReason ? proto.waitingReason : nil)
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
            kind = .finished(state: try GroupState(proto: finished.state), reason: finished.hasReason ? finished.reason : nil)
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
            slots: proto.slots, running: proto.running, state: state)
    }

    var proto: Cohort_Wire_V1_WorkerInfo {
        var proto = Cohort_Wire_V1_WorkerInfo()
        proto.id = id
        proto.name = name
        proto.host = host
        proto.labels = labels
        proto.slots = slots
        proto.running = running
        proto.state = switch state {
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
        self.init(
            category: proto.category,
            token: proto.token,
            holder: proto.hasHolder
                ? LockHolder(
                    group: proto.holder.group, child: proto.holder.child,
                    attempt: proto.holder.attempt, worker: proto.holder.worker)
                : nil,
            waiters: proto.waiters.map { LockWaiter(group: $0.group, child: $0.child) })
    }

    var proto: Cohort_Wire_V1_LockInfo {
        var proto = Cohort_Wire_V1_LockInfo()
        proto.category = category
        proto.token = token
        if let holder {
            var message = Cohort_Wire_V1_LockHolder()
            message.group = holder.group
            message.child = holder.child
            message.attempt = holder.attempt
            message.worker = holder.worker
            proto.holder = message
        }
        proto.waiters = waiters.map { waiter in
            var message = Cohort_Wire_V1_LockWaiter()
            message.group = waiter.group
            message.child = waiter.child
            return message
        }
        return proto
    }
}
