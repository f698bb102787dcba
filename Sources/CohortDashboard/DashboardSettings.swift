import Foundation

/// Where the dashboard listens: `--http ADDRESS:PORT` or `--http off`.
public struct DashboardAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host to bind, e.g. `127.0.0.1` or `0.0.0.0`.
    public var host: String
    /// The port; 0 picks a free one.
    public var port: Int

    /// `127.0.0.1:7401`: the dashboard's default. A coordinator whose default port is taken (a
    /// second coordinator on the host) warns and runs on without a dashboard; an address given
    /// on purpose that cannot be bound stops the start.
    public static let defaultAddress = DashboardAddress(host: "127.0.0.1", port: 7401)

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `HOST:PORT` (`[::1]:7401` for IPv6); `nil` for `off`.
    /// - Throws: ``DashboardSettingsError`` naming what is wrong with `text`.
    public static func parse(_ text: String) throws(DashboardSettingsError) -> DashboardAddress? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased() == "off" { return nil }
        guard let colon = trimmed.lastIndex(of: ":") else {
            throw DashboardSettingsError("http: expected ADDRESS:PORT (e.g. 127.0.0.1:7401) or off, not \"\(text)\"")
        }
        var host = String(trimmed[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else {
            throw DashboardSettingsError("http: \"\(text)\" has no address before the port (e.g. 127.0.0.1:7401)")
        }
        guard let port = Int(trimmed[trimmed.index(after: colon)...]), (0...65535).contains(port) else {
            throw DashboardSettingsError("http: the port of \"\(text)\" must be a number from 0 to 65535")
        }
        return DashboardAddress(host: host, port: port)
    }

    /// Whether only this machine can reach it (127.x, ::1, localhost).
    public var isLoopback: Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }

    /// `127.0.0.1:7401`, `[::1]:7401`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// `http://127.0.0.1:7401/`.
    public var url: String { "http://\(self)/" }
}

/// A dashboard setting is invalid; the message names it and what is wrong.
public struct DashboardSettingsError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
