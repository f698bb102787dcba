import CohortCore
import CohortSpec
import CohortWire
import Foundation

// Conversions between CohortCore's state-machine types and CohortWire's models, in one place.

extension Timestamp {
    init(_ timestamp: WireTimestamp) {
        self.init(nanosecondsSinceEpoch: timestamp.nanosecondsSinceEpoch)
    }

    var wire: WireTimestamp { WireTimestamp(nanosecondsSinceEpoch: nanosecondsSinceEpoch) }
}

extension AttemptRef {
    init(_ ref: WireAttemptRef) {
        self.init(id: AttemptID(ref.id), group: ref.group, path: ref.path, attempt: ref.attempt)
    }

    var wire: WireAttemptRef { WireAttemptRef(id: id.rawValue, group: group, path: path, attempt: attempt) }
}

extension AttemptOutcome {
    init(_ outcome: WireOutcome) {
        switch outcome {
        case .succeeded(let output): self = .succeeded(output: output)
        case .failed(let error): self = .failed(error: error)
        case .cancelled(let reason, let code): self = .cancelled(reason: CancellationReason(code: code, text: reason))
        }
    }

    var wire: WireOutcome {
        switch self {
        case .succeeded(let output): .succeeded(output: output)
        case .failed(let error): .failed(error: error)
        case .cancelled(let reason): .cancelled(reason: reason.text, code: reason.wireCode)
        }
    }
}

extension CancellationReason {
    /// A reason as it crosses the wire: its code and its words, both kept.
    init(code: CancelCode, text: String) {
        self.init(code: Code(code), text: text)
    }

    /// The code that travels next to ``text``.
    var wireCode: CancelCode { code.wire }
}

extension CancellationReason.Code {
    /// Every wire code has its case, and back: nothing is lost either way.
    init(_ code: CancelCode) {
        self =
            switch code {
            case .custom: .custom
            case .timedOut: .timedOut
            case .cancelledByClient: .cancelledByClient
            case .superseded: .superseded
            case .producerFailed: .producerFailed
            case .producerCancelled: .producerCancelled
            case .groupFinished: .groupFinished
            case .dependencyFailed: .dependencyFailed
            case .workerLost: .workerLost
            case .handedBack: .handedBack
            case .shutdown: .shutdown
            case .skipped: .skipped
            case .cancelledByChild: .cancelledByChild
            }
    }

    var wire: CancelCode {
        switch self {
        case .custom: .custom
        case .timedOut: .timedOut
        case .cancelledByClient: .cancelledByClient
        case .superseded: .superseded
        case .producerFailed: .producerFailed
        case .producerCancelled: .producerCancelled
        case .groupFinished: .groupFinished
        case .dependencyFailed: .dependencyFailed
        case .workerLost: .workerLost
        case .handedBack: .handedBack
        case .shutdown: .shutdown
        case .skipped: .skipped
        case .cancelledByChild: .cancelledByChild
        }
    }
}

extension GroupPhase {
    var wire: GroupState {
        switch self {
        case .pending: .pending
        case .running: .running
        case .succeeded: .succeeded
        case .failed: .failed
        case .cancelled: .cancelled
        }
    }
}

extension ChildPhase {
    var wire: ChildState {
        switch self {
        case .pending: .pending
        case .waiting: .waiting
        case .ready: .ready
        case .running: .running
        case .succeeded: .succeeded
        case .failed: .failed
        case .cancelled: .cancelled
        case .skipped: .skipped
        }
    }
}

extension WorkerPhase {
    var wire: WorkerState {
        switch self {
        case .ready: .ready
        case .draining: .draining
        case .lost: .lost
        }
    }
}

extension ChildSnapshot {
    var wire: ChildStatus {
        ChildStatus(
            name: name, path: path, state: phase.wire, worker: workerName ?? worker?.description, attempt: attempt,
            error: error, startedAt: startedAt?.wire, finishedAt: finishedAt?.wire, waitingReason: waitingReason,
            outputTruncated: outputTruncated, isGroup: isGroup, dependsOn: dependsOn, kind: kind,
            earlierAttempts: earlierAttempts.map(\.wire))
    }
}

extension EndedAttempt {
    var wire: AttemptSummary {
        AttemptSummary(
            attempt: attempt, worker: worker, startedAt: startedAt?.wire, finishedAt: finishedAt.wire,
            outcome: ending.rawValue, error: error)
    }
}

extension GroupSnapshot {
    var wireSummary: GroupSummary {
        GroupSummary(
            id: id, name: name, state: phase.wire, submittedAt: submittedAt.wire, finishedAt: finishedAt?.wire,
            priority: Int32(clamping: priority))
    }

    var wireDetail: GroupDetail {
        GroupDetail(
            id: id, name: name, state: phase.wire, submittedAt: submittedAt.wire, finishedAt: finishedAt?.wire,
            reason: reason, children: children.map(\.wire), priority: Int32(clamping: priority))
    }
}

extension WorkerRecord {
    var wire: WorkerInfo { wire(now: lastHeard, drained: false) }

    /// As `cohort workers` shows it at `now`; `drained`: an operator drained it.
    func wire(now: Timestamp, drained: Bool) -> WorkerInfo {
        WorkerInfo(
            id: id.description, name: name, host: host, labels: labels, slots: UInt32(clamping: slots),
            running: UInt32(clamping: inFlight), state: state.wire, kinds: kinds.sorted(), drained: drained,
            lastHeardAgo: max(now - lastHeard, .zero))
    }
}

extension DispatchOrder {
    var wire: AttemptDispatch {
        AttemptDispatch(
            ref: ref.wire, kind: kind, input: input, fencingTokens: tokens, timeout: timeout, holds: holds)
    }
}

extension LockRefusal {
    var wire: LockDenial.Kind {
        switch self {
        case .denied: .denied
        case .cancelled: .cancelled
        case .revoked: .revoked
        }
    }
}

extension SchedulerError {
    var wire: ProtocolError {
        let code: ProtocolError.Code =
            switch self.code {
            case .notFound: .notFound
            case .conflict: .conflict
            case .invalidRequest: .invalidRequest
            case .superseded: .superseded
            }
        return ProtocolError(code: code, message: message)
    }
}

extension Scheduler {
    /// The lock table as `cohort locks` shows it, workers by name; with `now`, how long each
    /// holder has held and each waiter waited.
    func wireLocks(now: Timestamp? = nil) -> [LockInfo] {
        func age(_ since: Timestamp?) -> Duration? {
            guard let now, let since else { return nil }
            return max(now - since, .zero)
        }
        return lockSnapshot().map { lock in
            LockInfo(
                category: lock.category, token: lock.token, limit: UInt32(clamping: lock.limit),
                holders: lock.holders.map { holding in
                    CohortWire.LockHolderStatus(
                        group: holding.owner.group, child: holding.owner.child, attempt: holding.owner.attempt,
                        worker: holding.owner.worker.map { workerName($0) ?? $0.description },
                        heldFor: age(holding.since), token: holding.token)
                },
                waiters: lock.waiters.enumerated().map { index, waiter in
                    LockWaiter(
                        group: waiter.group, child: waiter.child,
                        waitingFor: age(lock.waitingSince.indices.contains(index) ? lock.waitingSince[index] : nil))
                })
        }
    }

    /// The workers as `cohort workers` shows them at `now`: connected ones by id, then those
    /// that left recently; whether an operator drained each, how long ago each was heard.
    func wireWorkers(now: Timestamp) -> [WorkerInfo] {
        workerRecords().map { $0.wire(now: now, drained: isDrainedByOperator($0.name)) }
    }
}

extension CohortWire.SpecFormat {
    var core: CohortSpec.SpecFormat {
        switch self {
        case .yaml: .yaml
        case .json: .json
        }
    }
}

extension SpecErrors {
    /// The rejection of a submission: `invalidSpec` with every error by path.
    var wire: ProtocolError {
        let count = errors.count
        return ProtocolError(
            code: .invalidSpec, message: "the spec is invalid (\(count) error\(count == 1 ? "" : "s"))",
            specErrors: errors.map {
                CohortWire.SpecError(path: $0.path, message: $0.message, line: $0.line, column: $0.column)
            })
    }
}
