import Foundation
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A worker's settings, with their defaults.
///
/// A plain value: reading `config/worker.yaml`, the environment and flags happens in the
/// `cohort` executable (or a custom worker's `main`), never here. Call ``validate()``
/// before handing it to ``Worker``; `Worker.run()` validates it again.
public struct WorkerConfiguration: Sendable, Equatable {
    /// The coordinator to connect to, or a comma-separated list of a coordinator and its
    /// standbys (`tcp://a:7400,tcp://b:7400`): the worker follows the leader a standby names
    /// (NOT_LEADER) and tries the next endpoint after each lost connection. Default
    /// `tcp://127.0.0.1:7400`.
    public var coordinator: String = "tcp://127.0.0.1:7400"
    /// The worker's name in `cohort workers`, logs and `COHORT_WORKER`.
    /// Default `<hostname>-<pid>`.
    public var name: String = WorkerConfiguration.defaultName
    /// The host the worker reports. Default: this machine's host name.
    public var host: String = WorkerConfiguration.hostName
    /// How many procedures execute at once: the local `ProcedureQueue`'s
    /// `maxConcurrentCount`. Default: the number of active processors.
    public var slots: Int = ProcessInfo.processInfo.activeProcessorCount
    /// The worker's labels; a child runs here only if its `requires` are all among them. Default none.
    public var labels: [String] = []
    /// How long a cancelled `shell` child's process group has between SIGTERM and SIGKILL. Default 5 s.
    public var killGrace: Duration = .seconds(5)
    /// How often the worker says something to the coordinator, until the coordinator's
    /// WELCOME names its own interval (which then wins). Default 1 s.
    public var heartbeatInterval: Duration = .seconds(1)
    /// How many silent intervals make the coordinator lost (and how long a HELLO waits for
    /// its WELCOME), until the WELCOME names its own. Default 3.
    public var heartbeatLiveness: Int = 3
    /// The first wait before reconnecting to a lost coordinator; doubled after every failed
    /// attempt up to ``maxReconnectDelay``. Default 1 s.
    public var reconnectDelay: Duration = .seconds(1)
    /// The longest wait between reconnection attempts. Default 32 s.
    public var maxReconnectDelay: Duration = .seconds(32)
    /// How long a draining worker (``Worker/drain()``, SIGTERM to `cohort worker`) lets its
    /// running attempts finish; then it cancels them and hands them back to the coordinator,
    /// which runs them again elsewhere without using up a retry. Default 60 s.
    public var drainTimeout: Duration = .seconds(60)
    /// How many bytes of a `shell` child's stdout, and of its stderr, are kept (the last
    /// ones; earlier output is dropped). Default 1 MiB each.
    public var maxCapturedOutput: Int = 1 << 20
    /// CURVE keys for a coordinator that requires them (docs/security.md); `nil`: plaintext.
    /// The worker's key must have the `worker` (or `admin`) role there.
    public var curve: CurveClientKeys?
    /// Where `cohort worker` serves Prometheus metrics (`GET /metrics`): `HOST:PORT`, port 0
    /// for a free one, or `off`. Nil (the default): `127.0.0.1:9471`, or a free port when that
    /// one is taken (several workers on a host). The library serves nothing itself: it records
    /// metrics into the factory given to ``Worker``; the CLI reads this setting.
    public var metrics: String?

    /// The defaults.
    public init() {}

    /// The defaults, connecting to `coordinator`.
    public init(coordinator: String) {
        self.coordinator = coordinator
    }

    /// Checks every setting.
    ///
    /// - Throws: ``WorkerConfigurationError`` naming the first setting at fault.
    public func validate() throws(WorkerConfigurationError) {
        func fail(_ setting: String, _ message: String) -> WorkerConfigurationError {
            WorkerConfigurationError(setting: setting, message: message)
        }
        if let problem = Endpoint.listProblem(coordinator) { throw fail("coordinator", problem) }
        guard !name.isEmpty, !name.contains(where: \.isWhitespace) else {
            throw fail("name", "\"\(name)\" must be non-empty and without spaces")
        }
        guard !host.isEmpty else { throw fail("host", "must not be empty") }
        guard (1...100_000).contains(slots) else { throw fail("slots", "must be between 1 and 100000, not \(slots)") }
        for label in labels where label.isEmpty || label.contains(where: { $0.isWhitespace || $0 == "," }) {
            throw fail("labels", "\"\(label)\" is not a label (non-empty, no spaces or commas)")
        }
        guard killGrace >= .zero else { throw fail("killGrace", "must not be negative, not \(killGrace)") }
        guard heartbeatInterval > .zero else {
            throw fail("heartbeatInterval", "must be positive, not \(heartbeatInterval)")
        }
        guard heartbeatLiveness >= 1 else {
            throw fail("heartbeatLiveness", "must be at least 1, not \(heartbeatLiveness)")
        }
        guard reconnectDelay > .zero else { throw fail("reconnectDelay", "must be positive, not \(reconnectDelay)") }
        guard maxReconnectDelay >= reconnectDelay else {
            throw fail(
                "maxReconnectDelay", "must be at least reconnectDelay (\(reconnectDelay)), not \(maxReconnectDelay)")
        }
        guard drainTimeout >= .zero else { throw fail("drainTimeout", "must not be negative, not \(drainTimeout)") }
        guard maxCapturedOutput > 0 else {
            throw fail("maxCapturedOutput", "must be positive, not \(maxCapturedOutput)")
        }
    }

    /// `<hostname>-<pid>`, e.g. `build-3-4711`.
    public static var defaultName: String { "\(hostName)-\(getpid())" }

    /// This machine's host name, or `localhost` if it has none.
    public static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }
}

/// A setting of ``WorkerConfiguration`` that ``WorkerConfiguration/validate()`` refused.
public struct WorkerConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The setting at fault, e.g. `slots`.
    public var setting: String
    /// What is wrong with it.
    public var message: String

    public init(setting: String, message: String) {
        self.setting = setting
        self.message = message
    }

    /// `slots: must be between 1 and 100000, not 0`.
    public var description: String { "\(setting): \(message)" }
}
