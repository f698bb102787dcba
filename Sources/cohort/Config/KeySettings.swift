import CohortCoordinator
import ZeroMQ

/// CURVE keys named by settings, read from their files (formats: docs/security.md).
enum KeySettings {
    /// A worker's or client's keys: its secret key file and the coordinator's public key (a
    /// `.pub` file or 40 Z85 characters). Both or neither; neither is plaintext.
    /// - Throws: ``ConfigError`` naming the setting (`keyFile`, `serverKey`) and the file.
    static func client(keyFile: String?, serverKey: String?, keyName: String, serverKeyName: String) throws(ConfigError)
        -> CurveClientKeys?
    {
        do throws(KeyFileError) {
            return try CurveClientKeys.load(
                keyFile: keyFile, serverKey: serverKey, keyName: keyName, serverKeyName: serverKeyName)
        } catch {
            throw ConfigError(error)
        }
    }

    /// A coordinator's keys: its secret key file and the authorised-keys directory. Both or
    /// neither; neither is plaintext.
    /// - Throws: ``ConfigError`` naming the setting and the file.
    static func server(secretKeyFile: String?, authorizedKeysDir: String?) throws(ConfigError) -> CurveServerSettings? {
        switch (secretKeyFile, authorizedKeysDir) {
        case (nil, nil):
            return nil
        case (nil, _?):
            throw ConfigError(
                origin: "authorizedKeysDir", key: "",
                message: "needs secretKeyFile too: the coordinator's own key (cohort keygen --role coordinator)")
        case (_?, nil):
            throw ConfigError(
                origin: "secretKeyFile", key: "",
                message: "needs authorizedKeysDir too: the directory of the public keys it admits")
        case (let file?, let directory?):
            do throws(KeyFileError) {
                return CurveServerSettings(keyPair: try KeyFiles.loadSecret(file), authorizedKeysDirectory: directory)
            } catch {
                throw ConfigError(origin: "secretKeyFile", key: "", message: error.description)
            }
        }
    }
}

extension ConfigError {
    /// A key file that cannot be used, named as the setting it came from.
    init(_ error: KeyFileError) {
        self.init(origin: error.origin, key: "", message: error.message)
    }
}
