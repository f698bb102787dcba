import CohortSpec
import CohortWire
import Logging

/// A connection to a Cohort coordinator: submit groups, watch them, wait for them, cancel them,
/// and query groups, results, workers and locks.
///
/// ```swift
/// let client = try await CohortClient.connect(ClientConfiguration(coordinator: "tcp://127.0.0.1:7400"))
/// defer { Task { await client.close() } }   // or use `CohortClient.withClient`
/// let group = try await client.submit(specText: yaml, sourceName: "release.yaml")
/// for try await event in client.watch(group.id) { print(event) }
/// let final = try await client.wait(group.id)   // .state == .succeeded
/// ```
///
/// Thread-safety: `Sendable`; call it from any task. Its socket lives on a thread of its own
/// (no Swift concurrency thread blocks on I/O). Every method throws ``ClientError``.
public final class CohortClient: Sendable {
    /// This client's Cohort release, sent in its HELLO (informative).
    public static let softwareVersion = "0.1.0"

    /// The settings it was connected with.
    public let configuration: ClientConfiguration
    /// The coordinator's stable id, from its WELCOME.
    public let coordinatorID: String
    /// The id the coordinator gave this client's session.
    public let sessionID: String

    let connection: ClientConnection

    private init(connection: ClientConnection, welcome: Welcome) {
        self.connection = connection
        self.configuration = connection.configuration
        self.coordinatorID = welcome.coordinatorID
        self.sessionID = welcome.peerID
    }

    /// Connects to the coordinator and completes the handshake.
    ///
    /// - Throws: ``ClientError`` ``ClientError/Code/unreachable`` (naming the endpoint) when no
    ///   coordinator answers within `configuration.connectTimeout`;
    ///   ``ClientError/Code/protocolMismatch`` when it speaks another protocol version;
    ///   ``ClientError/Code/rejected`` for a malformed endpoint or setting.
    public static func connect(
        _ configuration: ClientConfiguration = ClientConfiguration(),
        logger: Logger = Logger(label: "cohort.client")
    ) async throws(ClientError) -> CohortClient {
        try configuration.validate()
        let (connection, welcome) = try await ClientConnection.open(configuration, logger: logger)
        return CohortClient(connection: connection, welcome: welcome)
    }

    /// Connects, runs `body` with the client, and closes it however `body` ends.
    public static func withClient<Result: Sendable>(
        _ configuration: ClientConfiguration = ClientConfiguration(),
        logger: Logger = Logger(label: "cohort.client"),
        _ body: (CohortClient) async throws -> Result
    ) async throws -> Result {
        let client = try await connect(configuration, logger: logger)
        do {
            let result = try await body(client)
            await client.close()
            return result
        } catch {
            await client.close()
            throw error
        }
    }

    /// Says goodbye to the coordinator and stops the client's thread. Calls in flight fail with
    /// ``ClientError/Code/closed``; watches end. Idempotent.
    public func close() async {
        await connection.close()
    }

    // MARK: - Submitting

    /// Submits a spec document (YAML or JSON).
    ///
    /// The spec is validated here first, so an invalid one is rejected without a round trip,
    /// with every fault's line. It then travels in its JSON form, which the coordinator reads
    /// (and validates again) several times faster than YAML; `sourceName` goes with it.
    /// - Parameters:
    ///   - specText: the document (docs/spec.md).
    ///   - format: its format (JSON is read as YAML; the format only changes the words of errors).
    ///   - sourceName: where it came from, e.g. `examples/release.yaml`: the group's default name.
    ///   - id: a group id of the caller's choosing; submitting the same id again is idempotent.
    ///   - priority: overrides the spec's `priority` (-1000…1000); nil keeps the spec's.
    /// - Throws: ``ClientError/Code/invalidSpec`` with every fault in
    ///   ``ClientError/specErrors``, or the coordinator's refusal.
    public func submit(
        specText: String, format: CohortSpec.SpecFormat = .yaml, sourceName: String? = nil, id: String? = nil,
        priority: Int? = nil
    ) async throws(ClientError) -> SubmitReceipt {
        let spec: GroupSpec
        do {
            spec = try SpecParser.parse(text: specText, format: format, sourceName: sourceName)
        } catch {
            throw ClientError(invalid: error)
        }
        return try await submit(parsed: spec, sourceName: sourceName, id: id, priority: priority)
    }

    /// Submits a spec `SpecParser.parse` returned (so validated once already), with `priority`
    /// in place of its own: the CLI parses a file once and submits what it parsed. A priority
    /// outside ``GroupSpec/priorityRange`` is refused here as by validation.
    package func submit(
        parsed spec: GroupSpec, sourceName: String?, id: String?, priority: Int?
    ) async throws(ClientError) -> SubmitReceipt {
        var spec = spec
        if let priority {
            spec.priority = priority
            // A priority is the one thing changed since validation, and only its range can be wrong.
            if !GroupSpec.priorityRange.contains(priority) {
                do { try spec.validate() } catch { throw ClientError(invalid: error) }
            }
        }
        return try await send(
            Submission(
                groupID: id, document: spec.specText(pretty: false), format: .json, sourceName: sourceName,
                strict: configuration.strict))
    }

    /// Submits a group built in Swift, sent in the spec's JSON form.
    /// - Throws: ``ClientError/Code/invalidSpec`` when `spec.validate()` finds faults, or the
    ///   coordinator's refusal.
    public func submit(_ spec: GroupSpec, id: String? = nil) async throws(ClientError) -> SubmitReceipt {
        do {
            try spec.validate()
        } catch {
            throw ClientError(invalid: error)
        }
        return try await send(
            Submission(
                groupID: id, document: spec.specText(pretty: false), format: .json, sourceName: nil,
                strict: configuration.strict))
    }

    /// Re-runs what failed: submits the spec of finished group `group` again as a new group
    /// (`id`, or one the coordinator chooses). Each procedure that succeeded in `group`, and
    /// waits for nothing that runs again, starts succeeded with its recorded output
    /// (``SubmitReceipt/reused`` counts them); the others, and what comes after them, run.
    /// - Throws: ``ClientError`` `notFound` for a group the coordinator's journal does not have;
    ///   `invalidRequest` for a group still running, one with nothing to run again, or a
    ///   coordinator without a journal.
    public func rerun(_ group: String, id: String? = nil) async throws(ClientError) -> SubmitReceipt {
        let reply = try await connection.request(.rerun(group: group, id: id))
        guard case .submitted(let receipt) = reply else { throw unexpected(reply, for: "rerun") }
        return receipt
    }

    func send(_ submission: Submission) async throws(ClientError) -> SubmitReceipt {
        let reply = try await connection.request(.submit(submission))
        guard case .submitted(let receipt) = reply else { throw unexpected(reply, for: "submit") }
        return receipt
    }

    func unexpected(_ reply: CoordinatorReply.Kind, for request: String) -> ClientError {
        ClientError(.protocolMismatch, "the coordinator answered a \(request) request with \(reply)")
    }
}

extension ClientError {
    /// An invalid spec found on this side.
    init(invalid errors: SpecErrors) {
        let source = errors.sourceName.map { " \($0)" } ?? ""
        let count = errors.errors.count
        self.init(
            .invalidSpec, "invalid spec\(source): \(count) error\(count == 1 ? "" : "s")", specErrors: errors.errors)
    }
}
