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
    /// - Throws: ``ConfigError`` naming the flag and the file.
    func clientKeys(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError)
        -> CurveClientKeys?
    {
        do throws(KeyFileError) {
            return try CurveClientKeys.load(key: key, serverKey: serverKey, environment: environment)
        } catch {
            throw ConfigError(error)
        }
    }
}
