import CohortClient
import CohortCoordinator
import CohortDashboard
import Foundation
import Logging
import ZeroMQ

/// Runs the dashboard beside a coordinator in the `cohort coordinator` process: a
/// ``CohortClient`` connected to the coordinator's own endpoint, and the HTTP server on it.
struct DashboardHost: Sendable {
    let coordinator: Coordinator
    let address: DashboardAddress
    /// A busy default port only warns.
    let isDefault: Bool
    let tokens: AccessTokens
    /// Under CURVE, the dashboard client's keys (its key authorised in memory by ``authorize(_:enabled:)``).
    let keys: CurveClientKeys?
    let logger: Logger

    /// Under CURVE, makes the dashboard's key pair and authorises its public key as an admin
    /// key in memory only (`CurveServerSettings.inMemoryKeys`): nothing is written, and the key
    /// is gone with the process. `nil` without CURVE or without a dashboard.
    static func authorize(_ configuration: inout CoordinatorConfiguration, enabled: Bool) throws -> CurveClientKeys? {
        guard enabled, let curve = configuration.curve else { return nil }
        let pair = try CurveKeyPair.generate()
        configuration.curve?.inMemoryKeys.append(
            CurveServerSettings.InMemoryKey(publicKey: pair.publicKey, name: "dashboard", role: .admin))
        return CurveClientKeys(keyPair: pair, serverKey: curve.keyPair.publicKey)
    }

    /// Runs the coordinator and the dashboard until the coordinator returns (the task is
    /// cancelled, e.g. by SIGTERM). A dashboard that cannot listen on an address given on
    /// purpose stops the coordinator with ``DashboardSettingsError``; on the busy default port
    /// it warns and the coordinator runs on without it.
    func runBeside() async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await coordinator.run()
                return true
            }
            group.addTask {
                try await serve()
                return false
            }
            while let coordinatorEnded = try await group.next() {
                if coordinatorEnded {
                    group.cancelAll()
                    break
                }
            }
        }
    }

    private func serve() async throws {
        // A coordinator that stopped before binding says why itself (its exit status too).
        guard let endpoint = try? await coordinator.boundEndpoint() else { return }
        var configuration = ClientConfiguration(coordinator: Self.loopback(endpoint))
        configuration.peerName =
            "cohort-dashboard@\(ClientConfiguration.defaultPeerName.split(separator: "@").last ?? "")"
        configuration.curve = keys
        // A coordinator stopping for a restart is not waited for: the dashboard stops with it.
        configuration.reconnectTimeout = .seconds(5)
        let client: CohortClient
        do {
            client = try await CohortClient.connect(configuration, logger: logger)
        } catch {
            guard isDefault, !Task.isCancelled else { throw error }
            // Nobody asked for the dashboard: the coordinator runs on without it.
            logger.warning("dashboard off", metadata: ["error": "\(error)"])
            Console.err("cohort: WARNING: the dashboard cannot reach the coordinator (\(error)); it is off")
            return
        }
        let server = DashboardServer(client: client, tokens: tokens, readsNeedToken: keys != nil, logger: logger)
        do {
            try await server.run(
                address: address,
                onRunning: { bound in
                    Console.out("cohort coordinator dashboard on \(bound.url)")
                    logger.notice(
                        "dashboard listening",
                        metadata: ["http.url": "\(bound.url)", "http.tokens": "\(tokens.tokens.count)"])
                },
                onStop: { await client.close() })
        } catch let error as DashboardSettingsError where isDefault {
            let text =
                "the dashboard cannot listen on its default address \(address) (another coordinator on this "
                + "host?); the coordinator runs without it. Give --http ADDRESS:PORT (port 0: any free port) or --http off."
            logger.warning("dashboard off", metadata: ["error": "\(error)"])
            Console.err("cohort: WARNING: \(text)")
        }
        await client.close()
    }

    /// The coordinator's endpoint as this process connects to it: a wildcard address
    /// (`0.0.0.0`, `*`, `::`) becomes loopback.
    static func loopback(_ endpoint: String) -> String {
        guard endpoint.hasPrefix("tcp://"), let colon = endpoint.lastIndex(of: ":") else { return endpoint }
        let host = endpoint[endpoint.index(endpoint.startIndex, offsetBy: 6)..<colon]
        let port = endpoint[endpoint.index(after: colon)...]
        switch host {
        case "0.0.0.0", "*": return "tcp://127.0.0.1:\(port)"
        case "[::]", "::": return "tcp://[::1]:\(port)"
        default: return endpoint
        }
    }
}
