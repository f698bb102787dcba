import ArgumentParser
import CohortClient
import Foundation

import enum ZeroMQ.Endpoint

/// `--coordinator`: where the coordinator is, for every command that talks to one.
///
/// Precedence: the flag, then `COHORT_COORDINATOR`, then `tcp://127.0.0.1:7400`.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The coordinator's endpoint, or a comma-separated list of a coordinator and its standbys (env COHORT_COORDINATOR; default tcp://127.0.0.1:7400).",
            valueName: "endpoint"))
    var coordinator: String?

    @Option(
        name: .customLong("connect-timeout"),
        help: ArgumentHelp(
            "Seconds to wait for the coordinator to answer before giving up (exit 69).", valueName: "seconds"))
    var connectTimeout: Double = 5

    @Option(
        name: .customLong("attempt-token"),
        help: ArgumentHelp(
            "A running child's attempt token (env COHORT_ATTEMPT_TOKEN, which the worker sets): lets status, result, "
                + "watch, cancel and add through for that child's own group. Under CURVE, with no --key, an "
                + "ephemeral key is used.",
            valueName: "token"))
    var attemptToken: String?

    @OptionGroup var keys: KeyOptions

    /// The attempt token to send: the flag, then `COHORT_ATTEMPT_TOKEN`; `nil` for none (an
    /// empty value too).
    var token: String? {
        (attemptToken ?? ProcessInfo.processInfo.environment["COHORT_ATTEMPT_TOKEN"]).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The endpoint to use, after the flag, the environment and the default.
    var endpoint: String {
        coordinator ?? ProcessInfo.processInfo.environment["COHORT_COORDINATOR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ClientConfiguration().coordinator
    }

    func validate() throws {
        if let problem = Endpoint.listProblem(endpoint) { throw ValidationError("--coordinator: \(problem)") }
        guard connectTimeout > 0, connectTimeout.isFinite else {
            throw ValidationError("--connect-timeout must be a positive number of seconds")
        }
        do {
            _ = try keys.clientKeys(attemptToken: token)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The client's settings.
    /// - Throws: ``ConfigError`` for key files that cannot be read (checked in `validate()`).
    func clientConfiguration() throws(ConfigError) -> ClientConfiguration {
        var configuration = ClientConfiguration(coordinator: endpoint)
        configuration.connectTimeout = .milliseconds(Int64((connectTimeout * 1000).rounded()))
        configuration.curve = try keys.clientKeys(attemptToken: token)
        configuration.attemptToken = token
        let endpoint = endpoint
        configuration.onConnectionChange = { change in Console.err(Self.describe(change, endpoint: endpoint)) }
        return configuration
    }

    /// The stderr line for a connection that went away or came back.
    static func describe(_ change: ConnectionChange, endpoint: String) -> String {
        switch change {
        case .waiting(let reason, let restarting, let timeout):
            let limit = "\(timeout.components.seconds) s"
            return restarting
                ? "cohort: the coordinator at \(endpoint) is restarting; waiting up to \(limit) for it to come back"
                : "cohort: lost the coordinator at \(endpoint) (\(reason)); waiting up to \(limit) for it to come back"
        case .reconnected:
            return "cohort: the coordinator at \(endpoint) is back; carrying on"
        }
    }
}
