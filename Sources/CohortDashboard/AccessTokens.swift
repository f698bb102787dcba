import Foundation

/// What a dashboard token may do. The roles are the authorised-keys roles (docs/security.md)
/// as they apply to the dashboard, plus `viewer`.
///
/// | role   | read | cancel any group or child | drain workers |
/// |--------|------|---------------------------|---------------|
/// | (none) | yes  |                           |               |
/// | viewer | yes  |                           |               |
/// | client | yes  |                           |               |
/// | admin  | yes  | yes                       | yes           |
///
/// A `client` key may cancel only the groups it submitted; the dashboard submits nothing and
/// cannot tell which key submitted a group, so a client token only reads (docs/http.md).
public enum DashboardRole: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case viewer, client, admin

    /// Whether the role may cancel groups and children.
    public var mayCancel: Bool { self == .admin }
    /// Whether the role may drain workers.
    public var mayDrain: Bool { self == .admin }

    public var description: String { rawValue }
}

/// One token of the tokens file: who holds it and what it may do.
public struct AccessToken: Sendable, Hashable {
    public var role: DashboardRole
    /// Shown on the page and in logs (`alice`, `ci`).
    public var name: String
    /// The secret a request carries as `Authorization: Bearer TOKEN`.
    public var secret: String

    public init(role: DashboardRole, name: String, secret: String) {
        self.role = role
        self.name = name
        self.secret = secret
    }
}

/// The dashboard's tokens: the file given with `--http-tokens` (config key `httpTokens`), a
/// line `ROLE NAME TOKEN` per token, `#` comments and blank lines ignored.
public struct AccessTokens: Sendable, Hashable {
    public private(set) var tokens: [AccessToken]

    public init(_ tokens: [AccessToken] = []) {
        self.tokens = tokens
    }

    public var isEmpty: Bool { tokens.isEmpty }

    /// The token whose secret is `secret` (compared in constant time per token).
    public func token(secret: String) -> AccessToken? {
        let given = Array(secret.utf8)
        var found: AccessToken?
        for token in tokens where Self.constantTimeEqual(Array(token.secret.utf8), given) {
            found = token
        }
        return found
    }

    /// Reads a tokens file.
    /// - Throws: ``DashboardSettingsError`` naming the file, and the line at fault.
    public static func load(path: String) throws(DashboardSettingsError) -> AccessTokens {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw DashboardSettingsError("httpTokens: cannot read \(path): \((error as NSError).localizedDescription)")
        }
        return try parse(text, origin: path)
    }

    /// Reads the text of a tokens file; `origin` names it in errors.
    /// - Throws: ``DashboardSettingsError`` naming `origin`, the line and what is wrong.
    public static func parse(_ text: String, origin: String) throws(DashboardSettingsError) -> AccessTokens {
        var tokens: [AccessToken] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            let place = "\(origin):\(index + 1)"
            guard fields.count == 3 else {
                throw DashboardSettingsError("\(place): expected `ROLE NAME TOKEN`, found \(fields.count) fields")
            }
            guard let role = DashboardRole(rawValue: fields[0]) else {
                throw DashboardSettingsError(
                    "\(place): unknown role \"\(fields[0])\" (roles: viewer, client, admin)")
            }
            guard fields[2].count >= 16 else {
                throw DashboardSettingsError("\(place): the token of \"\(fields[1])\" is shorter than 16 characters")
            }
            if tokens.contains(where: { $0.secret == fields[2] }) {
                throw DashboardSettingsError("\(place): the token of \"\(fields[1])\" is listed twice")
            }
            tokens.append(AccessToken(role: role, name: fields[1], secret: fields[2]))
        }
        return AccessTokens(tokens)
    }

    private static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
