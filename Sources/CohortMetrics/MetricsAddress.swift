/// Where a process serves its Prometheus metrics: `HOST:PORT` (`127.0.0.1:9470`,
/// `0.0.0.0:9471`, `[::1]:9470`; port 0 picks a free one), or `off`.
public struct MetricsAddress: Hashable, Sendable, CustomStringConvertible {
    /// The host or IP address to bind (`127.0.0.1`, `0.0.0.0`, `::1`, `localhost`).
    public var host: String
    /// The TCP port; 0 picks a free one (the bound port is announced).
    public var port: Int

    /// The coordinator's default: `127.0.0.1:9470`.
    public static let coordinatorDefault = MetricsAddress(host: "127.0.0.1", port: 9470)
    /// The worker's default: `127.0.0.1:9471` (`cohort worker` takes a free port instead
    /// when another worker of the host has it).
    public static let workerDefault = MetricsAddress(host: "127.0.0.1", port: 9471)

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `HOST:PORT`, with an IPv6 host in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The metrics URL for this address (`http://127.0.0.1:9470/metrics`).
    public var url: String { "http://\(self)/metrics" }

    /// Reads `--metrics`' value: `off` (nil), or `HOST:PORT`.
    ///
    /// - Throws: ``MetricsAddressError`` naming what is wrong with `text`.
    public static func parse(_ text: String) throws(MetricsAddressError) -> MetricsAddress? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if ["off", "none", "false", "no"].contains(trimmed.lowercased()) { return nil }
        func fail(_ reason: String) -> MetricsAddressError {
            MetricsAddressError(value: text, reason: reason)
        }
        guard !trimmed.isEmpty else { throw fail("it is empty") }
        guard !trimmed.contains("/") else {
            throw fail("it is not a host name or IP address with a port (no scheme or path)")
        }
        let host: Substring
        let portText: Substring
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]") else { throw fail("the IPv6 address has no closing ]") }
            host = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
            let rest = trimmed[trimmed.index(after: close)...]
            guard rest.hasPrefix(":") else { throw fail("it has no :PORT after the address") }
            portText = rest.dropFirst()
        } else {
            guard let colon = trimmed.lastIndex(of: ":") else {
                throw fail("it has no :PORT")
            }
            host = trimmed[..<colon]
            portText = trimmed[trimmed.index(after: colon)...]
            guard !host.contains(":") else { throw fail("an IPv6 address goes in brackets: [::1]:9470") }
        }
        guard !host.isEmpty else { throw fail("the host is empty") }
        guard !host.contains(" ") else { throw fail("\"\(host)\" is not a host name or IP address") }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw fail("the port \"\(portText)\" is not a number from 0 to 65535")
        }
        return MetricsAddress(host: String(host), port: port)
    }
}

/// A `--metrics` value (or `metrics` setting) that is not `HOST:PORT` or `off`.
public struct MetricsAddressError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The value as given.
    public var value: String
    /// What is wrong with it.
    public var reason: String

    public var description: String {
        "invalid metrics address \"\(value)\": \(reason); write HOST:PORT (e.g. 127.0.0.1:9470, port 0 for a free one) or off"
    }
}
