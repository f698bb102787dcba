// Client-request family <-> Cohort_Wire_V1_ClientRequest.

extension ClientRequest {
    init(proto: Cohort_Wire_V1_ClientRequest) throws(BodyError) {
        let kind: Kind
        switch proto.kind {
        case .submit(let submit):
            kind = .submit(try Submission(proto: submit))
        case .status(let status):
            kind = .status(group: status.hasGroup ? status.group : nil)
        case .result(let result):
            kind = .result(group: result.group, path: result.hasPath ? result.path : nil)
        case .cancel(let cancel):
            kind = .cancel(group: cancel.group, path: cancel.hasPath ? cancel.path : nil, reason: cancel.reason)
        case .watch(let watch):
            kind = .watch(group: watch.group)
        case .unwatch(let unwatch):
            kind = .unwatch(group: unwatch.group)
        case .workers:
            kind = .workers
        case .locks:
            kind = .locks
        case .disconnect(let disconnect):
            kind = .disconnect(reason: disconnect.reason)
        case nil:
            throw .missingKind
        }
        self.init(requestID: proto.requestID, kind)
    }

    var proto: Cohort_Wire_V1_ClientRequest {
        var proto = Cohort_Wire_V1_ClientRequest()
        proto.requestID = requestID
        switch kind {
        case .submit(let submission):
            proto.kind = .submit(submission.proto)
        case .status(let group):
            var status = Cohort_Wire_V1_StatusRequest()
            if let group { status.group = group }
            proto.kind = .status(status)
        case .result(let group, let path):
            var result = Cohort_Wire_V1_ResultRequest()
            result.group = group
            if let path { result.path = path }
            proto.kind = .result(result)
        case .cancel(let group, let path, let reason):
            var cancel = Cohort_Wire_V1_CancelRequest()
            cancel.group = group
            if let path { cancel.path = path }
            cancel.reason = reason
            proto.kind = .cancel(cancel)
        case .watch(let group):
            var watch = Cohort_Wire_V1_WatchRequest()
            watch.group = group
            proto.kind = .watch(watch)
        case .unwatch(let group):
            var unwatch = Cohort_Wire_V1_UnwatchRequest()
            unwatch.group = group
            proto.kind = .unwatch(unwatch)
        case .workers:
            proto.kind = .workers(Cohort_Wire_V1_WorkersRequest())
        case .locks:
            proto.kind = .locks(Cohort_Wire_V1_LocksRequest())
        case .disconnect(let reason):
            var disconnect = Cohort_Wire_V1_Disconnect()
            disconnect.reason = reason
            proto.kind = .disconnect(disconnect)
        }
        return proto
    }
}

extension Submission {
    init(proto: Cohort_Wire_V1_Submit) throws(BodyError) {
        let format: SpecFormat
        switch proto.format {
        case .yaml: format = .yaml
        case .json: format = .json
        case .unspecified, .UNRECOGNIZED: throw BodyError("spec format \(proto.format.rawValue) is unknown")
        }
        self.init(
            groupID: proto.hasGroupID ? proto.groupID : nil,
            document: proto.document,
            format: format,
            sourceName: proto.hasSourceName ? proto.sourceName : nil
        )
    }

    var proto: Cohort_Wire_V1_Submit {
        var proto = Cohort_Wire_V1_Submit()
        if let groupID { proto.groupID = groupID }
        proto.document = document
        proto.format = switch format {
        case .yaml: .yaml
        case .json: .json
        }
        if let sourceName { proto.sourceName = sourceName }
        return proto
    }
}
