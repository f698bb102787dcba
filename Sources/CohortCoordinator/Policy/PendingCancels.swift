/// A cancel accepted but not yet acknowledged: some attempt it covers was sent to a worker
/// that has not reported it started.
struct PendingCancel: Hashable {
    var routing: RoutingID
    var requestID: UInt64
    var group: String
    var path: String?
}

/// Cancels waiting to be acknowledged. Each is acknowledged once none of the attempts it covers
/// can still start on a worker: each has reported that it started, or finished (cancelled),
/// or its worker was lost. So a client told "cancel accepted" never sees a pending child
/// start after.
struct PendingCancels {
    private(set) var waiting: [PendingCancel] = []

    var isEmpty: Bool { waiting.isEmpty }

    mutating func append(_ cancel: PendingCancel) {
        waiting.append(cancel)
    }

    /// Removes and returns, in the order they were accepted, the cancels none of whose attempts
    /// can still start; `canStillStart(group, path)` asks the scheduler.
    mutating func settled(canStillStart: (String, String?) -> Bool) -> [PendingCancel] {
        var settled: [PendingCancel] = []
        waiting.removeAll { cancel in
            guard !canStillStart(cancel.group, cancel.path) else { return false }
            settled.append(cancel)
            return true
        }
        return settled
    }
}
