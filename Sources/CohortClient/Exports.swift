// `ClientError` and `ConnectionChange` live in CohortClientCore (with the client's session
// state machine, which the simulation runs without ZeroMQ); they are this module's API.
@_exported import CohortClientCore
// A client builds groups (`GroupSpec`, `ChildSpec`, `Kind`, `Injection`, `JSONPath`,
// `JSONValue`) and reads what comes back: re-exporting the spec module lets a program do all
// of it with `import CohortClient` alone, as `import CohortWorker` gives a worker's kinds the
// engine (`Procedures`) and the spec module.
@_exported import CohortSpec
