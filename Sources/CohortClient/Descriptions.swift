import CohortSpec
import CohortWire
import Foundation

// What `print(event)` and string interpolation show: words a person reads, the same as the
// `cohort` CLI's, never the wire models' field dumps.

extension GroupEvent: CustomStringConvertible {
    /// `snapshot: release (release-1): running, 2 of 8 children finished`,
    /// `2026-05-01T10:00:00.123Z tests/unit: running on build-1 (attempt 1)`,
    /// `2026-05-01T10:00:02.310Z finished: succeeded`.
    public var description: String {
        switch self {
        case .snapshot(let detail): "snapshot: \(detail)"
        case .child(let child, let at): "\(at) \(child)"
        case .finished(let state, let reason, let at): "\(at) finished: \(state)\(reason.map { " (\($0))" } ?? "")"
        }
    }
}

extension ChildOutcome: CustomStringConvertible {
    /// `succeeded: {"words":5}` (the output as compact JSON), `failed: MESSAGE`, `cancelled: REASON`.
    public var description: String {
        switch self {
        case .succeeded(let output): "succeeded: \(output.jsonString())"
        case .failed(let message): "failed: \(message)"
        case .cancelled(let reason): "cancelled: \(reason)"
        }
    }
}

extension ChildStatus: CustomStringConvertible {
    /// `tests/unit: running on build-1 (attempt 1)`, `deploy: waiting (lock prod held by …)`,
    /// `build: failed on w1 (attempt 2): exit status 1`, `tests: running (group)`.
    public var description: String {
        var text = "\(path): \(state)"
        if isGroup { return text + " (group)" + (error.map { ": \($0)" } ?? "") }
        // Only where the worker and attempt are this state's: a child waiting to be retried,
        // or queued again, still names the attempt that ended and its worker.
        if let worker, attempt > 0, state != .waiting, state != .pending {
            text += state == .ready ? " for \(worker)" : " on \(worker)"
            text += " (attempt \(attempt))"
        }
        if let waitingReason, state == .waiting { text += " (\(waitingReason))" }
        if let error { text += ": \(error)" }
        return text
    }
}

extension GroupDetail: CustomStringConvertible {
    /// `release (release-1): failed, 8 of 8 children finished: child build failed`.
    public var description: String {
        let finished = children.filter { [.succeeded, .failed, .cancelled, .skipped].contains($0.state) }.count
        let count = "\(finished) of \(children.count) \(children.count == 1 ? "child" : "children") finished"
        return "\(name) (\(id)): \(state), \(count)\(reason.map { ": \($0)" } ?? "")"
    }
}

extension SubmitReceipt: CustomStringConvertible {
    /// `release (release-1) accepted`, `… already submitted`, then `; warning: …` for each.
    public var description: String {
        let verb = alreadySubmitted ? "already submitted" : "accepted"
        return "\(name) (\(id)) \(verb)" + warnings.map { "; warning: \($0)" }.joined()
    }
}

extension GroupSummary: CustomStringConvertible {
    /// `release (release-1): running, submitted 2026-05-01T10:00:00.000Z`.
    public var description: String { "\(name) (\(id)): \(state), submitted \(submittedAt)" }
}

extension WorkerInfo: CustomStringConvertible {
    /// `build-1 (w-3) on host-a: ready, 1 of 4 slots busy, labels linux, gpu`.
    public var description: String {
        let labelText = labels.isEmpty ? "no labels" : "labels \(labels.joined(separator: ", "))"
        let kindText = kinds.isEmpty ? "" : ", kinds \(kinds.joined(separator: ", "))"
        return "\(name) (\(id)) on \(host): \(state), \(running) of \(slots) slots busy, \(labelText)\(kindText)"
    }
}

extension GroupState: CustomStringConvertible {
    /// `pending`, `running`, `succeeded`, `failed`, `cancelled`: as in `cohort status`.
    public var description: String {
        switch self {
        case .pending: "pending"
        case .running: "running"
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }
}

extension ChildState: CustomStringConvertible {
    /// A group's states plus `waiting`, `ready` and `skipped`: as in `cohort status GROUP`.
    public var description: String {
        switch self {
        case .pending: "pending"
        case .waiting: "waiting"
        case .ready: "ready"
        case .running: "running"
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .cancelled: "cancelled"
        case .skipped: "skipped"
        }
    }
}

extension WorkerState: CustomStringConvertible {
    /// `joining`, `ready`, `draining`, `lost`: as in `cohort workers`.
    public var description: String {
        switch self {
        case .joining: "joining"
        case .ready: "ready"
        case .draining: "draining"
        case .lost: "lost"
        }
    }
}

extension WireTimestamp: CustomStringConvertible {
    /// ISO 8601 in UTC, to the millisecond: `2026-05-01T10:00:00.123Z`.
    public var description: String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
