// Worker-message family <-> Cohort_Wire_V1_WorkerMessage.
// `started` and `results` are on the hot path: no intermediate collections.

extension WorkerMessage {
    init(proto: Cohort_Wire_V1_WorkerMessage) throws(BodyError) {
        switch proto.kind {
        case .ready(let ready):
            var running: [RunningTask] = []
            running.reserveCapacity(ready.running.count)
            for (index, task) in ready.running.enumerated() {
                guard task.hasTask else { throw BodyError("running[\(index)] has no task") }
                running.append(RunningTask(
                    task: TaskRef(proto: task.task), startedAt: .optional(task.startedAt),
                    heldTokens: task.heldTokens))
            }
            self = .ready(WorkerReady(
                name: ready.name, host: ready.host, sessionID: ready.sessionID, labels: ready.labels,
                slots: ready.slots, kinds: ready.kinds, running: running))
        case .heartbeat:
            self = .heartbeat
        case .started(let batch):
            var started: [TaskStart] = []
            started.reserveCapacity(batch.tasks.count)
            for (index, start) in batch.tasks.enumerated() {
                guard start.hasTask else { throw BodyError("started[\(index)] has no task") }
                started.append(TaskStart(
                    task: TaskRef(proto: start.task),
                    startedAt: WireTimestamp(nanosecondsSinceEpoch: start.startedAt)))
            }
            self = .started(started)
        case .results(let batch):
            var results: [TaskResult] = []
            results.reserveCapacity(batch.results.count)
            for index in batch.results.indices {
                results.append(try TaskResult(proto: batch.results[index], index: index))
            }
            self = .results(results)
        case .lockRequest(let request):
            guard request.hasTask else { throw BodyError("lock request has no task") }
            self = .lockRequest(LockRequest(
                requestID: request.requestID, task: TaskRef(proto: request.task), categories: request.categories))
        case .lockRelease(let release):
            self = .lockRelease(requestID: release.requestID)
        case .lockWithdraw(let withdraw):
            self = .lockWithdraw(requestID: withdraw.requestID)
        case .draining(let draining):
            self = .draining(reason: draining.reason)
        case .disconnect(let disconnect):
            self = .disconnect(reason: disconnect.reason)
        case nil:
            throw .missingKind
        }
    }

    var proto: Cohort_Wire_V1_WorkerMessage {
        var proto = Cohort_Wire_V1_WorkerMessage()
        switch self {
        case .ready(let ready):
            var message = Cohort_Wire_V1_Ready()
            message.name = ready.name
            message.host = ready.host
            message.sessionID = ready.sessionID
            message.labels = ready.labels
            message.slots = ready.slots
            message.kinds = ready.kinds
            message.running = ready.running.map { running in
                var task = Cohort_Wire_V1_RunningTask()
                task.task = running.task.proto
                task.startedAt = running.startedAt.wireValue
                task.heldTokens = running.heldTokens
                return task
            }
            proto.kind = .ready(message)
        case .heartbeat:
            proto.kind = .heartbeat(Cohort_Wire_V1_Heartbeat())
        case .started(let started):
            var message = Cohort_Wire_V1_TasksStarted()
            message.tasks.reserveCapacity(started.count)
            for start in started {
                var task = Cohort_Wire_V1_TaskStarted()
                task.task = start.task.proto
                task.startedAt = start.startedAt.nanosecondsSinceEpoch
                message.tasks.append(task)
            }
            proto.kind = .started(message)
        case .results(let results):
            var message = Cohort_Wire_V1_TaskResults()
            message.results.reserveCapacity(results.count)
            for result in results { message.results.append(result.proto) }
            proto.kind = .results(message)
        case .lockRequest(let request):
            var message = Cohort_Wire_V1_LockRequest()
            message.requestID = request.requestID
            message.task = request.task.proto
            message.categories = request.categories
            proto.kind = .lockRequest(message)
        case .lockRelease(let requestID):
            var message = Cohort_Wire_V1_LockRelease()
            message.requestID = requestID
            proto.kind = .lockRelease(message)
        case .lockWithdraw(let requestID):
            var message = Cohort_Wire_V1_LockWithdraw()
            message.requestID = requestID
            proto.kind = .lockWithdraw(message)
        case .draining(let reason):
            var message = Cohort_Wire_V1_Draining()
            message.reason = reason
            proto.kind = .draining(message)
        case .disconnect(let reason):
            var message = Cohort_Wire_V1_Disconnect()
            message.reason = reason
            proto.kind = .disconnect(message)
        }
        return proto
    }
}

extension TaskResult {
    @inline(__always)
    init(proto: Cohort_Wire_V1_TaskResult, index: Int) throws(BodyError) {
        guard proto.hasTask else { throw BodyError("results[\(index)] has no task") }
        guard proto.hasOutcome else { throw BodyError("results[\(index)] has no outcome") }
        self.init(
            task: TaskRef(proto: proto.task),
            outcome: try TaskOutcome(proto: proto.outcome),
            startedAt: WireTimestamp(nanosecondsSinceEpoch: proto.startedAt),
            finishedAt: WireTimestamp(nanosecondsSinceEpoch: proto.finishedAt))
    }

    @inline(__always)
    var proto: Cohort_Wire_V1_TaskResult {
        var proto = Cohort_Wire_V1_TaskResult()
        proto.task = task.proto
        proto.outcome = outcome.proto
        proto.startedAt = startedAt.nanosecondsSinceEpoch
        proto.finishedAt = finishedAt.nanosecondsSinceEpoch
        return proto
    }
}
