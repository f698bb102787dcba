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

    /// Gives a worker an operator drained work again: it is `ready` once more (see
    /// ``workers()``). `worker` is its name or, while connected, its session id (`w-3`). A
    /// drain belongs to the worker's name and lasts across its reconnects and restarts, so a
    /// drained worker that is not connected now can be undrained too.
    ///
    /// With CURVE, only an admin key may undrain workers (the `drain` permission).
    /// - Throws: ``ClientError/Code/notFound`` for a worker neither connected nor drained,
    ///   ``ClientError/Code/rejected`` for one that is not drained or that drains itself
    ///   because it is stopping, ``ClientError/Code/permissionDenied`` for a key without `drain`.
    public func undrain(worker: String) async throws(ClientError) {
        let reply = try await connection.request(.undrain(worker: worker))
        guard case .acknowledged = reply else { throw unexpected(reply, for: "undrain") }
    }
}
