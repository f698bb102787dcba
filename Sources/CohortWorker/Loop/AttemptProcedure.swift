import CohortWire
import Dispatch
import Foundation

/// What an attempt tells the worker's loop as it runs.
enum AttemptEvent: Sendable {
    /// It started executing (only for kinds that may take a while; a result implies a start).
    case started(AttemptStart)
    /// It finished: its result, ready to send.
    case finished(AttemptResult)
}

/// One dispatched attempt, as a procedure on the worker's queue: it runs its kind's
/// closure with the attempt's input and context and reports its start and its result.
///
/// Cancelling it (a cancel from the coordinator, its timeout, the worker stopping) cancels
/// the kind's Swift task and the attempt's local procedures; it finishes when the kind's
/// closure has returned, so a cancelled attempt has really stopped when its result is sent.
final class AttemptProcedure: Procedure, @unchecked Sendable {
    // @unchecked Sendable: the only mutable state besides the engine's is `running`, a Protected.

    private struct Running {
        var task: Task<Void, Never>?
        var timeout: DispatchWorkItem?
        var output: Data?
        var startedAt: WireTimestamp?
        /// The result was reported already (cancelled before it started).
        var reported = false
    }

    let dispatch: AttemptDispatch
    let context: ProcedureContext
    private let kind: ProcedureKind?
    private let report: @Sendable (AttemptEvent) -> Void
    private let running = Protected(Running())

    /// - Parameters:
    ///   - kind: the kind's body; nil if this worker has no such kind (the attempt fails).
    ///   - report: called from any thread as the attempt starts and finishes.
    init(
        dispatch: AttemptDispatch, kind: ProcedureKind?, context: ProcedureContext,
        report: @escaping @Sendable (AttemptEvent) -> Void
    ) {
        self.dispatch = dispatch
        self.kind = kind
        self.context = context
        self.report = report
        super.init()
        isAutomaticFinishingDisabled = true
    }

    override func execute() {
        let startedAt = WireTimestamp(Date())
        running.withLock { $0.startedAt = startedAt }
        guard let kind else {
            finish(with: ProcedureFailure("this worker has no procedure kind \"\(dispatch.kind)\""))
            return
        }
        if let timeout = dispatch.timeout { scheduleTimeout(timeout) }
        switch kind.body {
        case .immediate(let body):
            do {
                let output = try body(dispatch.input, context)
                running.withLock { $0.output = output }
                finish()
            } catch {
                finish(with: error)
            }
        case .task(let body):
            report(.started(AttemptStart(ref: dispatch.ref, startedAt: startedAt)))
            let input = dispatch.input
            let context = context
            let task = Task {
                do {
                    let output = try await body(input, context)
                    self.running.withLock { $0.output = output }
                    self.finish()
                } catch {
                    self.finish(with: error)
                }
            }
            running.withLock { $0.task = task }
            if isCancelled { task.cancel() }
        }
    }

    override func procedureDidCancel(with reason: (any Error)?) {
        context.scope.cancel(reason: Self.describe(reason))
        running.withLock { $0.task }?.cancel()
        // Not executing yet: it never will (the engine checks the cancel as it starts it), but
        // it may wait behind busy slots before it finishes. Report it cancelled now, so the
        // coordinator is not kept waiting by other attempts' work.
        guard state < .executing else { return }
        // It never started: no start time (0), so the coordinator knows it did not run.
        let now = WireTimestamp(Date())
        let never = WireTimestamp(nanosecondsSinceEpoch: 0)
        let first = running.withLock { running in
            defer { running.reported = true }
            return !running.reported
        }
        if first {
            report(
                .finished(
                    AttemptResult(
                        ref: dispatch.ref,
                        outcome: .cancelled(reason: Self.describe(reason), code: Self.code(of: reason)),
                        startedAt: never, finishedAt: now)))
        }
    }

    override func procedureDidFinish(with outcome: ProcedureOutcome) {
        let (output, startedAt, timeout, reported) = running.withLock { running in
            defer {
                running.task = nil
                running.timeout = nil
                running.output = nil
                running.reported = true
            }
            return (running.output, running.startedAt, running.timeout, running.reported)
        }
        timeout?.cancel()
        context.scope.close()
        guard !reported else { return }
        let finishedAt = WireTimestamp(Date())
        let result: WireOutcome =
            switch outcome {
            case .succeeded: .succeeded(output: output ?? Data("null".utf8))
            case .failed(let error): .failed(error: Self.describe(error))
            case .cancelled(let reason): .cancelled(reason: Self.describe(reason), code: Self.code(of: reason))
            }
        report(
            .finished(
                AttemptResult(
                    ref: dispatch.ref, outcome: result, startedAt: startedAt ?? finishedAt, finishedAt: finishedAt)))
    }

    private func scheduleTimeout(_ timeout: Duration) {
        let item = DispatchWorkItem { [weak self] in
            self?.cancel(with: CancellationReason("timed out", code: .timedOut))
        }
        running.withLock { $0.timeout = item }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(timeout.nanoseconds)), execute: item)
    }

    /// An error or a cancellation's reason as the coordinator shows it.
    static func describe(_ error: (any Error)?) -> String {
        switch error {
        case nil, is CancellationError: "cancelled"
        case let error?: String(describing: error)
        }
    }

    /// The code a cancel reports: the reason's own, ``CancelCode/custom`` for any other error.
    static func code(of error: (any Error)?) -> CancelCode {
        (error as? CancellationReason)?.code ?? .custom
    }
}
