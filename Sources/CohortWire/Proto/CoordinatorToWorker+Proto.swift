// Coordinator-to-worker family <-> Cohort_Wire_V1_CoordinatorToWorker.
// `dispatch` and `cancel` are on the hot path: no intermediate collections.

extension CoordinatorToWorker {
    init(proto: Cohort_Wire_V1_CoordinatorToWorker) throws(BodyError) {
        switch proto.kind {
        case .heartbeat:
            self = .heartbeat
        case .dispatch(let batch):
            var tasks: [DispatchTask] = []
            tasks.reserveCapacity(batch.tasks.count)
            for index in batch.tasks.indices {
                tasks.append(try DispatchTask(proto: batch.tasks[index], index: index))
            }
            self = .dispatch(tasks)
        case .cancel(let batch):
            var cancellations: [TaskCancellation] = []
            cancellations.reserveCapacity(batch.tasks.count)
            for (index, cancellation) in batch.tasks.enumerated() {
                guard cancellation.hasTask else { throw BodyError("cancel[\(index)] has no task") }
                cancellations.append(TaskCancellation(task: TaskRef(proto: cancellation.task), reason: cancellation.reason))
            }
            self = .cancel(cancellations)
        case .lockGrant(let grant):
            self = .lockGrant(LockGrant(requestID: grant.requestID, tokens: grant.tokens))
        case .lockDenied(let denied):
            let kind: LockDenial.Kind
            switch denied.kind {
            case .denied: kind = .denied
            case .cancelled: kind = .cancelled
            case .revoked: kind = .revoked
            case .unspecified, .UNRECOGNIZED: throw BodyError("lock denial kind \(denied.kind.rawValue) is unknown")
            }
            self = .lockDenied(LockDenial(requestID: denied.requestID, kind: kind, reason: denied.reason))
        case .shutdown(let notice):
            self = .shutdown(ShutdownNotice(reason: notice.reason, restarting: notice.restarting))
        case .error(let error):
            self = .error(WorkerError(
                code: try ProtocolError.Code(proto: error.code), message: error.message,
                task: error.hasTask ? TaskRef(proto: error.task) : nil,
                requestID: error.hasRequestID ? error.requestID : nil))
        case nil:
            throw .missingKind
        }
    }

    var proto: Cohort_Wire_V1_CoordinatorToWorker {
        var proto = Cohort_Wire_V1_CoordinatorToWorker()
        switch self {
        case .heartbeat:
            proto.kind = .heartbeat(Cohort_Wire_V1_Heartbeat())
        case .dispatch(let tasks):
            var message = Cohort_Wire_V1_Dispatch()
            message.tasks.reserveCapacity(tasks.count)
            for task in tasks { message.tasks.append(task.proto) }
            proto.kind = .dispatch(message)
        case .cancel(let cancellations):
            var message = Cohort_Wire_V1_CancelTasks()
            message.tasks.reserveCapacity(cancellations.count)
            for cancellation in cancellations {
                var task = Cohort_Wire_V1_TaskCancellation()
                task.task = cancellation.task.proto
                task.reason = cancellation.reason
                message.tasks.append(task)
            }
            proto.kind = .cancel(message)
        case .lockGrant(let grant):
            var message = Cohort_Wire_V1_LockGrant()
            message.requestID = grant.requestID
            message.tokens = grant.tokens
            proto.kind = .lockGrant(message)
        case .lockDenied(let denial):
            var message = Cohort_Wire_V1_LockDenied()
            message.requestID = denial.requestID
            message.kind = switch denial.kind {
            case .denied: .denied
            case .cancelled: .cancelled
            case .revoked: .revoked
            }
            message.reason = denial.reason
            proto.kind = .lockDenied(message)
        case .shutdown(let notice):
            var message = Cohort_Wire_V1_ShutdownNotice()
            message.reason = notice.reason
            message.restarting = notice.restarting
            proto.kind = .shutdown(message)
        case .error(let error):
            var message = Cohort_Wire_V1_WorkerError()
            message.code = error.code.proto
            message.message = error.message
            if let task = error.task { message.task = task.proto }
            if let requestID = error.requestID { message.requestID = requestID }
            proto.kind = .error(message)
        }
        return proto
    }
}

extension DispatchTask {
    @inline(__always)
    init(proto: Cohort_Wire_V1_Task, index: Int) throws(BodyError) {
        guard proto.hasTask else { throw BodyError("dispatch[\(index)] has no task") }
        self.init(
            task: TaskRef(proto: proto.task),
            kind: proto.kind,
            input: proto.input,
            fencingTokens: proto.fencingTokens,
            timeout: proto.timeoutMs == 0 ? nil : .milliseconds(Int64(clamping: proto.timeoutMs)),
            env: proto.env)
    }

    @inline(__always)
    var proto: Cohort_Wire_V1_Task {
        var proto = Cohort_Wire_V1_Task()
        proto.task = task.proto
        proto.kind = kind
        proto.input = input
        proto.fencingTokens = fencingTokens
        // A timeout that rounds to 0 ms would read as "none": send 1 ms instead.
        if let timeout { proto.timeoutMs = max(1, timeout.milliseconds(clampedTo: UInt64.self)) }
        proto.env = env
        return proto
    }
}
