import ServiceLifecycle

extension CohortClient: Service {
    /// Keeps the connection open until the `ServiceGroup` shuts down (gracefully or by
    /// cancellation), then closes it: calls still in flight fail with
    /// ``ClientError/Code/closed`` and watches end.
    ///
    /// ```swift
    /// let client = try await CohortClient.connect(configuration)
    /// try await ServiceGroup(services: [client, mySubmitter], gracefulShutdownSignals: [.sigterm], logger: logger).run()
    /// ```
    /// The services that use the client come after it in the group, so that a graceful
    /// shutdown (last first) stops them before it closes the connection they use.
    public func run() async throws {
        // Returns on a graceful shutdown, throws when the task is cancelled: both end the client.
        try? await gracefulShutdown()
        await close()
    }
}
