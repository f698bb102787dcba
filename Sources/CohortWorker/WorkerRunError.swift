/// Why ``Worker/run()`` stopped with an error.
public struct WorkerRunError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: Hashable, Sendable {
        /// A setting is invalid (see ``WorkerConfiguration/validate()``).
        case invalidConfiguration
        /// The coordinator refused the worker for good (e.g. another protocol version).
        case refused
        /// The coordinator refused the worker's key or role (the CLI exits 77).
        case permissionDenied
        /// ZeroMQ failed (no context, a malformed endpoint, …).
        case transport
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
