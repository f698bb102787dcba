import CohortWire

extension CohortClient {
    /// Stops giving a worker new work: the coordinator marks it `draining` (see ``workers()``)
    /// and what it runs finishes there. `worker` is its name or its session id (`w-3`).
    ///
    /// With CURVE, only an admin key may drain workers.
    /// - Throws: ``ClientError/Code/notFound`` for an unknown worker,
    ///   ``ClientError/Code/permissionDenied`` for a key without the `drain` permission.
    public func drain(worker: String) async throws(ClientError) {
        let reply = try await connection.request(.drain(worker: worker))
        guard case .acknowledged = reply else { throw unexpected(reply, for: "drain") }
    }
}
