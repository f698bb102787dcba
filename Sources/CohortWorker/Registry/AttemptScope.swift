import CohortWire
import Synchronization

/// The local procedures one attempt creates, and whether the attempt was cancelled.
///
/// The queue is made on first use (most kinds never create procedures). Its exclusivity
/// manager ties every lock request to the attempt; a procedure added after the attempt
/// was cancelled or finished is cancelled at once.
///
/// Thread-safety: `Sendable`; state is behind a `Mutex`, and procedures are cancelled with
/// the lock released.
final class AttemptScope: ProcedureQueueDelegate, Sendable {
    private struct State {
        var queue: ProcedureQueue?
        var cancellationReason: String?
        var isCancelled = false
        var isClosed = false
        var killsAtOnce = false
        /// What kills the attempt's processes at once (a shell kind registers its process).
        var killers: [@Sendable () -> Void] = []
    }

    /// Where the local queue's locks come from.
    enum Exclusivity: Sendable {
        /// A manager as it is (the process-local one, for a context made outside a worker).
        case manager(any ExclusivityManager)
        /// The cluster's lock table, each request tied to this attempt, which holds the
        /// categories of `held` (category → fencing token) already.
        case cluster(ClusterExclusivityManager, WireAttemptRef, held: [String: UInt64])
    }

    private let exclusivity: Exclusivity
    private let state = Mutex(State())

    init(exclusivity: Exclusivity) {
        self.exclusivity = exclusivity
    }

    var isCancelled: Bool { state.withLock { $0.isCancelled } }
    /// Whether a cancel must kill the attempt's processes at once, without the kill grace
    /// (its worker's lease ended: docs/scheduling.md, "Leases").
    var killsAtOnce: Bool { state.withLock { $0.killsAtOnce } }

    /// Makes later cancels kill the attempt's processes at once, without the kill grace, and
    /// kills nothing yet: set before the cancel, so that the attempt is cancelled before any
    /// of its processes dies (a process killed first may be reaped, and the attempt reported
    /// failed by its signal, before the cancel is recorded).
    func killsAtOnceFromNowOn() {
        state.withLock { $0.killsAtOnce = true }
    }

    /// Kills the attempt's processes at once, without the kill grace, even if a cancel is
    /// already waiting out its grace; later cancels kill at once too.
    func killAtOnce() {
        let killers = state.withLock { state -> [@Sendable () -> Void] in
            state.killsAtOnce = true
            return state.killers
        }
        for kill in killers { kill() }
    }

    /// Registers what kills the attempt's processes at once; runs it now if ``killAtOnce()``
    /// came first.
    func onKillAtOnce(_ kill: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            state.killers.append(kill)
            return state.killsAtOnce
        }
        if now { kill() }
    }
    var cancellationReason: String? { state.withLock { $0.cancellationReason } }

    /// The attempt's local queue, made on first use.
    var queue: ProcedureQueue {
        state.withLock { state in
            if let queue = state.queue { return queue }
            let queue = ProcedureQueue(name: "attempt")
            switch exclusivity {
            case .manager(let manager): queue.exclusivityManager = manager
            case .cluster(let cluster, let attempt, let held):
                queue.exclusivityManager = AttemptExclusivityManager(attempt: attempt, cluster: cluster, held: held)
            }
            queue.delegate = self
            state.queue = queue
            return queue
        }
    }

    /// Marks the attempt cancelled and cancels its local procedures. The first reason stays.
    func cancel(reason: String) {
        let queue = state.withLock { state -> ProcedureQueue? in
            guard !state.isCancelled else { return nil }
            state.isCancelled = true
            state.cancellationReason = reason
            return state.queue
        }
        queue?.cancelAll(with: CancellationReason(reason))
    }

    /// The attempt finished: cancels whatever local procedure is left, and any added later.
    func close() {
        let queue = state.withLock { state -> ProcedureQueue? in
            state.isClosed = true
            return state.queue
        }
        queue?.cancelAll(with: CancellationReason("its attempt finished"))
    }

    func procedureQueue(_ queue: ProcedureQueue, didAdd procedure: Procedure) {
        let reason = state.withLock { state -> String? in
            if state.isCancelled { return state.cancellationReason ?? "cancelled" }
            return state.isClosed ? "its attempt finished" : nil
        }
        if let reason { procedure.cancel(with: CancellationReason(reason)) }
    }
}

/// The reason a procedure was cancelled, as the coordinator (or the worker) gave it:
/// `timed out`, `cancelled by client`, …, with its code to switch on (``CancelCode/timedOut``).
public struct CancellationReason: Error, Hashable, Sendable, CustomStringConvertible {
    /// The reason, in words.
    public let message: String
    /// The reason, as a code; ``CancelCode/custom`` for a procedure's own words.
    public let code: CancelCode

    public init(_ message: String, code: CancelCode = .custom) {
        self.message = message
        self.code = code
    }

    public var description: String { message }
}
