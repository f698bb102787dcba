import ArgumentParser
import Foundation
import ZeroMQ

/// `--key` and `--server-key`: the CURVE keys a worker or a client command connects with.
///
/// Precedence: the flags, then the settings file (workers) or the environment
/// (`COHORT_KEY_FILE`, `COHORT_SERVER_KEY`). Both or neither: neither is plaintext.
struct KeyOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "This peer's secret key file, from `cohort keygen` (env COHORT_KEY_FILE); turns CURVE on.",
            valueName: "file"))
    var key: String?

    @Option(
        name: .customLong("server-key"),
        help: ArgumentHelp(
            "The coordinator's public key: its .pub file or the 40-character key (env COHORT_SERVER_KEY).",
            valueName: "file-or-key"))
    var serverKey: String?

    /// A client's keys, from the flags or the environment.
    ///
    /// With an attempt token, the coordinator's public key and no key file (a running child's
    /// `cohort` command: the worker sets `COHORT_SERVER_KEY` and `COHORT_ATTEMPT_TOKEN`), a
    /// fresh key pair, made for this connection only: the coordinator admits an unauthorised
    /// key only for requests its token lets through (docs/security.md, "Attempt tokens").
    /// - Throws: ``ConfigError`` naming the flag and the file.
    func clientKeys(
        attemptToken: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> CurveClientKeys? {
        func variable(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        do throws(KeyFileError) {
            if attemptToken != nil, key == nil, variable(CurveClientKeys.keyFileVariable) == nil,
                let server = serverKey ?? variable(CurveClientKeys.serverKeyVariable)
            {
                let serverKey = try KeyFiles.publicKey(textOrFile: server)
                do {
                    return CurveClientKeys(keyPair: try CurveKeyPair.generate(), serverKey: serverKey)
                } catch {
                    throw KeyFileError(
                        origin: "--attempt-token", message: "cannot make an ephemeral key pair: \(error)")
                }
            }
            return try CurveClientKeys.load(key: key, serverKey: serverKey, environment: environment)
        } catch {
            throw ConfigError(error)
        }
    }
}
