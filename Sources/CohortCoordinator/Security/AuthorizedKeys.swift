import Foundation
import Synchronization
import ZeroMQ

/// The keys a CURVE coordinator admits, each with its role: every `*.pub` file of the
/// authorised-keys directory (format in ``KeyFiles``).
///
/// A plain value; ``KeyRing`` shares the current one between the ZAP handler's thread and the
/// loop.
struct AuthorizedKeys: Sendable, Equatable {
    /// By Z85 public key.
    private(set) var principals: [String: Principal] = [:]

    var count: Int { principals.count }

    subscript(key: String) -> Principal? { principals[key] }

    /// Reads every `*.pub` file of `directory` (hidden files and other names are ignored).
    ///
    /// - Parameter strict: `true` (at start): any bad file or line is an error. `false` (a
    ///   reload): bad lines are skipped and returned as `problems`, so a typo in one file
    ///   neither keeps a removed key admitted nor locks everyone else out.
    /// - Throws: ``KeyFileError`` for an unreadable directory, or (strict) the first bad entry.
    static func load(directory: String, strict: Bool) throws(KeyFileError) -> (
        keys: AuthorizedKeys, problems: [KeyFileError]
    ) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw KeyFileError(
                origin: directory,
                message: "cannot read the authorised-keys directory: \((error as NSError).localizedDescription)")
        }
        var keys = AuthorizedKeys()
        var problems: [KeyFileError] = []
        for name in names.sorted() where name.hasSuffix(".pub") && !name.hasPrefix(".") {
            let path = (directory as NSString).appendingPathComponent(name)
            do throws(KeyFileError) {
                for entry in try KeyFiles.loadPublic(path) {
                    try keys.add(entry)
                }
            } catch {
                if strict { throw error }
                problems.append(error)
            }
        }
        return (keys, problems)
    }

    /// These keys with `extra` added (in-memory keys win over the directory's entry for the
    /// same key).
    func adding(_ extra: [CurveServerSettings.InMemoryKey]) -> AuthorizedKeys {
        var keys = self
        for key in extra {
            let z85 = key.publicKey.z85
            keys.principals[z85] = Principal(key: z85, name: key.name, role: key.role)
        }
        return keys
    }

    private mutating func add(_ entry: KeyEntry) throws(KeyFileError) {
        guard let role = Role(rawValue: entry.role) else {
            throw KeyFileError(
                origin: entry.origin,
                message:
                    "a \(entry.role) key cannot be authorised (roles: worker, client, admin); keep it out of this directory"
            )
        }
        let z85 = entry.key.z85
        if let existing = principals[z85], existing.role != role {
            throw KeyFileError(
                origin: entry.origin,
                message: "key \"\(entry.name)\" is also listed with role \(existing.role) as \"\(existing.name)\"")
        }
        principals[z85] = Principal(key: z85, name: entry.name, role: role)
    }
}

/// The current ``AuthorizedKeys``, shared by the ZAP handler (which admits connections) and
/// the coordinator's loop (which checks every message's key against it).
///
/// Thread-safety: `Sendable`; a `Mutex` guards the value, held only to copy or replace it.
final class KeyRing: Sendable {
    private let current: Mutex<AuthorizedKeys>

    init(_ keys: AuthorizedKeys) { current = Mutex(keys) }

    var keys: AuthorizedKeys { current.withLock { $0 } }

    func replace(with keys: AuthorizedKeys) { current.withLock { $0 = keys } }

    /// The ZAP decision for a handshake: admitted under its Z85 key as user id, or refused.
    /// With `admitsUnknownKeys`, a key that is not authorised is admitted too, as a principal
    /// with no permissions whose requests go through only with a valid attempt token
    /// (docs/security.md, "Attempt tokens").
    func decide(_ request: ZAPRequest, admitsUnknownKeys: Bool) -> ZAPDecision {
        guard let key = request.curvePublicKeyZ85 else { return .deny(reason: "CURVE required") }
        if admitsUnknownKeys { return .allow(userID: key) }
        return current.withLock { $0[key] } != nil ? .allow(userID: key) : .deny(reason: "unknown key")
    }
}
