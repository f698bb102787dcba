/// A client's settings, with their defaults.
public struct ClientConfiguration: Sendable, Equatable {
    /// The coordinator to talk to.
    public var coordinator: String = "tcp://127.0.0.1:7400"

    public init() {}
}
