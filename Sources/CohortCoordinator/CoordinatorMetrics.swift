import CohortCore
import CohortJournal
import CohortWire
import CoreMetrics
import Dispatch
import Metrics

/// The coordinator's metrics (docs/operations.md, "Metrics"), recorded through swift-metrics
/// into the factory the coordinator was given (`cohort coordinator` gives a Prometheus
/// registry's).
///
/// Cost on the loop's hot path: the busiest counters (messages by family, dispatches, children
/// finished) are plain integers on the loop's thread, added to their swift-metrics counters
/// (atomics) once per ``refreshInterval``; the rest is one increment or one histogram record
/// per event into handles made once (per label value, the first time it is seen); nothing is
/// looked up by name per event. The two per-attempt histograms (a lock and a bucket walk per
/// record) are kept as plain numbers too and recorded by ``recorder``, off the loop's thread,
/// at each flush. Gauges are set from ``Scheduler/summary()`` at most once per
/// ``refreshInterval``. A scrape sees the counters at most that much late.
///
/// Not thread-safe as a whole: used by the loop's thread, except ``journalCommit`` and
/// ``journalBatchSize``, which the journal's thread records into (swift-metrics handles are
/// thread-safe).
final class CoordinatorMetrics {
    let factory: any MetricsFactory
    /// How often the gauges are recomputed from the scheduler's state.
    let refreshInterval: Duration = .milliseconds(500)
    var nextRefresh: Timestamp?

    // Counters, by label values known in advance. Messages: by family index, nil for the
    // families that do not go that way (a coordinator receives no replies).
    private let messagesIn: [Counter?]
    private let messagesOut: [Counter?]
    // Counts not yet added to their counters (``flush()``), by the same indexes.
    private var pendingIn = [Int](repeating: 0, count: WireFamily.allCases.count)
    private var pendingOut = [Int](repeating: 0, count: WireFamily.allCases.count)
    private var pendingDispatched = 0
    private var pendingChildren: [ChildKey: Int] = [:]
    private var pendingStartDelays: [Int64] = []
    private var pendingRunTimes: [Int64] = []
    /// Records the pending latencies into their histograms, off the loop's thread.
    private let recorder = DispatchQueue(label: "cohort.coordinator.metrics")
    let groupsSubmitted: Counter
    private let groupsFinished: [GroupPhase: Counter]
    private let attemptsDispatched: Counter
    let attemptsRerun: Counter
    private let sessionsEnded: (silent: Counter, left: Counter, replaced: Counter)
    private var refusals: [ProtocolError.Code: Counter] = [:]

    // Counters and histograms whose label values come from specs, bounded by ``maxLabelValues``.
    private var childrenFinished: [ChildKey: Counter] = [:]
    /// The kinds with series of their own.
    private var kinds: Set<String> = []
    private var lockWait: [String: Timer] = [:]
    private var lockHold: [String: Timer] = [:]
    /// The most distinct kinds (and lock categories) given a series of their own; the rest
    /// share `other`, so a stream of made-up kinds cannot grow the exposition without bound.
    let maxLabelValues = 64

    let startDelay: Timer
    let runDuration: Timer
    let journalCommit: Timer
    let journalBatchSize: Recorder

    // Gauges.
    private let groups: [GroupPhase: Gauge]
    private let waiting: [SchedulerSummary.WaitReason: Gauge]
    private let ready: Gauge
    private let inFlight: (dispatched: Gauge, running: Gauge)
    private let lockHolders: Gauge
    private let lockWaiters: Gauge
    private let workers: [WorkerPhase: Gauge]
    private let slots: Gauge
    private let slotsInUse: Gauge
    private let leader: Gauge
    private let epoch: Gauge

    // The log store's (docs/operations.md, "Logs"): set from its counts at each refresh.
    private let logStoreBytes: Gauge
    private let logLinesStored: Counter
    private let logBytesCut: Counter
    private let logBytesEvicted: Counter
    private let logAttemptsEvicted: Counter
    /// Lines acknowledged without being stored (not of an attempt the worker runs now, or the
    /// store refused them); thread-safe, counted where it happens.
    let logLinesDropped: Counter
    /// The store's counts at the last refresh: the counters grow by the difference.
    private var lastLogCounts = LogStoreCounts()
    /// The store those counts are of: a standby that leads again opens a new one, whose counts
    /// start from 0.
    private var lastLogStore: ObjectIdentifier?

    private struct ChildKey: Hashable {
        var kind: String
        var phase: ChildPhase
    }

    /// The metric names, for docs and tests.
    enum Name {
        static let messagesReceived = "cohort_messages_received_total"
        static let messagesSent = "cohort_messages_sent_total"
        static let refusals = "cohort_refusals_total"
        static let groupsSubmitted = "cohort_groups_submitted_total"
        static let groupsFinished = "cohort_groups_finished_total"
        static let childrenFinished = "cohort_children_finished_total"
        static let attemptsDispatched = "cohort_attempts_dispatched_total"
        static let attemptsRerun = "cohort_attempts_rerun_after_worker_loss_total"
        static let workerSessionsEnded = "cohort_worker_sessions_ended_total"
        static let startDelay = "cohort_attempt_start_delay_seconds"
        static let runDuration = "cohort_attempt_run_seconds"
        static let lockWait = "cohort_lock_wait_seconds"
        static let lockHold = "cohort_lock_hold_seconds"
        static let journalCommit = "cohort_journal_commit_seconds"
        static let journalBatchSize = "cohort_journal_batch_records"
        static let groups = "cohort_groups"
        static let childrenWaiting = "cohort_children_waiting"
        static let childrenReady = "cohort_children_ready"
        static let attemptsInFlight = "cohort_attempts_in_flight"
        static let lockHolders = "cohort_lock_holders"
        static let lockWaiters = "cohort_lock_waiters"
        static let workers = "cohort_workers"
        static let slots = "cohort_slots"
        static let slotsInUse = "cohort_slots_in_use"
        static let leader = "cohort_coordinator_leader"
        static let epoch = "cohort_coordinator_epoch"
        static let logStoreBytes = "cohort_log_store_bytes"
        static let logLinesStored = "cohort_log_lines_stored_total"
        static let logLinesDropped = "cohort_log_lines_dropped_total"
        static let logBytesCut = "cohort_log_bytes_cut_total"
        static let logBytesEvicted = "cohort_log_bytes_evicted_total"
        static let logAttemptsEvicted = "cohort_log_attempts_evicted_total"
    }

    init(factory: any MetricsFactory) {
        self.factory = factory
        func counter(_ name: String, _ dimensions: [(String, String)] = []) -> Counter {
            Counter(label: name, dimensions: dimensions, factory: factory)
        }
        func gauge(_ name: String, _ dimensions: [(String, String)] = []) -> Gauge {
            Gauge(label: name, dimensions: dimensions, factory: factory)
        }
        // Index = family's raw value − 1. Only the series of the families each way
        // (docs/operations.md lists three per direction).
        messagesIn = WireFamily.allCases.map { family in
            family.receivedByCoordinator ? counter(Name.messagesReceived, [("family", family.metricLabel)]) : nil
        }
        messagesOut = WireFamily.allCases.map { family in
            family.sentByCoordinator ? counter(Name.messagesSent, [("family", family.metricLabel)]) : nil
        }
        groupsSubmitted = counter(Name.groupsSubmitted)
        var finished: [GroupPhase: Counter] = [:]
        for phase in GroupPhase.allCases where phase.isFinished {
            finished[phase] = counter(Name.groupsFinished, [("outcome", phase.rawValue)])
        }
        groupsFinished = finished
        attemptsDispatched = counter(Name.attemptsDispatched)
        attemptsRerun = counter(Name.attemptsRerun)
        sessionsEnded = (
            counter(Name.workerSessionsEnded, [("reason", "silent")]),
            counter(Name.workerSessionsEnded, [("reason", "left")]),
            counter(Name.workerSessionsEnded, [("reason", "replaced")])
        )
        startDelay = Timer(label: Name.startDelay, dimensions: [], factory: factory)
        runDuration = Timer(label: Name.runDuration, dimensions: [], factory: factory)
        journalCommit = Timer(label: Name.journalCommit, dimensions: [], factory: factory)
        journalBatchSize = Recorder(label: Name.journalBatchSize, dimensions: [], aggregate: true, factory: factory)

        var groups: [GroupPhase: Gauge] = [:]
        for phase in GroupPhase.allCases { groups[phase] = gauge(Name.groups, [("state", phase.rawValue)]) }
        self.groups = groups
        var waiting: [SchedulerSummary.WaitReason: Gauge] = [:]
        for reason in SchedulerSummary.WaitReason.allCases {
            waiting[reason] = gauge(Name.childrenWaiting, [("reason", reason.rawValue)])
        }
        self.waiting = waiting
        ready = gauge(Name.childrenReady)
        inFlight = (
            gauge(Name.attemptsInFlight, [("stage", "dispatched")]),
            gauge(Name.attemptsInFlight, [("stage", "running")])
        )
        lockHolders = gauge(Name.lockHolders)
        lockWaiters = gauge(Name.lockWaiters)
        var workers: [WorkerPhase: Gauge] = [:]
        for phase in WorkerPhase.allCases where phase != .lost {
            workers[phase] = gauge(Name.workers, [("state", phase.rawValue)])
        }
        self.workers = workers
        slots = gauge(Name.slots)
        slotsInUse = gauge(Name.slotsInUse)
        leader = gauge(Name.leader)
        epoch = gauge(Name.epoch)
        logStoreBytes = gauge(Name.logStoreBytes)
        logLinesStored = counter(Name.logLinesStored)
        logLinesDropped = counter(Name.logLinesDropped)
        logBytesCut = counter(Name.logBytesCut)
        logBytesEvicted = counter(Name.logBytesEvicted)
        logAttemptsEvicted = counter(Name.logAttemptsEvicted)
        // Series exist (at 0) from the start, so rates and alerts see them before the first event.
        for code in ProtocolError.Code.allCases { _ = refusal(code) }
    }

    // MARK: Events (the loop's thread)

    @inline(__always)
    func received(_ family: WireFamily) {
        pendingIn[Int(family.rawValue) - 1] &+= 1
    }

    @inline(__always)
    func sent(_ family: WireFamily) {
        pendingOut[Int(family.rawValue) - 1] &+= 1
    }

    @inline(__always)
    func dispatched() {
        pendingDispatched &+= 1
    }

    /// Adds the counts kept on the loop's thread to their counters.
    func flush() {
        for index in pendingIn.indices where pendingIn[index] > 0 {
            messagesIn[index]?.increment(by: pendingIn[index])
            pendingIn[index] = 0
        }
        for index in pendingOut.indices where pendingOut[index] > 0 {
            messagesOut[index]?.increment(by: pendingOut[index])
            pendingOut[index] = 0
        }
        if pendingDispatched > 0 {
            attemptsDispatched.increment(by: pendingDispatched)
            pendingDispatched = 0
        }
        if !pendingChildren.isEmpty {
            for (key, count) in pendingChildren { childFinished(kind: key.kind, key.phase).increment(by: count) }
            pendingChildren.removeAll(keepingCapacity: true)
        }
        if !pendingStartDelays.isEmpty || !pendingRunTimes.isEmpty {
            let (starts, runs, startDelay, runDuration) = (pendingStartDelays, pendingRunTimes, startDelay, runDuration)
            pendingStartDelays = []
            pendingRunTimes = []
            pendingStartDelays.reserveCapacity(starts.count)
            pendingRunTimes.reserveCapacity(runs.count)
            recorder.async {
                for nanoseconds in starts { startDelay.recordNanoseconds(nanoseconds) }
                for nanoseconds in runs { runDuration.recordNanoseconds(nanoseconds) }
            }
        }
    }

    /// Adds what is still pending to the metrics and waits until the latencies are recorded:
    /// the loop calls it once it stopped, so the last turns are not lost.
    func finish() {
        flush()
        recorder.sync {}
    }

    /// An error answer went out: a refusal of what a peer sent.
    func refused(_ code: ProtocolError.Code) {
        refusal(code).increment()
    }

    private func refusal(_ code: ProtocolError.Code) -> Counter {
        if let counter = refusals[code] { return counter }
        let counter = Counter(label: Name.refusals, dimensions: [("code", code.metricLabel)], factory: factory)
        refusals[code] = counter
        return counter
    }

    /// A worker's session ended: it missed its heartbeats (`silent`), left or was cut off
    /// (`left`), or a new session of the same worker replaced it (`replaced`).
    func sessionEnded(_ loss: WorkerLoss) {
        switch loss {
        case .silent: sessionsEnded.silent.increment()
        case .left: sessionsEnded.left.increment()
        case .replaced: sessionsEnded.replaced.increment()
        }
    }

    func groupFinished(_ phase: GroupPhase) {
        groupsFinished[phase]?.increment()
    }

    /// What the scheduler observed this turn.
    func record(_ observation: SchedulerObservation) {
        switch observation {
        case .childFinished(let kind, let phase):
            pendingChildren[ChildKey(kind: kind, phase: phase), default: 0] &+= 1
        case .attemptStarted(let waited):
            pendingStartDelays.append(waited.nanoseconds)
        case .attemptFinished(let ran):
            pendingRunTimes.append(ran.nanoseconds)
        case .attemptRerunAfterWorkerLoss:
            attemptsRerun.increment()
        case .lockGranted(let category, let waited):
            timer(&lockWait, Name.lockWait, category).recordNanoseconds(waited.nanoseconds)
        case .lockReleased(let category, let held):
            timer(&lockHold, Name.lockHold, category).recordNanoseconds(held.nanoseconds)
        }
    }

    private func childFinished(kind: String, _ phase: ChildPhase) -> Counter {
        let key = ChildKey(kind: kind, phase: phase)
        if let counter = childrenFinished[key] { return counter }
        if !kinds.contains(kind), kinds.count >= maxLabelValues, kind != "other" {
            return childFinished(kind: "other", phase)
        }
        kinds.insert(kind)
        let counter = Counter(
            label: Name.childrenFinished, dimensions: [("kind", kind), ("outcome", phase.rawValue)], factory: factory)
        childrenFinished[key] = counter
        return counter
    }

    private func timer(_ timers: inout [String: Timer], _ name: String, _ category: String) -> Timer {
        if let timer = timers[category] { return timer }
        if timers.count >= maxLabelValues, category != "other" { return timer(&timers, name, "other") }
        let timer = Timer(label: name, dimensions: [("category", category)], factory: factory)
        timers[category] = timer
        return timer
    }

    /// Adds the pending counts to their counters and sets the gauges from the scheduler's
    /// state, if ``refreshInterval`` has passed.
    func refreshIfDue(_ scheduler: inout Scheduler, logs: (any LogStoring)?, now: Timestamp) {
        if let nextRefresh, now < nextRefresh { return }
        nextRefresh = now + refreshInterval
        flush()
        refresh(scheduler.summary())
        if let logs {
            if lastLogStore != ObjectIdentifier(logs) {
                lastLogStore = ObjectIdentifier(logs)
                lastLogCounts = LogStoreCounts()
            }
            refresh(logs.counts)
        }
    }

    /// The log store's gauge, and its counters grown by what it did since the last refresh.
    func refresh(_ counts: LogStoreCounts) {
        logStoreBytes.record(Int64(clamping: counts.storedBytes))
        func grow(_ counter: Counter, _ now: UInt64, _ before: UInt64) {
            if now > before { counter.increment(by: Int64(clamping: now - before)) }
        }
        grow(logLinesStored, counts.linesStored, lastLogCounts.linesStored)
        grow(logBytesCut, counts.cutBytes, lastLogCounts.cutBytes)
        grow(logBytesEvicted, counts.evictedBytes, lastLogCounts.evictedBytes)
        grow(logAttemptsEvicted, counts.evictedAttempts, lastLogCounts.evictedAttempts)
        lastLogCounts = counts
    }

    /// Whether the coordinator serves (1: it leads, or takes no part in leader election) or
    /// stands by (0), and the epoch it serves with (0 while standing by).
    func role(serving: Bool, epoch: UInt64) {
        leader.record(serving ? 1 : 0)
        self.epoch.record(serving ? Double(epoch) : 0)
    }

    func refresh(_ summary: SchedulerSummary) {
        for (phase, gauge) in groups { gauge.record(summary.groups[phase, default: 0]) }
        for (reason, gauge) in waiting { gauge.record(summary.waiting[reason, default: 0]) }
        ready.record(summary.ready)
        inFlight.dispatched.record(summary.dispatched)
        inFlight.running.record(summary.running)
        lockHolders.record(summary.lockHolders)
        lockWaiters.record(summary.lockWaiters)
        for (phase, gauge) in workers { gauge.record(summary.workers[phase, default: 0]) }
        slots.record(summary.slots)
        slotsInUse.record(summary.slotsInUse)
    }
}

extension Duration {
    /// The whole nanoseconds, clamped to `Int64`.
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}

extension WireFamily {
    /// The family as a metric label value: `handshake`, `client_request`, `coordinator_reply`,
    /// `worker_message`, `coordinator_to_worker`.
    var metricLabel: String {
        switch self {
        case .handshake: "handshake"
        case .clientRequest: "client_request"
        case .coordinatorReply: "coordinator_reply"
        case .workerMessage: "worker_message"
        case .coordinatorToWorker: "coordinator_to_worker"
        }
    }
}

extension WireFamily {
    /// Whether a coordinator receives messages of this family (from clients and workers).
    var receivedByCoordinator: Bool {
        switch self {
        case .handshake, .clientRequest, .workerMessage: true
        case .coordinatorReply, .coordinatorToWorker: false
        }
    }

    /// Whether a coordinator sends messages of this family.
    var sentByCoordinator: Bool {
        switch self {
        case .handshake, .coordinatorReply, .coordinatorToWorker: true
        case .clientRequest, .workerMessage: false
        }
    }
}

extension ProtocolError.Code {
    /// The code as a metric label value, in snake case (`permission_denied`).
    var metricLabel: String {
        var label = ""
        for character in "\(self)" {
            if character.isUppercase {
                label += "_" + character.lowercased()
            } else {
                label.append(character)
            }
        }
        return label
    }
}
