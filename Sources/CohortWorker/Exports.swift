// A worker's own kinds build local procedures (`GroupProcedure`, `MutuallyExclusive`, …) and
// run them with `ProcedureContext.run(_:)`, and take and give typed values (`Kind`, `JSONValue`,
// `ProcedureInputError`'s paths): re-exporting the engine and the spec module spares every
// custom worker an explicit dependency on them. `CohortClient` re-exports `CohortSpec` too.
@_exported import CohortSpec
@_exported import Procedures
