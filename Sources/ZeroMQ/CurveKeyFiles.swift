import Foundation

/// One line of a public key file: a key, its role and its name.
public struct KeyEntry: Hashable, Sendable {
    /// The role written in the file; `coordinator` for a coordinator's own key (which is never
    /// authorised as a peer).
    public var role: String
    public var key: CurvePublicKey
    public var name: String
    /// `FILE:LINE`, for errors and logs.
    public var origin: String

    public init(role: String, key: CurvePublicKey, name: String, origin: String) {
        self.role = role
        self.key = key
        self.name = name
        self.origin = origin
    }
}

/// A key file that cannot be used, naming the file (and line) and what is wrong.
public struct KeyFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `FILE` or `FILE:LINE`.
    public var origin: String
    public var message: String

    public init(origin: String, message: String) {
        self.origin = origin
        self.message = message
    }

    public var description: String { "\(origin): \(message)" }
}

/// The text formats of `cohort keygen`'s files (docs/security.md, "Key files"), read by the
/// coordinator, the `cohort` CLI and any program built on CohortWorker or CohortClient (through
/// ``CurveClientKeys/load(keyFile:serverKey:keyName:serverKeyName:)``), so there is one parser.
///
/// A **public key file** (`NAME.pub`) has one entry per line, `ROLE KEY [NAME]`: the role
/// (`worker`, `client`, `admin`, or `coordinator` for a coordinator's key), the 40-character
/// Z85 public key and a name (default: the file's base name). Blank lines and lines starting
/// with `#` are ignored. The coordinator's authorised-keys directory holds such files.
///
/// A **secret key file** (`NAME.key`, mode 0600) has a line `secret KEY` and, for reference, a
/// line `public KEY` (checked against the secret one when present); `#` lines are comments.
public enum KeyFiles {
    /// The roles a public key file may name.
    public static let roles = ["worker", "client", "admin", "coordinator"]

    /// The entries of a public key file's text; `file` names it in errors and is the default name.
    /// - Throws: ``KeyFileError`` naming the line at fault.
    public static func parsePublic(_ text: String, file: String) throws(KeyFileError) -> [KeyEntry] {
        let defaultName = ((file as NSString).lastPathComponent as NSString).deletingPathExtension
        var entries: [KeyEntry] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let origin = "\(file):\(index + 1)"
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard (2...3).contains(words.count) else {
                throw KeyFileError(origin: origin, message: "expected `ROLE KEY [NAME]`, got \"\(line)\"")
            }
            guard roles.contains(words[0]) else {
                throw KeyFileError(
                    origin: origin, message: "unknown role \"\(words[0])\" (one of \(roles.joined(separator: ", ")))")
            }
            entries.append(
                KeyEntry(
                    role: words[0], key: try publicKey(words[1], origin: origin),
                    name: words.count == 3 ? words[2] : defaultName,
                    origin: origin))
        }
        guard !entries.isEmpty else {
            throw KeyFileError(origin: file, message: "no key in the file (expected `ROLE KEY [NAME]`)")
        }
        return entries
    }

    /// The secret key of a secret key file's text.
    /// - Throws: ``KeyFileError`` when there is no `secret` line, a key is malformed, or the
    ///   `public` line does not belong to the secret key.
    public static func parseSecret(_ text: String, file: String) throws(KeyFileError) -> CurveKeyPair {
        var secret: CurveSecretKey?
        var stated: CurvePublicKey?
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let origin = "\(file):\(index + 1)"
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            switch (words.first, words.count) {
            case ("secret", 2):
                do {
                    secret = try CurveSecretKey(z85: words[1])
                } catch {
                    throw KeyFileError(origin: origin, message: "the secret key is not 40 characters of Z85")
                }
            case ("public", 2):
                stated = try publicKey(words[1], origin: origin)
            case (let word?, _) where roles.contains(word):
                throw KeyFileError(
                    origin: origin, message: "this is a public key file (ROLE KEY NAME); give the secret .key file")
            default:
                throw KeyFileError(origin: origin, message: "expected `secret KEY` or `public KEY`")
            }
        }
        guard let secret else {
            throw KeyFileError(
                origin: file, message: "no `secret KEY` line: is this a public key file? (give the .key file)")
        }
        let pair: CurveKeyPair
        do {
            pair = try CurveKeyPair(secretKey: secret)
        } catch {
            throw KeyFileError(origin: file, message: "cannot derive the public key: \(error)")
        }
        if let stated, stated != pair.publicKey {
            throw KeyFileError(origin: file, message: "the `public` line does not belong to the secret key")
        }
        return pair
    }

    /// A key given as 40 Z85 characters, or as the path of a public key file (its first entry).
    /// - Throws: ``KeyFileError`` for an unreadable file or a malformed key.
    public static func publicKey(textOrFile value: String) throws(KeyFileError) -> CurvePublicKey {
        if value.count == 40, let key = try? CurvePublicKey(z85: value) { return key }
        return try loadPublic(value)[0].key
    }

    /// The entries of the public key file at `path`.
    /// - Throws: ``KeyFileError`` for an unreadable file or a line at fault.
    public static func loadPublic(_ path: String) throws(KeyFileError) -> [KeyEntry] {
        try parsePublic(try read(path), file: path)
    }

    /// The key pair of the secret key file at `path`, which must not be readable by others.
    /// - Throws: ``KeyFileError`` for an unreadable, group- or world-readable, or malformed file.
    public static func loadSecret(_ path: String) throws(KeyFileError) -> CurveKeyPair {
        let text = try read(path)
        if let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber,
            mode.intValue & 0o077 != 0
        {
            throw KeyFileError(
                origin: path,
                message:
                    "the secret key file is readable by others (mode \(String(mode.intValue & 0o777, radix: 8))); run chmod 600 \(path)"
            )
        }
        return try parseSecret(text, file: path)
    }

    /// A public key file's text for one key.
    public static func renderPublic(role: String, key: CurvePublicKey, name: String, created: String) -> String {
        """
        # Cohort CURVE public key "\(name)", role \(role), written by `cohort keygen` at \(created).
        # Not secret. To authorise it, copy this file into the coordinator's authorised-keys
        # directory (authorizedKeysDir in config/coordinator.yaml) and send the coordinator SIGHUP.
        # Format: ROLE KEY NAME (docs/security.md).
        \(role) \(key.z85) \(name)

        """
    }

    /// A secret key file's text. Write it with mode 0600.
    public static func renderSecret(role: String, pair: CurveKeyPair, name: String, created: String) -> String {
        """
        # Cohort CURVE secret key "\(name)", role \(role), written by `cohort keygen` at \(created).
        # SECRET: whoever has this file can act as "\(name)". Keep it mode 0600, never copy it
        # to the coordinator; give its .pub file instead.
        public \(pair.publicKey.z85)
        secret \(pair.secretKey.z85)

        """
    }

    static func read(_ path: String) throws(KeyFileError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw KeyFileError(origin: path, message: "cannot read the file")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw KeyFileError(origin: path, message: "the file is not UTF-8 text")
        }
        return text
    }

    private static func publicKey(_ text: String, origin: String) throws(KeyFileError) -> CurvePublicKey {
        do {
            return try CurvePublicKey(z85: text)
        } catch {
            throw KeyFileError(origin: origin, message: "\"\(text)\" is not a public key (40 characters of Z85)")
        }
    }
}

extension CurveClientKeys {
    /// The environment variables a worker's or client's keys are read from when no flag names
    /// them (the `cohort` CLI and the examples honour them): the secret key file, and the
    /// coordinator's public key (its `.pub` file or 40 Z85 characters).
    public static let keyFileVariable = "COHORT_KEY_FILE"
    public static let serverKeyVariable = "COHORT_SERVER_KEY"

    /// A worker's or client's CURVE keys: the key pair of its secret key file (`cohort keygen`)
    /// and the coordinator's public key (its `.pub` file, or the 40-character key). Both or
    /// neither; nil for neither (plaintext).
    ///
    /// `keyName` and `serverKeyName` say where each value came from (`--key`, `keyFile`, …),
    /// for errors.
    /// - Throws: ``KeyFileError`` naming the setting and the file: one given without the other,
    ///   an unreadable or malformed file, a secret key file readable by others.
    public static func load(
        keyFile: String?, serverKey: String?, keyName: String = "--key", serverKeyName: String = "--server-key"
    ) throws(KeyFileError) -> CurveClientKeys? {
        switch (keyFile, serverKey) {
        case (nil, nil):
            return nil
        case (nil, _?):
            throw KeyFileError(
                origin: serverKeyName, message: "needs \(keyName) too: the key pair this peer uses with CURVE")
        case (_?, nil):
            throw KeyFileError(origin: keyName, message: "needs \(serverKeyName) too: the coordinator's public key")
        case (let keyFile?, let serverKey?):
            let pair: CurveKeyPair
            do throws(KeyFileError) {
                pair = try KeyFiles.loadSecret(keyFile)
            } catch {
                throw KeyFileError(origin: keyName, message: error.description)
            }
            do throws(KeyFileError) {
                return CurveClientKeys(keyPair: pair, serverKey: try KeyFiles.publicKey(textOrFile: serverKey))
            } catch {
                throw KeyFileError(origin: serverKeyName, message: error.description)
            }
        }
    }

    /// ``load(keyFile:serverKey:keyName:serverKeyName:)`` with the flags `--key` and
    /// `--server-key` when given, else ``keyFileVariable`` and ``serverKeyVariable`` from
    /// `environment` (an empty variable counts as unset).
    public static func load(
        key: String?, serverKey: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeyFileError) -> CurveClientKeys? {
        func variable(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        return try load(
            keyFile: key ?? variable(keyFileVariable), serverKey: serverKey ?? variable(serverKeyVariable),
            keyName: key != nil ? "--key" : keyFileVariable,
            serverKeyName: serverKey != nil ? "--server-key" : serverKeyVariable)
    }
}
