import Foundation
import Logging
import ZeroMQ

/// A CURVE coordinator's security on its loop thread: the ZAP handler (on a thread of its own,
/// in the loop's context, bound before the router), the shared ``KeyRing`` it decides with,
/// and the loop's own copy of the authorised keys that every message is checked against.
///
/// Not thread-safe: owned by the loop thread, like the loop.
final class LoopSecurity {
    let settings: CurveServerSettings
    private let ring: KeyRing
    let handler: ZAPHandler
    /// The loop's copy of ``ring``'s keys: checked per message without taking a lock.
    private(set) var keys: AuthorizedKeys

    /// Loads the authorised keys (strictly: a bad file stops the start) and binds the ZAP
    /// handler in `context`. Call before the router binds; the loop serves the handler on a
    /// thread of its own for as long as it runs (``handler``'s `runOnCurrentThread()`).
    /// - Throws: ``KeyFileError`` for the directory or a file in it, `ZeroMQError` for the handler.
    init(settings: CurveServerSettings, context: Context) throws {
        self.settings = settings
        keys = try AuthorizedKeys.load(directory: settings.authorizedKeysDirectory, strict: true).keys.adding(
            settings.inMemoryKeys)
        let ring = KeyRing(keys)
        self.ring = ring
        let admitsUnknownKeys = settings.admitsAttemptTokenKeys
        handler = try ZAPHandler(context: context) { ring.decide($0, admitsUnknownKeys: admitsUnknownKeys) }
    }

    /// Makes `router` a CURVE server whose handshakes go through the handler (fails closed).
    func secure(_ router: Socket) throws(ZeroMQError) {
        try router.makeCurveServer(secretKey: settings.keyPair.secretKey, zapDomain: "cohort")
    }

    /// The principal a message's `User-Id` (its Z85 key, as the handler admitted it) stands for
    /// now; `nil` if the key is no longer authorised.
    func principal(userID: String?) -> Principal? {
        guard let userID else { return nil }
        return keys[userID]
    }

    /// Keys that were authorised at some point and are no longer: their sessions are refused
    /// as revoked, never admitted as keys without authorisation (attempt tokens).
    private var revoked: Set<String> = []

    /// Whether `key` was among the authorised keys before a reload removed it.
    func wasAuthorised(_ key: String) -> Bool { revoked.contains(key) }

    /// Re-reads the directory; bad lines are skipped and logged. Returns the log metadata.
    func reload(logger: Logger) {
        let loaded: AuthorizedKeys
        do {
            let (keys, problems) = try AuthorizedKeys.load(directory: settings.authorizedKeysDirectory, strict: false)
            for problem in problems {
                logger.error("skipped an authorised-keys entry", metadata: ["error": "\(problem)"])
            }
            loaded = keys.adding(settings.inMemoryKeys)
        } catch {
            // An unreadable directory admits nobody: failing closed.
            logger.error(
                "cannot read the authorised keys; admitting no key until the next reload",
                metadata: ["error": "\(error)"])
            loaded = AuthorizedKeys().adding(settings.inMemoryKeys)
        }
        let removedKeys = keys.principals.keys.filter { loaded[$0] == nil }
        let removed = removedKeys.count
        revoked.formUnion(removedKeys)
        revoked.subtract(loaded.principals.keys)
        keys = loaded
        ring.replace(with: loaded)
        logger.notice(
            "authorised keys reloaded",
            metadata: [
                "keys.count": "\(loaded.count)", "keys.removed": "\(removed)",
                "keys.directory": "\(settings.authorizedKeysDirectory)",
            ])
    }

}

extension CoordinatorConfiguration {
    /// The warning for a coordinator that other machines can reach without CURVE (nil when
    /// it listens on loopback only, or has CURVE keys): anyone who reaches it can do anything.
    public var exposureWarning: String? {
        guard curve == nil, listensBeyondLoopback else { return nil }
        return "the coordinator listens on \(endpoint) WITHOUT CURVE: anyone who can reach it can register workers, "
            + "submit, cancel and read every group. Set secretKeyFile and authorizedKeysDir (docs/security.md)."
    }

    /// Whether the endpoint is reachable from other machines: TCP on anything but loopback.
    var listensBeyondLoopback: Bool {
        guard endpoint.hasPrefix("tcp://") else { return false }
        var host = String(endpoint.dropFirst("tcp://".count))
        if let colon = host.lastIndex(of: ":") { host = String(host[..<colon]) }
        host = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if let semicolon = host.lastIndex(of: ";") { host = String(host[host.index(after: semicolon)...]) }
        return !(host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "lo")
    }
}
