import CohortCore
import CohortJournal
import CohortSpec

import enum ZeroMQ.Endpoint

/// The coordinator's settings, with their defaults.
///
/// A plain value: reading `config/coordinator.yaml`, the environment and flags happens in
/// the `cohort` executable; this is the value it produces. Call ``validate()`` before handing
/// it to ``Coordinator``; `Coordinator.run()` validates it again.
public struct CoordinatorConfiguration: Sendable, Equatable {
    /// The one endpoint clients and workers connect to. Default `tcp://127.0.0.1:7400`;
    /// `tcp://127.0.0.1:*` binds a free port (the resolved endpoint is printed and logged).
    public var endpoint: String = "tcp://127.0.0.1:7400"
    /// How often the coordinator says something to each peer (a heartbeat when idle), and
    /// the interval it asks peers to use. Default 1 s.
    public var heartbeatInterval: Duration = .seconds(1)
    /// How many intervals without any message from a worker before it is declared lost
    /// (its attempts re-dispatched, its grants revoked). Default 3.
    public var heartbeatLiveness: Int = 3
    /// How many attempts a worker may hold beyond its slots, so it never idles for a round
    /// trip between tasks (the prefetch window). Default 4.
    public var prefetch: Int = 4
    /// A worker whose attempts lately ran shorter than this on average may hold up to twice
    /// its slots beyond them instead of `prefetch`, so that short work is sent in batches large
    /// enough to amortise a journal commit (an attempt then waits in a window for at most about
    /// two such runs). Zero: the window is always `prefetch`. Default 2 ms.
    public var shortAttempt: Duration = .milliseconds(2)
    /// How long closing the socket may wait for unsent messages when stopping. Default 200 ms.
    public var linger: Duration = .milliseconds(200)
    /// The largest frame accepted or sent, in bytes; a larger one is read and refused with a
    /// TOO_LARGE error that names this limit. Default 16 MiB (`WireCodec.defaultMaxFrameSize`).
    public var maxFrameSize: Int = 16 << 20
    /// The largest frame libzmq reads at all (`ZMQ_MAXMSGSIZE`): a peer that sends more is
    /// disconnected without an answer (it cannot be read to be answered). At least
    /// ``maxFrameSize`` + 64. Default `nil`: twice ``maxFrameSize`` (32 MiB).
    public var maxMessageSize: Int?
    /// The most bytes of a child's output the coordinator keeps (for `result` and injection); a
    /// larger output is cut down with a visible marker and flagged `outputTruncated` in status
    /// and result (docs/security.md, "Limits"). Default 4 MiB.
    public var maxOutputBytes: Int = 4 << 20
    /// The most bytes of line text one attempt's log keeps (docs/operations.md, "Logs"): the
    /// first half and the newest lines, with a marker saying how much was cut between.
    /// Default 64 MiB.
    public var maxLogBytes: Int = 64 << 20
    /// The most bytes of line text the coordinator's log store keeps in all; past it, whole
    /// attempts' logs are deleted, the oldest first. Default 4 GiB.
    public var maxLogStoreBytes: Int = 4 << 30
    /// CURVE encryption and authentication; `nil` (the default): plaintext, every peer may do
    /// everything (a warning is printed when the endpoint is not loopback).
    public var curve: CurveServerSettings?
    /// Limits on submitted specs (size, children, depth…). Default `SpecLimits.default`.
    public var specLimits: SpecLimits = .default
    /// How many finished groups are kept for `status` and `result`; the oldest finished are
    /// forgotten first. Default 10,000.
    public var finishedGroupRetention: Int = 10_000
    /// Workers a procedure may lose (killed, silent past their liveness, cut off) while its
    /// attempt runs there and still run again elsewhere; the next loss fails it. Separate from
    /// the spec's `retry.attempts`; `onWorkerLoss: fail` on a child fails it at the first loss.
    /// Default 3 (Ray's and Dask's default too).
    public var maxWorkerLosses: Int = 3
    /// Counting locks (docs/spec.md, "Counting locks"): category → how many holders it may
    /// have at once, 1…10,000. They apply whatever a spec's `limits` say. Default none: a
    /// category has limit 1 unless an unfinished group's spec declares another.
    public var lockLimits: [String: Int] = [:]
    /// How long a waiting child takes to gain one priority level (docs/scheduling.md,
    /// "Priorities"): a child waits behind later children of higher-priority groups at most
    /// `priority difference × priorityAging`. Default 10 s.
    public var priorityAging: Duration = .seconds(10)
    /// The most dispatches (or results) put in one message to a worker. Default 256.
    public var maxBatch: Int = 256
    /// The coordinator's stable id, sent in WELCOME. Default `cohort`.
    public var coordinatorID: String = "cohort"
    /// The coordinator's incarnation, sent in WELCOME; grows with each start. Default nil:
    /// the start time in seconds since 1970 (the journal will keep a counter instead).
    public var epoch: UInt64?
    /// Every fencing token is larger than this. Default 0; the journal will set it from the
    /// epoch so tokens after a restart exceed every token before it.
    public var tokenFloor: UInt64 = 0
    /// The state directory: the journal (`journal.sqlite`) and its lock. Nil (the library's
    /// default) runs without a journal: nothing survives a restart. `cohort coordinator`
    /// defaults to `$XDG_STATE_HOME/cohort` or `~/.local/state/cohort`.
    public var stateDirectory: String?
    /// A journal store to open instead of the state directory's SQLite journal (PostgreSQL:
    /// `PostgresJournal.opener(url:)` in CohortJournalPostgres). Nil (the default): SQLite
    /// under ``stateDirectory``. A store opened this way takes no state-directory lock.
    public var journalStore: JournalStoreOpener?
    /// Take part in leader election through the journal's lease (`cohort coordinator
    /// --standby`; a ``journalStore`` that has one, PostgreSQL's): serve only while holding
    /// the lease, refuse peers with NOT_LEADER naming the leader otherwise, and step down when
    /// the lease is lost (docs/operations.md, "High availability"). Nil (the default), or
    /// ``LeadershipSettings/standsBy`` false (`--lease` without `--standby`): the
    /// coordinator serves alone; on a ``journalStore`` with a lease it still holds the lease
    /// (default length, or the settings') while it serves, so that no two coordinators write:
    /// it refuses to start (`JournalError` `locked`) while another holds it, and stops
    /// `deposed` if another takes it.
    public var leadership: LeadershipSettings?
    /// How hard each journal commit waits for the disk. Default `full` (survives a power
    /// loss); `normal` survives a crash of the coordinator only (docs/operations.md).
    public var journalSynchronous: JournalSynchronous = .full
    /// After a restart, how long attempts that were running wait for their worker to report
    /// them before they get a new attempt. Default 10 s (workers notice a lost coordinator
    /// after `heartbeatInterval × heartbeatLiveness` and reconnect within about a second).
    public var restartGrace: Duration = .seconds(10)
    /// How long finished groups stay in the journal before they are pruned. Default 7 days.
    public var retention: Duration = .seconds(7 * 24 * 3600)
    /// Where `cohort coordinator` serves Prometheus metrics (`GET /metrics`): `HOST:PORT`, port
    /// 0 for a free one, or `off`. Nil (the default): `127.0.0.1:9470`, and when that port is
    /// taken the coordinator warns and runs without metrics. The library itself serves
    /// nothing: it records metrics into the factory given to ``Coordinator``; the CLI reads
    /// this setting (docs/operations.md, "Metrics").
    public var metrics: String?

    /// ``maxMessageSize``, or its default: twice ``maxFrameSize``.
    public var effectiveMaxMessageSize: Int { maxMessageSize ?? 2 * maxFrameSize }

    /// The defaults.
    public init() {}

    /// The defaults, bound at `endpoint`.
    public init(endpoint: String) {
        self.endpoint = endpoint
    }

    /// Checks every setting.
    ///
    /// - Throws: ``CoordinatorConfigurationError`` naming the first setting at fault.
    public func validate() throws(CoordinatorConfigurationError) {
        func fail(_ setting: String, _ message: String) -> CoordinatorConfigurationError {
            CoordinatorConfigurationError(setting: setting, message: message)
        }
        if let problem = Endpoint.problem(endpoint) { throw fail("endpoint", problem) }
        guard heartbeatInterval >= .milliseconds(1) else {
            throw fail("heartbeatInterval", "must be at least 1ms, not \(heartbeatInterval)")
        }
        // A worker's lease is interval × (liveness − 1) from its last acknowledged heartbeat,
        // and must outlast the next heartbeat's round trip: at least 3.
        guard (3...1000).contains(heartbeatLiveness) else {
            throw fail(
                "heartbeatLiveness",
                "must be between 3 and 1000 (a worker's lease, interval × (liveness − 1), must outlast a "
                    + "heartbeat's round trip), not \(heartbeatLiveness)")
        }
        guard (0...100_000).contains(prefetch) else {
            throw fail("prefetch", "must be between 0 and 100000, not \(prefetch)")
        }
        guard shortAttempt >= .zero else {
            throw fail("shortAttempt", "must not be negative, not \(shortAttempt)")
        }
        guard linger >= .zero else { throw fail("linger", "must not be negative, not \(linger)") }
        guard maxFrameSize >= 4096 else {
            throw fail("maxFrameSize", "must be at least 4096 bytes, not \(maxFrameSize)")
        }
        if let maxMessageSize, maxMessageSize < maxFrameSize + 64 {
            throw fail(
                "maxMessageSize", "must be at least maxFrameSize + 64 (\(maxFrameSize + 64)), not \(maxMessageSize)")
        }
        guard maxLogBytes >= 1024 else { throw fail("maxLogBytes", "must be at least 1024 bytes, not \(maxLogBytes)") }
        guard maxLogStoreBytes >= maxLogBytes else {
            throw fail(
                "maxLogStoreBytes", "must be at least maxLogBytes (\(maxLogBytes)), not \(maxLogStoreBytes)")
        }
        guard maxOutputBytes >= 1024 else {
            throw fail("maxOutputBytes", "must be at least 1024 bytes, not \(maxOutputBytes)")
        }
        if let curve, curve.authorizedKeysDirectory.isEmpty {
            throw fail("authorizedKeysDir", "must name a directory when secretKeyFile is set")
        }
        guard finishedGroupRetention >= 0 else {
            throw fail("finishedGroupRetention", "must not be negative, not \(finishedGroupRetention)")
        }
        guard (0...100).contains(maxWorkerLosses) else {
            throw fail("maxWorkerLosses", "must be between 0 and 100, not \(maxWorkerLosses)")
        }
        for (category, limit) in lockLimits.sorted(by: { $0.key < $1.key }) {
            if let problem = SpecNames.problem(withCategory: category, maxLength: specLimits.maxNameLength) {
                throw fail("limits", problem)
            }
            guard GroupSpec.lockLimitRange.contains(limit) else {
                throw fail("limits", "\(category) must be between 1 and 10000, not \(limit)")
            }
        }
        guard priorityAging >= .milliseconds(1) else {
            throw fail("priorityAging", "must be at least 1ms, not \(priorityAging)")
        }
        guard maxBatch >= 1 else { throw fail("maxBatch", "must be at least 1, not \(maxBatch)") }
        guard !coordinatorID.isEmpty else { throw fail("coordinatorID", "must not be empty") }
        if let stateDirectory, stateDirectory.isEmpty { throw fail("stateDir", "must not be empty") }
        guard restartGrace >= .zero else { throw fail("restartGrace", "must not be negative, not \(restartGrace)") }
        guard retention >= .zero else { throw fail("retention", "must not be negative, not \(retention)") }
        if let leadership {
            guard journalStore?.openForLeadership != nil else {
                throw fail(
                    leadership.standsBy ? "standby" : "lease",
                    "needs a journal several coordinators share: --journal postgres://… (SQLite's journal has no lease)"
                )
            }
            guard leadership.lease >= .milliseconds(300) else {
                throw fail("lease", "must be at least 300ms, not \(leadership.lease)")
            }
            if let advertise = leadership.advertise, let problem = Endpoint.problem(advertise) {
                throw fail("advertise", problem)
            }
            let wildcardHost = ["tcp://*:", "tcp://0.0.0.0:", "tcp://[::]:"].contains { endpoint.hasPrefix($0) }
            if leadership.standsBy, leadership.advertise == nil, wildcardHost {
                throw fail(
                    "advertise",
                    "must name this coordinator's endpoint as peers reach it (e.g. tcp://host-a:7400) when the endpoint "
                        + "\(endpoint) binds every address")
            }
        }
    }
}

/// How a coordinator takes part in leader election (``CoordinatorConfiguration/leadership``).
public struct LeadershipSettings: Sendable, Equatable {
    /// How long the lease lasts without a renewal: a standby takes over at most this long
    /// (plus one try, lease/3) after the leader stopped renewing. The leader renews every
    /// lease/3 and stops serving once its last renewal is a lease old. Default 5 s.
    public var lease: Duration = .seconds(5)
    /// The endpoint peers reach this coordinator at (`tcp://host-a:7400`), stored with the
    /// lease and named in standbys' NOT_LEADER refusals. Nil: the bound endpoint.
    public var advertise: String?
    /// Whether the coordinator stands by for the lease (`--standby`) while another holds it;
    /// false: it serves alone, holding the lease of ``lease``'s length, and refuses to start
    /// beside another holder (only ``lease`` applies then).
    public var standsBy: Bool

    public init(lease: Duration = .seconds(5), advertise: String? = nil, standsBy: Bool = true) {
        self.lease = lease
        self.advertise = advertise
        self.standsBy = standsBy
    }
}

/// A setting of ``CoordinatorConfiguration`` is out of range.
public struct CoordinatorConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The setting's name, as in `config/coordinator.yaml`.
    public var setting: String
    public var message: String

    public init(setting: String, message: String) {
        self.setting = setting
        self.message = message
    }

    public var description: String { "\(setting): \(message)" }
}
