// Client-request family <-> Submit (kind 1) … ClientDisconnect (kind 9), DrainRequest (kind 10),
// UndrainRequest (kind 11), AddChildren (kind 12), RerunRequest (kind 14).
// Every body carries the request id as field 1.

extension ClientRequest: WireBody {
    static var family: WireFamily { .clientRequest }

    enum WireKind: UInt8 {
        case submit = 1
        case status, result, cancel, watch, unwatch, workers, locks, disconnect, drain, undrain, addChildren
        case logs = 13
        case rerun = 14
    }

    var wireKind: UInt8 {
        let kind: WireKind =
            switch kind {
            case .submit: .submit
            case .status: .status
            case .result: .result
            case .cancel: .cancel
            case .watch: .watch
            case .unwatch: .unwatch
            case .workers: .workers
            case .locks: .locks
            case .disconnect: .disconnect
            case .drain: .drain
            case .undrain: .undrain
            case .rerun: .rerun
            case .addChildren: .addChildren
            case .logs: .logs
            }
        return kind.rawValue
    }

    func serializedBody() throws(WireError) -> [UInt8] {
        switch kind {
        case .submit(let submission):
            var proto = Cohort_Wire_V1_Submit()
            proto.requestID = requestID
            if let groupID = submission.groupID { proto.groupID = groupID }
            proto.strict = submission.strict
            if let priority = submission.priority { proto.priority = priority }
            proto.document = submission.document
            proto.format = submission.format.proto
            if let sourceName = submission.sourceName { proto.sourceName = sourceName }
            return try serialize(proto)
        case .status(let group, let filter):
            var proto = Cohort_Wire_V1_StatusRequest()
            proto.requestID = requestID
            if let attemptToken { proto.attemptToken = attemptToken }
            if let group { proto.group = group }
            proto.states = GroupState.allCases.filter(filter.states.contains).map(\.proto)
            if let glob = filter.nameGlob { proto.nameGlob = glob }
            proto.submittedSince = filter.submittedSince?.nanosecondsSinceEpoch ?? 0
            proto.limit = filter.limit
            return try serialize(proto)
        case .result(let group, let path):
            var proto = Cohort_Wire_V1_ResultRequest()
            proto.requestID = requestID
            if let attemptToken { proto.attemptToken = attemptToken }
            proto.group = group
            if let path { proto.path = path }
            return try serialize(proto)
        case .cancel(let group, let path, let reason):
            var proto = Cohort_Wire_V1_CancelRequest()
            proto.requestID = requestID
            if let attemptToken { proto.attemptToken = attemptToken }
            proto.group = group
            if let path { proto.path = path }
            proto.reason = reason
            return try serialize(proto)
        case .watch(let group):
            var proto = Cohort_Wire_V1_WatchRequest()
            proto.requestID = requestID
            if let attemptToken { proto.attemptToken = attemptToken }
            proto.group = group
            return try serialize(proto)
        case .unwatch(let group):
            var proto = Cohort_Wire_V1_UnwatchRequest()
            proto.requestID = requestID
            if let attemptToken { proto.attemptToken = attemptToken }
            proto.group = group
            return try serialize(proto)
        case .workers:
            var proto = Cohort_Wire_V1_WorkersRequest()
            proto.requestID = requestID
            return try serialize(proto)
        case .locks:
            var proto = Cohort_Wire_V1_LocksRequest()
            proto.requestID = requestID
            return try serialize(proto)
        case .disconnect(let reason):
            var proto = Cohort_Wire_V1_ClientDisconnect()
            proto.requestID = requestID
            proto.reason = reason
            return try serialize(proto)
        case .drain(let worker):
            var proto = Cohort_Wire_V1_DrainRequest()
            proto.requestID = requestID
            proto.worker = worker
            return try serialize(proto)
        case .undrain(let worker):
            var proto = Cohort_Wire_V1_UndrainRequest()
            proto.requestID = requestID
            proto.worker = worker
            return try serialize(proto)
        case .rerun(let group, let id):
            var proto = Cohort_Wire_V1_RerunRequest()
            proto.requestID = requestID
            proto.group = group
            if let id { proto.groupID = id }
            return try serialize(proto)
        case .addChildren(let group, let addition):
            var proto = Cohort_Wire_V1_AddChildren()
            proto.requestID = requestID
            if let attemptToken { proto.attemptToken = attemptToken }
            proto.group = group
            proto.document = addition.document
            proto.format = addition.format.proto
            if let into = addition.into { proto.into = into }
            return try serialize(proto)
        case .logs(let query):
            var proto = Cohort_Wire_V1_LogsRequest()
            proto.requestID = requestID
            if let attemptToken { proto.attemptToken = attemptToken }
            proto.group = query.group
            proto.path = query.path
            proto.attempt = query.attempt
            proto.after = query.after
            proto.before = query.before
            proto.tail = query.tail
            proto.since = query.since?.nanosecondsSinceEpoch ?? 0
            proto.limit = query.limit
            return try serialize(proto)
        }
    }

    static func decode(kind: UInt8, body: UnsafeRawBufferPointer) throws(BodyError) -> ClientRequest {
        switch WireKind(rawValue: kind) {
        case .submit:
            let proto = try body.decode(Cohort_Wire_V1_Submit.self)
            let format = try SpecFormat(proto: proto.format)
            return ClientRequest(
                requestID: proto.requestID,
                .submit(
                    Submission(
                        groupID: proto.hasGroupID ? proto.groupID : nil,
                        document: proto.document,
                        format: format,
                        sourceName: proto.hasSourceName ? proto.sourceName : nil, strict: proto.strict,
                        priority: proto.hasPriority ? proto.priority : nil)))
        case .status:
            let proto = try body.decode(Cohort_Wire_V1_StatusRequest.self)
            var states = Set<GroupState>()
            for state in proto.states { states.insert(try GroupState(proto: state)) }
            let filter = GroupFilter(
                states: states, nameGlob: proto.hasNameGlob ? proto.nameGlob : nil,
                submittedSince: proto.submittedSince == 0
                    ? nil : WireTimestamp(nanosecondsSinceEpoch: proto.submittedSince),
                limit: proto.limit)
            return ClientRequest(
                requestID: proto.requestID, .status(group: proto.hasGroup ? proto.group : nil, filter: filter),
                attemptToken: proto.attemptToken.isEmpty ? nil : proto.attemptToken)
        case .result:
            let proto = try body.decode(Cohort_Wire_V1_ResultRequest.self)
            return ClientRequest(
                requestID: proto.requestID, .result(group: proto.group, path: proto.hasPath ? proto.path : nil),
                attemptToken: proto.attemptToken.isEmpty ? nil : proto.attemptToken)
        case .cancel:
            let proto = try body.decode(Cohort_Wire_V1_CancelRequest.self)
            return ClientRequest(
                requestID: proto.requestID,
                .cancel(group: proto.group, path: proto.hasPath ? proto.path : nil, reason: proto.reason),
                attemptToken: proto.attemptToken.isEmpty ? nil : proto.attemptToken)
        case .watch:
            let proto = try body.decode(Cohort_Wire_V1_WatchRequest.self)
            return ClientRequest(
                requestID: proto.requestID, .watch(group: proto.group),
                attemptToken: proto.attemptToken.isEmpty ? nil : proto.attemptToken)
        case .unwatch:
            let proto = try body.decode(Cohort_Wire_V1_UnwatchRequest.self)
            return ClientRequest(
                requestID: proto.requestID, .unwatch(group: proto.group),
                attemptToken: proto.attemptToken.isEmpty ? nil : proto.attemptToken)
        case .workers:
            return ClientRequest(requestID: try body.decode(Cohort_Wire_V1_WorkersRequest.self).requestID, .workers)
        case .locks:
            return ClientRequest(requestID: try body.decode(Cohort_Wire_V1_LocksRequest.self).requestID, .locks)
        case .disconnect:
            let proto = try body.decode(Cohort_Wire_V1_ClientDisconnect.self)
            return ClientRequest(requestID: proto.requestID, .disconnect(reason: proto.reason))
        case .drain:
            let proto = try body.decode(Cohort_Wire_V1_DrainRequest.self)
            return ClientRequest(requestID: proto.requestID, .drain(worker: proto.worker))
        case .undrain:
            let proto = try body.decode(Cohort_Wire_V1_UndrainRequest.self)
            return ClientRequest(requestID: proto.requestID, .undrain(worker: proto.worker))
        case .rerun:
            let proto = try body.decode(Cohort_Wire_V1_RerunRequest.self)
            return ClientRequest(
                requestID: proto.requestID, .rerun(group: proto.group, id: proto.groupID.isEmpty ? nil : proto.groupID))
        case .addChildren:
            let proto = try body.decode(Cohort_Wire_V1_AddChildren.self)
            return ClientRequest(
                requestID: proto.requestID,
                .addChildren(
                    group: proto.group,
                    ChildrenAddition(
                        document: proto.document, format: try SpecFormat(proto: proto.format),
                        into: proto.hasInto ? proto.into : nil)),
                attemptToken: proto.attemptToken.isEmpty ? nil : proto.attemptToken)
        case .logs:
            let proto = try body.decode(Cohort_Wire_V1_LogsRequest.self)
            return ClientRequest(
                requestID: proto.requestID,
                .logs(
                    LogsQuery(
                        group: proto.group, path: proto.path, attempt: proto.attempt, after: proto.after,
                        before: proto.before, tail: proto.tail,
                        since: proto.since == 0 ? nil : WireTimestamp(nanosecondsSinceEpoch: proto.since),
                        limit: proto.limit)),
                attemptToken: proto.attemptToken.isEmpty ? nil : proto.attemptToken)
        case nil:
            throw .unknownKind
        }
    }
}

extension SpecFormat {
    init(proto: Cohort_Wire_V1_SpecFormat) throws(BodyError) {
        switch proto {
        case .yaml: self = .yaml
        case .json: self = .json
        case .unspecified, .UNRECOGNIZED: throw BodyError("spec format \(proto.rawValue) is unknown")
        }
    }

    var proto: Cohort_Wire_V1_SpecFormat {
        switch self {
        case .yaml: .yaml
        case .json: .json
        }
    }
}
