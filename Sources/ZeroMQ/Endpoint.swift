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
}
