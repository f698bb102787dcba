import CohortClient
import Foundation

import enum CohortSpec.JSONValue

// The JSON of the HTTP API (docs/http.md). The fields of `cohort status --json` keep their
// names here; the API adds some (progress, dependencies, last heard, …). Every field listed in
// docs/http.md is always present (`null` when it has no value).

enum DashboardJSON {
    static func time(_ time: WireTimestamp?) -> JSONValue {
        guard let time else { return .null }
        return .string(rfc3339(time))
    }

    /// When a worker was last heard, from how long before the reply it was (`cohort workers`
    /// sends the age, so that the coordinator's and the reader's clocks need not agree).
    static func heard(_ ago: Duration) -> WireTimestamp {
        let seconds = Double(ago.components.seconds) + Double(ago.components.attoseconds) / 1e18
        return WireTimestamp(Date(timeIntervalSinceNow: -seconds))
    }

    static func rfc3339(_ time: WireTimestamp) -> String { time.rfc3339 }

    static func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }

    static func progress(_ detail: GroupDetail) -> JSONValue {
        let procedures = detail.children.filter { !$0.isGroup }
        let finished = procedures.filter { [.succeeded, .failed, .cancelled, .skipped].contains($0.state) }.count
        return ["finished": .int(Int64(finished)), "total": .int(Int64(procedures.count))]
    }

    /// One line of the group list.
    static func summary(_ group: GroupSummary, detail: GroupDetail?) -> JSONValue {
        .object([
            "id": .string(group.id), "name": .string(group.name), "state": .string("\(group.state)"),
            "submittedAt": time(group.submittedAt), "finishedAt": time(detail?.finishedAt),
            "reason": optional(detail?.reason),
            "progress": detail.map(progress) ?? .null,
        ])
    }

    static func group(_ group: GroupDetail) -> JSONValue {
        .object([
            "id": .string(group.id), "name": .string(group.name), "state": .string("\(group.state)"),
            "submittedAt": time(group.submittedAt), "finishedAt": time(group.finishedAt),
            "reason": optional(group.reason), "progress": progress(group),
            "children": .array(group.children.map(child)),
        ])
    }

    static func child(_ child: ChildStatus) -> JSONValue {
        .object([
            "name": .string(child.name), "path": .string(child.path), "state": .string("\(child.state)"),
            "kind": child.isGroup ? .null : .string(child.kind), "isGroup": .bool(child.isGroup),
            "dependsOn": .array(child.dependsOn.map(JSONValue.string)),
            "worker": optional(child.worker), "attempt": .int(Int64(child.attempt)), "error": optional(child.error),
            "startedAt": time(child.startedAt), "finishedAt": time(child.finishedAt),
            "waitingReason": optional(child.waitingReason), "outputTruncated": .bool(child.outputTruncated),
            "earlierAttempts": .array(child.earlierAttempts.map(earlierAttempt)),
        ])
    }

    /// An earlier attempt of a child (`AttemptSummary`), with RFC 3339 times.
    static func earlierAttempt(_ attempt: AttemptSummary) -> JSONValue {
        .object([
            "attempt": .int(Int64(attempt.attempt)), "worker": .string(attempt.worker),
            "startedAt": time(attempt.startedAt), "finishedAt": time(attempt.finishedAt),
            "outcome": .string(attempt.outcome), "error": .string(attempt.error),
        ])
    }

    static func worker(_ worker: WorkerInfo, attempts: [JSONValue]) -> JSONValue {
        .object([
            "id": .string(worker.id), "name": .string(worker.name), "host": .string(worker.host),
            "labels": .array(worker.labels.map(JSONValue.string)),
            "kinds": .array(worker.kinds.map(JSONValue.string)), "slots": .int(Int64(worker.slots)),
            "running": .int(Int64(worker.running)), "state": .string("\(worker.state)"),
            "lastHeardAt": time(worker.lastHeardAgo.map(heard)), "attempts": .array(attempts),
        ])
    }

    static func lock(_ lock: LockInfo) -> JSONValue {
        func holder(_ holder: LockHolderStatus) -> JSONValue {
            .object([
                "group": .string(holder.group), "child": .string(holder.child),
                "attempt": .int(Int64(holder.attempt)), "worker": optional(holder.worker),
                "groupHold": .bool(holder.attempt == 0), "heldSeconds": seconds(holder.heldFor),
                "token": holder.token.map { .int(Int64(clamping: $0)) } ?? .null,
            ])
        }
        return .object([
            "category": .string(lock.category), "token": .int(Int64(clamping: lock.token)),
            "limit": .int(Int64(lock.limit)), "holders": .array(lock.holders.map(holder)),
            "holder": lock.holder.map(holder) ?? .null,
            "waiters": .array(
                lock.waiters.map { waiter in
                    .object([
                        "group": .string(waiter.group), "child": .string(waiter.child),
                        "waitingSeconds": seconds(waiter.waitingFor),
                    ])
                }
            ),
        ])
    }

    /// A duration in seconds (`cohort locks --json`'s `heldSeconds`), null if unknown.
    static func seconds(_ duration: Duration?) -> JSONValue {
        guard let duration else { return .null }
        return .double(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    static func error(_ code: String, _ message: String) -> JSONValue {
        ["error": ["code": .string(code), "message": .string(message)]]
    }
}
