import CohortSpec
import CohortWire
import Logging
import Metrics

/// What a running procedure kind knows about the attempt it runs, and how it runs local
/// procedures of its own.
///
/// A worker makes one context per attempt and passes it to the kind's closure. The
/// closure runs as a Swift task: when the attempt is cancelled (a cancel from the
/// coordinator, a timeout, the worker stopping) that task is cancelled, cooperatively, and
/// ``isCancelled`` becomes true. A kind must stop its work then; the attempt finishes when
/// the closure returns.
///
/// Procedures a kind builds locally (a `GroupProcedure` with a `MutuallyExclusive` child,
/// say) run on ``queue`` (or through ``run(_:)``): their mutual exclusion goes through the
/// coordinator's cluster-wide lock table, tied to this attempt, and they are cancelled when
/// the attempt is.
///
/// Thread-safety: a `Sendable` value; every member may be used from any thread.
public struct ProcedureContext: Sendable {
    /// The group's id (`COHORT_GROUP`).
    public let group: String
    /// The child's path in nested groups, e.g. `tests/unit` (`COHORT_CHILD`).
    public let child: String
    /// The attempt number, from 1 (`COHORT_ATTEMPT`).
    public let attempt: Int
    /// The coordinator's id of this attempt.
    public let attemptID: UInt64
    /// The worker's name (`COHORT_WORKER`).
    public let workerName: String
    /// Category → fencing token of every lock the coordinator granted for this attempt
    /// before dispatching it (the child's `exclusive` categories).
    public let fencingTokens: [String: UInt64]
    /// Variables a process started for this attempt should see besides the worker's own:
    /// the dispatch's extra environment and every `COHORT_*` variable (which win).
    public var environment: [String: String] {
        extraEnvironment.merging(cohortVariables) { _, cohort in cohort }
    }
    /// A logger with `group.id`, `child.path`, `attempt` and `worker.name` metadata.
    public var logger: Logger {
        var logger = baseLogger
        logger[metadataKey: "group.id"] = "\(group)"
        logger[metadataKey: "child.path"] = "\(child)"
        logger[metadataKey: "attempt"] = "\(attempt)"
        logger[metadataKey: "worker.name"] = "\(workerName)"
        return logger
    }

    private let baseLogger: Logger

    let scope: AttemptScope
    /// The dispatch's extra environment.
    let extraEnvironment: [String: String]
    /// `COHORT_GROUP`, `COHORT_CHILD`, `COHORT_ATTEMPT`, `COHORT_WORKER`, `COHORT_FENCE_*`, and on a
    /// worker `COHORT_COORDINATOR`, `COHORT_ATTEMPT_TOKEN` and (CURVE) `COHORT_SERVER_KEY`.
    var cohortVariables: [String: String] {
        CohortEnvironment.variables(
            group: group, child: child, attempt: attempt, worker: workerName, fencingTokens: fencingTokens,
            coordinator: coordinator)
    }
    /// How this attempt reaches the coordinator about its own group; `nil` outside a worker.
    let coordinator: CoordinatorAccess?

    /// The attempt's token (`COHORT_ATTEMPT_TOKEN`): while the attempt runs, it lets a
    /// `cohort` command or a ``CohortClient`` read this group, cancel it and add children to
    /// it (docs/security.md, "Attempt tokens"); `nil` outside a worker.
    public var attemptToken: String? { coordinator?.attemptToken }

    /// Cancels this attempt's whole group, as `cohort cancel "$COHORT_GROUP"` would from a shell
    /// child: the group ends `cancelled` with the reason `cancelled by child PATH (attempt N):
    /// REASON`, and every running child gets the cancel — this attempt too, so the kind sees
    /// ``isCancelled`` soon after and should return.
    ///
    /// The request goes over the worker's own connection (worker message kind 10) and this
    /// returns once it is handed to the worker's loop; a refusal (the attempt no longer runs)
    /// is logged by the worker.
    /// - Throws: ``GroupRequestError`` outside a worker.
    public func cancelGroup(reason: String = "") throws(GroupRequestError) {
        guard let coordinator else { throw GroupRequestError("cancelGroup needs a context made by a worker") }
        coordinator.send(.cancelGroup(ref, reason: reason))
    }

    /// Adds children to this attempt's group (or, with `into`, to a nested group of it, by
    /// path), as `cohort add "$COHORT_GROUP" FILE` would from a shell child (docs/spec.md,
    /// "Growing groups"): they are validated like a spec's children (`after` and `inject` may
    /// name existing siblings), journaled, and the group finishes only after them.
    ///
    /// The request goes over the worker's own connection (worker message kind 11) and this
    /// returns once it is handed to the worker's loop; a refusal (a spec error, a group that
    /// is finishing) is logged by the worker. A kind that must know the outcome connects a
    /// `CohortClient` with ``attemptToken`` and calls its `add(children:to:into:)` instead.
    /// - Throws: ``GroupRequestError`` outside a worker.
    public func addChildren(_ children: [ChildSpec], into: String? = nil) throws(GroupRequestError) {
        guard let coordinator else { throw GroupRequestError("addChildren needs a context made by a worker") }
        let document = JSONValue.object(["children": .array(children.map(\.specJSON))]).jsonString()
        coordinator.send(.addChildren(ref, ChildrenAddition(document: document, format: .json, into: into)))
    }

    /// Writes a line to this attempt's log (docs/operations.md, "Logs"), which `cohort logs`,
    /// the dashboard and the HTTP API show beside a shell child's stdout and stderr, live
    /// while it runs. A message with newlines stays one line; one over 64 KiB is sent in
    /// pieces. Outside a worker the line goes nowhere.
    ///
    /// Lines are shipped to the coordinator as they are written. While the coordinator has
    /// not yet stored 4 MiB of this attempt's lines, this waits (backpressure), unless the
    /// attempt is cancelled.
    public func log(_ message: String, level: Logger.Level = .info) {
        guard let logs = settings.logs else { return }
        var text = message
        text.withUTF8 { bytes in
            logs.write(ref, .kind, UnsafeRawBufferPointer(bytes), level: level.rawValue, mayWait: { !isCancelled })
        }
    }

    /// The attempt's reference on the wire.
    var ref: WireAttemptRef { WireAttemptRef(id: attemptID, group: group, path: child, attempt: UInt32(attempt)) }
    /// The worker's settings the built-ins need (`killGrace`, `maxCapturedOutput`).
    let settings: KindSettings

    /// A context for calling a kind's closure directly, e.g. in a unit test: its ``queue``
    /// uses the process-local exclusivity manager and nothing cancels it.
    public init(
        group: String = "local", child: String = "child", attempt: Int = 1, attemptID: UInt64 = 0,
        workerName: String = "local", fencingTokens: [String: UInt64] = [:],
        logger: Logger = Logger(label: "cohort.worker.procedure")
    ) {
        self.init(
            group: group, child: child, attempt: attempt, attemptID: attemptID, workerName: workerName,
            fencingTokens: fencingTokens, extraEnvironment: [:], logger: logger, coordinator: nil,
            scope: AttemptScope(exclusivity: .manager(LocalExclusivityManager.shared)), settings: KindSettings()
        )
    }

    init(
        group: String, child: String, attempt: Int, attemptID: UInt64, workerName: String,
        fencingTokens: [String: UInt64], extraEnvironment: [String: String], logger: Logger,
        coordinator: CoordinatorAccess?, scope: AttemptScope, settings: KindSettings
    ) {
        self.coordinator = coordinator
        self.settings = settings
        self.group = group
        self.child = child
        self.attempt = attempt
        self.attemptID = attemptID
        self.workerName = workerName
        self.fencingTokens = fencingTokens
        self.baseLogger = logger
        self.scope = scope
        self.extraEnvironment = extraEnvironment
    }

    /// Whether the attempt was cancelled; the kind should stop its work and return (or throw).
    public var isCancelled: Bool { scope.isCancelled || Task.isCancelled }

    /// Why the attempt was cancelled (e.g. `timed out`), once it is.
    public var cancellationReason: String? { scope.cancellationReason }

    /// The queue for procedures this attempt creates: no slot limit (they run inside the
    /// attempt's slot), mutual exclusion through the cluster's lock table, every procedure
    /// on it cancelled when the attempt is cancelled or finishes.
    public var queue: ProcedureQueue { scope.queue }

    /// Adds `procedure` to ``queue`` and waits for it.
    ///
    /// - Throws: the procedure's error if it failed, its cancellation reason (or
    ///   `CancellationError`) if it was cancelled. Cancelling the calling task cancels the procedure.
    public func run(_ procedure: Procedure) async throws {
        try await withTaskCancellationHandler {
            try await scope.queue.run(procedure)
        } onCancel: {
            procedure.cancel()
        }
    }

    /// Adds `procedure` to ``queue``, waits for it and returns its output.
    ///
    /// - Throws: as ``run(_:)``.
    public func run<P: OutputProcedure>(_ procedure: P) async throws -> P.Output {
        try await withTaskCancellationHandler {
            try await scope.queue.run(procedure)
        } onCancel: {
            procedure.cancel()
        }
    }
}

/// How a running attempt reaches the coordinator about its own group: the endpoint and key
/// `cohort` commands need (given as `COHORT_*` variables) and the worker loop's way to send.
struct CoordinatorAccess: Sendable {
    /// The endpoint the worker connects to (`COHORT_COORDINATOR`).
    var endpoint: String
    /// The coordinator's CURVE public key, Z85 (`COHORT_SERVER_KEY`); `nil` without CURVE.
    var publicKey: String?
    /// The attempt's token (`COHORT_ATTEMPT_TOKEN`); `nil` from a coordinator that mints none.
    var attemptToken: String?
    /// Hands a message to the worker's loop, which sends it on its connection.
    var send: @Sendable (WorkerMessage) -> Void
}

/// A request about the attempt's group that cannot be made.
public struct GroupRequestError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}

/// The worker settings that built-in kinds read.
struct KindSettings: Sendable {
    /// SIGTERM → SIGKILL grace for `shell`.
    var killGrace: Duration = .seconds(5)
    /// Bytes of stdout, and of stderr, that `shell` keeps.
    var maxCapturedOutput: Int = 1 << 20
    /// Counts the shell processes spawned, when the worker records metrics.
    var processesStarted: Counter?
    /// Where attempts' log lines go; nil outside a worker (lines are then dropped).
    var logs: LogShipper?
}
