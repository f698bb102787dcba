import ArgumentParser
import Foundation

/// One key of a service's settings file: its name (`killGrace`, `specLimits.maxNodes`) and how
/// its value, read from a ``SettingsSource``, is stored into the configuration.
///
/// A service lists its keys once, as `[Setting<Configuration>]`; ``SettingsLoader`` derives the
/// file's known keys, its sections and the environment variables from that list.
struct Setting<Configuration> {
    /// The key, dotted for a key inside a section (`specLimits.maxNodes`).
    let key: String
    let apply: (SettingsSource, inout Configuration) throws(ConfigError) -> Void

    static func string(_ key: String, _ path: WritableKeyPath<Configuration, String>) -> Setting {
        Setting(key: key) { (source, configuration) throws(ConfigError) in
            if let value = try source.string(key) { configuration[keyPath: path] = value }
        }
    }

    static func optionalString(_ key: String, _ path: WritableKeyPath<Configuration, String?>) -> Setting {
        Setting(key: key) { (source, configuration) throws(ConfigError) in
            if let value = try source.string(key) { configuration[keyPath: path] = value }
        }
    }

    static func int(_ key: String, _ path: WritableKeyPath<Configuration, Int>) -> Setting {
        Setting(key: key) { (source, configuration) throws(ConfigError) in
            if let value = try source.int(key) { configuration[keyPath: path] = value }
        }
    }

    static func optionalInt(_ key: String, _ path: WritableKeyPath<Configuration, Int?>) -> Setting {
        Setting(key: key) { (source, configuration) throws(ConfigError) in
            if let value = try source.int(key) { configuration[keyPath: path] = value }
        }
    }

    static func duration(_ key: String, _ path: WritableKeyPath<Configuration, Duration>) -> Setting {
        Setting(key: key) { (source, configuration) throws(ConfigError) in
            if let value = try source.duration(key) { configuration[keyPath: path] = value }
        }
    }

    static func strings(_ key: String, _ path: WritableKeyPath<Configuration, [String]>) -> Setting {
        Setting(key: key) { (source, configuration) throws(ConfigError) in
            if let value = try source.strings(key) { configuration[keyPath: path] = value }
        }
    }

    /// A key read by the service itself, after the others (e.g. key files that combine).
    static func custom(_ key: String) -> Setting {
        Setting(key: key) { _, _ in }
    }
}

/// Loads a service's settings: built-in defaults < `--config` file < environment (`PREFIX_KEY`),
/// then the command's flags, then the configuration's own `validate()`.
enum SettingsLoader {
    /// Defaults < `file` < environment, for the keys of `settings`; `finish` then reads the
    /// ``Setting/custom(_:)`` keys from the same source.
    /// - Throws: ``ConfigError`` naming the file or variable and the key.
    static func load<Configuration>(
        _ defaults: Configuration, settings: [Setting<Configuration>], file: String?, environmentPrefix: String,
        aliases: [String: String] = [:], environment: [String: String] = ProcessInfo.processInfo.environment,
        finish: (SettingsSource, inout Configuration) throws(ConfigError) -> Void = { _, _ in }
    ) throws(ConfigError) -> Configuration {
        var keys: [String] = []
        var sections: [String: [String]] = [:]
        for setting in settings {
            let parts = setting.key.split(separator: ".", maxSplits: 1).map(String.init)
            if !keys.contains(parts[0]) { keys.append(parts[0]) }
            if parts.count == 2 { sections[parts[0], default: []].append(parts[1]) }
        }
        let source = try SettingsSource(
            file: file, keys: keys, environmentPrefix: environmentPrefix, aliases: aliases, sections: sections,
            environment: environment)
        var configuration = defaults
        for setting in settings { try setting.apply(source, &configuration) }
        try finish(source, &configuration)
        return configuration
    }

    /// What a command's `makeConfiguration()` does: load, apply `flags`, validate; every error
    /// becomes a `ValidationError` (exit 64) that names the file, variable, flag or setting.
    static func resolve<Configuration, Failure: Error & CustomStringConvertible>(
        load: () throws(ConfigError) -> Configuration,
        flags: (inout Configuration) throws -> Void,
        validate: (Configuration) throws(Failure) -> Void
    ) throws -> Configuration {
        var configuration: Configuration
        do {
            configuration = try load()
        } catch {
            throw ValidationError(error.description)
        }
        try flags(&configuration)
        do {
            try validate(configuration)
        } catch {
            throw ValidationError(error.description)
        }
        return configuration
    }
}
