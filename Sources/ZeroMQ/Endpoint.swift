import Foundation

/// The syntax of the endpoints Cohort's peers bind and connect, checked in one place by the
/// coordinator's, the worker's and the client's settings and by the CLI's `--coordinator`.
public enum Endpoint {
    /// The transports accepted: `tcp://HOST:PORT`, `ipc://PATH`, `inproc://NAME`.
    public static let schemes = ["tcp://", "ipc://", "inproc://"]

    /// `nil` when `text` has the shape of an endpoint (a known transport and an address), else
    /// what is wrong with it, e.g. `"10.0.0.5:7400" is not an endpoint like tcp://HOST:PORT`.
    /// Whether the address exists is found out by binding or connecting.
    public static func problem(_ text: String) -> String? {
        guard let scheme = schemes.first(where: text.hasPrefix), text.count > scheme.count else {
            return "\"\(text)\" is not an endpoint like tcp://HOST:PORT"
        }
        return nil
    }

    /// The endpoints of a comma-separated list (`tcp://a:7400,tcp://b:7400`: a coordinator
    /// and its standbys), each trimmed, empty items dropped.
    public static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// `nil` when `text` is one endpoint or a comma-separated list of them, else what is wrong
    /// with the first that is not.
    public static func listProblem(_ text: String) -> String? {
        let endpoints = list(text)
        guard !endpoints.isEmpty else { return "\"\(text)\" names no endpoint like tcp://HOST:PORT" }
        return endpoints.lazy.compactMap(problem).first
    }
}
