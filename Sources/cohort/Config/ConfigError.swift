/// A setting that could not be read: from a config file, the environment or a flag.
///
/// `description` names where the value came from and the key, e.g.
/// `config/worker.yaml: unknown key "slot"; did you mean "slots"?`.
struct ConfigError: Error, CustomStringConvertible {
    /// The file or environment variable the value came from.
    var origin: String
    /// The setting's key, empty for the file as a whole.
    var key: String
    var message: String

    var description: String {
        key.isEmpty ? "\(origin): \(message)" : "\(origin): \(key): \(message)"
    }
}
