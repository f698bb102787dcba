// A worker's own kinds build local procedures (`GroupProcedure`, `MutuallyExclusive`, …) and
// run them with `ProcedureContext.run(_:)`; re-exporting the engine spares every custom
// worker an explicit dependency on it (the `custom-worker` target lists CohortWorker,
// CohortCore, and ZeroMQ for its CURVE keys).
@_exported import Procedures
