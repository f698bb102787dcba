import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A client's settings, with their defaults.
///
/// A plain value: reading flags and the environment (`COHORT_COORDINATOR`) happens in the
/// `cohort` executable, never here.
public struct ClientConfiguration: Sendable, Equatable {
    /// The coordinator to talk to, or a comma-separated list of a coordinator and its standbys
    /// (`tcp://a:7400,tcp://b:7400`): the client follows the leader a standby names (NOT_LEADER)
    /// and moves on to the next endpoint when one refuses connections or stays silent.
    public var coordinator: String = "tcp://127.0.0.1:7400"
    /// How long ``CohortClient/connect(_:logger:)`` waits for the coordinator's WELCOME
    /// before it fails with ``ClientError/Code/unreachable``. Default 5 s.
    public var connectTimeout: Duration = .seconds(5)
    /// How long a request (status, result, cancel, …) waits for its answer before it fails with
    /// ``ClientError/Code/connectionLost``. Watches are not bounded by it: they end when the group
    /// finishes, and a silent coordinator is detected by probing (see ``probeAfter``). Default 30 s.
    public var requestTimeout: Duration = .seconds(30)
    /// How long a watch may go without hearing from the coordinator before the client probes it
    /// with a status request; a probe unanswered for as long again ends the watch with
    /// ``ClientError/Code/connectionLost``. Default 10 s.
    public var probeAfter: Duration = .seconds(10)
    /// How long open requests and watches wait for a coordinator that went away to come back:
    /// one whose connection dropped (it crashed or was killed), or one that said it is
    /// restarting (stopped with SIGTERM while it keeps a journal). The client says HELLO again
    /// meanwhile, and the restarted coordinator (which reloads its journal) answers them. Past
    /// it they fail with ``ClientError/Code/connectionLost``. A coordinator that stops without a
    /// journal (its groups are gone) fails them at once with ``ClientError/Code/shuttingDown``.
    /// Default 30 s.
    public var reconnectTimeout: Duration = .seconds(30)
    /// The name the coordinator shows for this client in its logs, e.g. `cohort-cli@host`.
    public var peerName: String = ClientConfiguration.defaultPeerName
    /// CURVE keys for a coordinator that requires them (docs/security.md); `nil`: plaintext.
    public var curve: CurveClientKeys?
    /// A running child's attempt token (`COHORT_ATTEMPT_TOKEN`), sent with status, result,
    /// watch, cancel and add requests: while that attempt runs it lets them through for the
    /// child's own group, whatever this client's key may do (docs/security.md, "Attempt
    /// tokens"). Under CURVE a client with a token and no authorised key connects with a fresh
    /// key pair (``CurveKeyPair/generate()``). `nil`: none.
    public var attemptToken: String?
    /// Refuse a submission that no connected worker could run, instead of accepting it with a
    /// warning: ``CohortClient/submit(_:id:)`` and ``CohortClient/submit(specText:format:sourceName:id:)``
    /// then throw ``ClientError/Code/noCapableWorker`` naming each kind (with the labels its
    /// children require) that no ready worker offers, and nothing is submitted. Default
    /// `false`: such a group is accepted, its receipt carries the warning, and its children
    /// wait for a worker that offers the kind (for ever, without a timeout).
    ///
    /// The coordinator checks, in the same turn as it would accept the group, against the
    /// workers connected then (`Submission.strict`), and refuses with code
    /// `NO_CAPABLE_WORKER`.
    public var strict: Bool = false
    /// Told when the connection goes away and comes back (on the client's own thread; keep it
    /// short): the `cohort` CLI prints on stderr that it waits for a restarting coordinator.
    /// Not part of equality.
    public var onConnectionChange: (@Sendable (ConnectionChange) -> Void)?

    public init() {}

    /// Settings for the coordinator at `coordinator`, the rest defaulted.
    public init(coordinator: String) {
        self.coordinator = coordinator
    }

    /// Checks the values.
    /// - Throws: ``ClientError`` with code ``ClientError/Code/rejected`` naming the setting at fault.
    public func validate() throws(ClientError) {
        if let problem = Endpoint.listProblem(coordinator) { throw ClientError(.rejected, "coordinator: \(problem)") }
        for (name, value) in [
            ("connectTimeout", connectTimeout), ("requestTimeout", requestTimeout), ("probeAfter", probeAfter),
        ]
        where value <= .zero {
            throw ClientError(.rejected, "\(name): must be positive, not \(value)")
        }
    }

    public static func == (lhs: ClientConfiguration, rhs: ClientConfiguration) -> Bool {
        lhs.coordinator == rhs.coordinator && lhs.connectTimeout == rhs.connectTimeout
            && lhs.requestTimeout == rhs.requestTimeout && lhs.probeAfter == rhs.probeAfter
            && lhs.reconnectTimeout == rhs.reconnectTimeout && lhs.peerName == rhs.peerName && lhs.curve == rhs.curve
            && lhs.strict == rhs.strict && lhs.attemptToken == rhs.attemptToken
    }

    /// `cohort-cli@<hostname>`.
    public static var defaultPeerName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"
        return "cohort-cli@\(host)"
    }
}
