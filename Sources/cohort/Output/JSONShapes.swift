import CohortClient

import enum CohortSpec.JSONValue

// The `--json` shapes of docs/cli.md, built in one place. Every field named there is always
// present (`null` when it has no value), so scripts can rely on the keys; fields may be added,
// never removed or renamed.

// The states' words in JSON and text are the ones `CohortClient` prints (`succeeded`,
// `waiting`, `draining`): one list of words for the CLI and for `print(event)`.
extension GroupState {
    var word: String { description }
}

extension ChildState {
    var word: String { description }

    /// Whether the child has finished.
    var isFinished: Bool {
        switch self {
        case .succeeded, .failed, .cancelled, .skipped: true
        case .pending, .waiting, .ready, .running: false
        }
    }
}

extension WorkerState {
    var word: String { description }
}

private func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
private func optional(_ time: WireTimestamp?) -> JSONValue { time.map { .string($0.rfc3339) } ?? .null }

enum JSONShapes {
    /// `cohort submit FILE --json` without `--wait`: `{"id", "name"}` (plus `warnings`).
    static func receipt(_ receipt: SubmitReceipt) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(receipt.id), "name": .string(receipt.name),
            "warnings": .array(receipt.warnings.map(JSONValue.string)),
            "alreadySubmitted": .bool(receipt.alreadySubmitted),
        ]
        if let rerunOf = receipt.rerunOf {
            object["rerunOf"] = .string(rerunOf)
            object["reused"] = .int(Int64(receipt.reused))
        }
        return .object(object)
    }

    /// `cohort status --json`: `[{"id", "name", "state", "priority", "submittedAt", "finishedAt"}]`.
    static func groups(_ groups: [GroupSummary]) -> JSONValue {
        .array(
            groups.map { group in
                .object([
                    "id": .string(group.id), "name": .string(group.name), "state": .string(group.state.word),
                    "priority": .int(Int64(group.priority)),
                    "submittedAt": .string(group.submittedAt.rfc3339), "finishedAt": optional(group.finishedAt),
                ])
            })
    }

    /// `cohort status GROUP --json` (and `submit --wait --json`).
    static func group(_ group: GroupDetail) -> JSONValue {
        .object([
            "id": .string(group.id), "name": .string(group.name), "state": .string(group.state.word),
            "priority": .int(Int64(group.priority)),
            "submittedAt": .string(group.submittedAt.rfc3339), "finishedAt": optional(group.finishedAt),
            "reason": optional(group.reason),
            "children": .array(group.children.map(child)),
        ])
    }

    /// One child in `status GROUP --json`.
    static func child(_ child: ChildStatus) -> JSONValue {
        .object([
            "name": .string(child.name), "path": .string(child.path), "state": .string(child.state.word),
            "worker": optional(child.worker), "attempt": .int(Int64(child.attempt)), "error": optional(child.error),
            "startedAt": optional(child.startedAt), "finishedAt": optional(child.finishedAt),
            "waitingReason": optional(child.waitingReason), "outputTruncated": .bool(child.outputTruncated),
            "earlierAttempts": .array(child.earlierAttempts.map(earlierAttempt)),
            "reused": .bool(child.isReused),
        ])
    }

    /// One earlier attempt of a child in `status GROUP --json`: `{"attempt", "worker",
    /// "startedAt", "finishedAt", "outcome", "error"}`.
    static func earlierAttempt(_ attempt: AttemptSummary) -> JSONValue {
        .object([
            "attempt": .int(Int64(attempt.attempt)), "worker": .string(attempt.worker),
            "startedAt": optional(attempt.startedAt), "finishedAt": optional(attempt.finishedAt),
            "outcome": .string(attempt.outcome), "error": .string(attempt.error),
        ])
    }

    /// One event of `submit --watch --json` (a JSON line per event).
    static func event(_ event: GroupEvent, group: String) -> JSONValue {
        switch event {
        case .snapshot(let detail):
            ["event": "snapshot", "group": .string(group), "status": JSONShapes.group(detail)]
        case .child(let status, let at):
            ["event": "child", "group": .string(group), "at": .string(at.rfc3339), "child": child(status)]
        case .finished(let state, let reason, let at):
            [
                "event": "finished", "group": .string(group), "at": .string(at.rfc3339), "state": .string(state.word),
                "reason": optional(reason),
            ]
        }
    }

    /// `cohort workers --json`: `[{"id", "name", "host", "labels", "kinds", "slots", "running", "state"}]`.
    static func workers(_ workers: [WorkerInfo]) -> JSONValue {
        .array(
            workers.map { worker in
                .object([
                    "id": .string(worker.id), "name": .string(worker.name), "host": .string(worker.host),
                    "labels": .array(worker.labels.map(JSONValue.string)),
                    "kinds": .array(worker.kinds.map(JSONValue.string)), "slots": .int(Int64(worker.slots)),
                    "running": .int(Int64(worker.running)), "state": .string(worker.state.word),
                    "drained": .bool(worker.drained),
                    "lastHeardSeconds": worker.lastHeardAgo.map { .double($0.inSeconds) } ?? .null,
                ])
            })
    }

    /// `cohort locks --json`: `[{"category", "token", "limit", "holders": [{"group", "child",
    /// "attempt", "worker", "groupHold", "heldSeconds", "token"}], "holder": …, "waiters":
    /// [{"group", "child", "waitingSeconds"}]}]`; `token` is the last fencing token granted,
    /// `limit` how many holders the category may have at once (1: an exclusive lock), each
    /// holder's `token` its own; `holder` is the first of `holders` (`null` when only waited
    /// for); the ages are numbers (`null` if unknown); `groupHold` is true for a group's own
    /// hold (`attempt` 0, `child` the nested group's path or `""`, `worker` `null`); otherwise
    /// `worker` is `null` while the holder waits for a free slot (not placed yet).
    static func locks(_ locks: [LockInfo]) -> JSONValue {
        func holder(_ holder: LockHolderStatus) -> JSONValue {
            .object([
                "group": .string(holder.group), "child": .string(holder.child),
                "attempt": .int(Int64(holder.attempt)), "worker": optional(holder.worker),
                "groupHold": .bool(holder.attempt == 0),
                "heldSeconds": holder.heldFor.map { .double($0.inSeconds) } ?? .null,
                "token": holder.token.map { .int(Int64(clamping: $0)) } ?? .null,
            ])
        }
        return .array(
            locks.map { lock in
                .object([
                    "category": .string(lock.category), "token": .int(Int64(clamping: lock.token)),
                    "limit": .int(Int64(lock.limit)), "holders": .array(lock.holders.map(holder)),
                    "holder": lock.holder.map(holder) ?? .null,
                    "waiters": .array(
                        lock.waiters.map { waiter in
                            .object([
                                "group": .string(waiter.group), "child": .string(waiter.child),
                                "waitingSeconds": waiter.waitingFor.map { .double($0.inSeconds) } ?? .null,
                            ])
                        }),
                ])
            })
    }

    /// `cohort result GROUP CHILD --json` for a child that did not succeed:
    /// `{"state": "failed" | "cancelled", "error": "…"}` (a succeeded child prints its output).
    static func unsuccessful(_ outcome: ChildOutcome) -> JSONValue? {
        switch outcome {
        case .succeeded: nil
        case .failed(let error): ["state": "failed", "error": .string(error)]
        case .cancelled(let reason): ["state": "cancelled", "error": .string(reason)]
        }
    }
}
