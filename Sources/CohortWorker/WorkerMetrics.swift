import CohortWire
import Metrics

/// A worker's metrics (docs/operations.md, "Metrics"), recorded through swift-metrics into the
/// factory the worker was given (`cohort worker` gives a Prometheus registry's). Each worker
/// process serves its own, so no metric carries the worker's name.
///
/// Thread-safety: `Sendable` (swift-metrics handles are thread-safe); the loop's thread
/// records most, a `shell` attempt's task records ``processesStarted``.
final class WorkerMetrics: Sendable {
    /// The metric names, for docs and tests.
    enum Name {
        static let slots = "cohort_worker_slots"
        static let running = "cohort_worker_attempts_running"
        static let started = "cohort_worker_attempts_started_total"
        static let finished = "cohort_worker_attempts_finished_total"
        static let processesStarted = "cohort_worker_processes_started_total"
        static let connected = "cohort_worker_connected"
    }

    let slots: Gauge
    let running: Gauge
    let started: Counter
    let succeeded: Counter
    let failed: Counter
    let cancelled: Counter
    /// Shell children spawned (one per `shell` attempt that got as far as starting its process).
    let processesStarted: Counter
    /// 1 while a coordinator session is up, 0 while connecting or reconnecting.
    let connected: Gauge

    init(factory: any MetricsFactory) {
        slots = Gauge(label: Name.slots, dimensions: [], factory: factory)
        running = Gauge(label: Name.running, dimensions: [], factory: factory)
        started = Counter(label: Name.started, dimensions: [], factory: factory)
        succeeded = Counter(label: Name.finished, dimensions: [("outcome", "succeeded")], factory: factory)
        failed = Counter(label: Name.finished, dimensions: [("outcome", "failed")], factory: factory)
        cancelled = Counter(label: Name.finished, dimensions: [("outcome", "cancelled")], factory: factory)
        processesStarted = Counter(label: Name.processesStarted, dimensions: [], factory: factory)
        connected = Gauge(label: Name.connected, dimensions: [], factory: factory)
    }

    /// An attempt's result, by its outcome.
    func finished(_ outcome: WireOutcome) {
        switch outcome {
        case .succeeded: succeeded.increment()
        case .failed: failed.increment()
        case .cancelled: cancelled.increment()
        }
    }
}
