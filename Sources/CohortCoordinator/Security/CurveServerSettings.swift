import ZeroMQ

/// A CURVE coordinator's keys: its own secret key and the directory of authorised public keys.
///
/// With these, every connection is encrypted and a ZAP handler admits only the keys of the
/// directory (re-read by ``Coordinator/reloadAuthorizedKeys()``, e.g. on SIGHUP), each with the
/// role its entry names (docs/security.md).
public struct CurveServerSettings: Sendable, Equatable {
    /// The coordinator's key pair (`cohort keygen --role coordinator`); peers are given its
    /// public key.
    public var keyPair: CurveKeyPair
    /// The directory whose `*.pub` files list the authorised keys, `ROLE KEY NAME` per line.
    public var authorizedKeysDirectory: String
    /// Keys authorised in memory only, beside the directory's, and kept across reloads: e.g.
    /// the ephemeral admin key of the dashboard's in-process client (docs/http.md). Never
    /// written anywhere.
    public var inMemoryKeys: [InMemoryKey]
    /// Whether CURVE handshakes of keys that are not authorised succeed (default `true`), so
    /// that a running child's `cohort` commands, which connect with an ephemeral key and its
    /// attempt token, get through: such a key may do nothing by itself, and each of its
    /// requests is refused unless it carries a valid attempt token (docs/security.md,
    /// "Attempt tokens"). `false`: unknown keys fail the handshake, and only authorised keys
    /// can use attempt tokens.
    public var admitsAttemptTokenKeys: Bool

    public init(
        keyPair: CurveKeyPair, authorizedKeysDirectory: String, inMemoryKeys: [InMemoryKey] = [],
        admitsAttemptTokenKeys: Bool = true
    ) {
        self.admitsAttemptTokenKeys = admitsAttemptTokenKeys
        self.keyPair = keyPair
        self.authorizedKeysDirectory = authorizedKeysDirectory
        self.inMemoryKeys = inMemoryKeys
    }

    /// A public key authorised in memory only, with its role and the name logs and refusals use.
    public struct InMemoryKey: Sendable, Equatable {
        public var publicKey: CurvePublicKey
        public var name: String
        public var role: Role

        public init(publicKey: CurvePublicKey, name: String, role: Role) {
            self.publicKey = publicKey
            self.name = name
            self.role = role
        }
    }

    /// Reads the authorised-keys directory as the coordinator will at start; returns how many
    /// keys it authorises.
    /// - Throws: ``KeyFileError`` naming the directory, or the file and line at fault.
    public func checkAuthorizedKeys() throws(KeyFileError) -> Int {
        try AuthorizedKeys.load(directory: authorizedKeysDirectory, strict: true).keys.count
    }
}
