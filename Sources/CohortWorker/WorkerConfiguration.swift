/// A worker's settings, with their defaults.
public struct WorkerConfiguration: Sendable, Equatable {
    /// The coordinator to connect to.
    public var coordinator: String = "tcp://127.0.0.1:7400"

    public init() {}
}
