/// The coordinator's settings, with their defaults. Reading files, the environment and
/// flags happens in the `cohort` executable; this is the plain value it produces.
public struct CoordinatorConfiguration: Sendable, Equatable {
    /// The one endpoint clients and workers connect to. `tcp://127.0.0.1:*` binds a free port.
    public var endpoint: String = "tcp://127.0.0.1:7400"

    public init() {}
}
