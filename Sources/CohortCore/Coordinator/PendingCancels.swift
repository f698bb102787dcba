/// A cancel accepted but not yet acknowledged: some attempt it covers was sent to a worker
/// that has not reported it started. `routing` is the client's (the coordinator's ROUTER id,
/// the simulation's connection).
public struct PendingCancel<Routing: Hashable & Sendable>: Hashable, Sendable {
    public var routing: Routing
    public var requestID: UInt64
    public var group: String
    /// nil: the whole group.
    public var path: String?
    /// The state the group (or child) had finished in before the cancel; nil: it had not.
    public var alreadyFinished: ChildPhase?

    public init(routing: Routing, requestID: UInt64, group: String, path: String?, alreadyFinished: ChildPhase? = nil) {
        self.routing = routing
        self.requestID = requestID
        self.group = group
        self.path = path
        self.alreadyFinished = alreadyFinished
    }
}

/// Cancels waiting to be acknowledged. Each is acknowledged once none of the attempts it covers
/// can still start on a worker: each has reported that it started, or finished (cancelled),
/// or its worker was lost. So a client told "cancel accepted" never sees a pending child
/// start after. A decision of the coordinator's shell, pure, shared with the simulation.
public struct PendingCancels<Routing: Hashable & Sendable>: Sendable {
    public private(set) var waiting: [PendingCancel<Routing>] = []

    public init() {}

    public var isEmpty: Bool { waiting.isEmpty }

    public mutating func append(_ cancel: PendingCancel<Routing>) {
        waiting.append(cancel)
    }

    /// Removes and returns, in the order they were accepted, the cancels none of whose attempts
    /// can still start; `canStillStart(group, path)` asks the scheduler.
    public mutating func settled(canStillStart: (String, String?) -> Bool) -> [PendingCancel<Routing>] {
        var settled: [PendingCancel<Routing>] = []
        waiting.removeAll { cancel in
            guard !canStillStart(cancel.group, cancel.path) else { return false }
            settled.append(cancel)
            return true
        }
        return settled
    }
}
