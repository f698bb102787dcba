import CohortCore
import CohortWire

/// Which worker a client's drain names (`cohort drain NAME`).
enum DrainTarget {
    /// The first worker in `workers` (the scheduler's order: connected ones by id, then those
    /// that left) whose name or session id is `name`; a `notFound` error naming it otherwise.
    static func find(_ name: String, among workers: [WorkerRecord]) -> Result<WorkerRecord, ProtocolError> {
        guard let worker = workers.first(where: { $0.name == name || $0.id.description == name }) else {
            return .failure(ProtocolError(code: .notFound, message: "no worker named \"\(name)\""))
        }
        return .success(worker)
    }
}
