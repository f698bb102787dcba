import CoreMetrics
import Metrics
import Prometheus

/// Cohort's Prometheus backend for swift-metrics: a `PrometheusCollectorRegistry` and a
/// factory whose histogram buckets suit Cohort's metrics (sub-millisecond dispatches to
/// hour-long attempts), to bootstrap `MetricsSystem` with or to hand to a `Coordinator`.
public enum CohortPrometheus {
    /// A factory recording into `registry`, with Cohort's buckets.
    public static func makeFactory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        let fast: [Duration] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
        ]
        let long: [Duration] = [
            .milliseconds(1), .milliseconds(10), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5),
            .seconds(10), .seconds(30), .seconds(60), .seconds(300), .seconds(900), .seconds(1800), .seconds(3600),
            .seconds(3 * 3600),
        ]
        factory.defaultDurationHistogramBuckets = fast
        factory.durationHistogramBuckets = [
            "cohort_attempt_start_delay_seconds": fast,
            "cohort_journal_commit_seconds": fast,
            "cohort_attempt_run_seconds": long,
            "cohort_lock_wait_seconds": long,
            "cohort_lock_hold_seconds": long,
        ]
        factory.valueHistogramBuckets = [
            "cohort_journal_batch_records": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384]
        ]
        return factory
    }

    /// Makes a registry and bootstraps `MetricsSystem` with its factory (once per process:
    /// swift-metrics allows one bootstrap). Returns the registry to serve.
    public static func bootstrap() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(makeFactory(registry: registry))
        return registry
    }
}
