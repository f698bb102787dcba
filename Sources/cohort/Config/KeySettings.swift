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
        switch (keyFile, serverKey) {
        case (nil, nil):
            return nil
        case (nil, _?):
            throw ConfigError(origin: serverKeyName, key: "", message: "needs \(keyName) too: the key pair this peer uses with CURVE")
        case (_?, nil):
            throw ConfigError(origin: keyName, key: "", message: "needs \(serverKeyName) too: the coordinator's public key")
        case (let keyFile?, let serverKey?):
            do throws(KeyFileError) {
                return CurveClientKeys(keyPair: try KeyFiles.loadSecret(keyFile), serverKey: try KeyFiles.publicKey(textOrFile: serverKey))
            } catch {
                throw ConfigError(origin: "\(keyName)/\(serverKeyName)", key: "", message: error.description)
            }
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
            throw ConfigError(origin: "authorizedKeysDir", key: "", message: "needs secretKeyFile too: the coordinator's own key (cohort keygen --role coordinator)")
        case (_?, nil):
            throw ConfigError(origin: "secretKeyFile", key: "", message: "needs authorizedKeysDir too: the directory of the public keys it admits")
        case (let file?, let directory?):
            do throws(KeyFileError) {
                return CurveServerSettings(keyPair: try KeyFiles.loadSecret(file), authorizedKeysDirectory: directory)
            } catch {
                throw ConfigError(origin: "secretKeyFile", key: "", message: error.description)
            }
        }
    }
}
