import CohortMetrics
import CohortTestSupport
import Logging
import Metrics
import Prometheus
import Testing

/// `GET /metrics` over real HTTP on loopback.
@Suite struct MetricsServerTests {
    /// Runs a server on `address` until `body` returns; `body` gets the bound address.
    private func withServer(
        _ address: MetricsAddress, registry: PrometheusCollectorRegistry,
        _ body: @Sendable (MetricsAddress) async throws -> Void
    ) async throws {
        let inbox = AsyncInbox<MetricsAddress>()
        let server = MetricsServer(address: address, registry: registry, logger: Logger(label: "test.metrics")) {
            inbox.post($0)
        }
        let task = Task { try await server.run() }
        defer { task.cancel() }
        let bound = try await inbox.take("the bound address") { _ in true }
        try await body(bound)
        task.cancel()
        try await task.value
    }

    @Test func metricsAreServedInTheTextFormat() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = CohortPrometheus.makeFactory(registry: registry)
        let counter = Counter(label: "cohort_test_total", dimensions: [("outcome", "failed")], factory: factory)
        counter.increment(by: 3)
        try await withServer(MetricsAddress(host: "127.0.0.1", port: 0), registry: registry) { bound in
            #expect(bound.port != 0)
            let reply = try await onItsOwnThread { try httpGet(port: bound.port, path: "/metrics") }
            #expect(reply.status == 200)
            #expect(reply.body.contains("# TYPE cohort_test_total counter"))
            #expect(reply.body.contains(#"cohort_test_total{outcome="failed"} 3"#))
            #expect(try await onItsOwnThread { try httpGet(port: bound.port, path: "/other") }.status == 404)
        }
    }

    @Test func aBusyPortIsAnErrorNamingIt() async throws {
        let registry = PrometheusCollectorRegistry()
        try await withServer(MetricsAddress(host: "127.0.0.1", port: 0), registry: registry) { bound in
            let second = MetricsServer(address: bound, registry: registry, logger: Logger(label: "test.metrics"))
            await #expect {
                try await second.run()
            } throws: { error in
                guard let error = error as? MetricsServerError else { return false }
                return error.portInUse && "\(error)".contains("cannot serve metrics on 127.0.0.1:\(bound.port)")
                    && "\(error)".contains("in use")
            }
        }
    }
}
