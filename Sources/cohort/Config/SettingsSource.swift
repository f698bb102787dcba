import CohortSpec
import Foundation
import Yams

/// The settings of one service, read from a YAML file (`--config`) and overlaid by environment
/// variables: `defaults < file < environment` (flags are applied after, by the command).
///
/// Keys are the configuration's property names (`killGrace`); the environment variable of a
/// key is the prefix and the key in upper snake case (`COHORT_WORKER_KILL_GRACE`). A key the
/// service does not know is an error that names it.
struct SettingsSource {
    /// A value and where it came from.
    private enum Value {
        case node(Node, file: String)
        case text(String, variable: String)
    }

    private var values: [String: Value] = [:]

    /// Reads `file` (if given) and the environment variables of `keys`.
    /// - Parameters:
    ///   - keys: every key the service knows, in the order the file documents them.
    ///   - environmentPrefix: e.g. `COHORT_WORKER_`.
    ///   - aliases: extra environment variables for a key, weaker than its own variable
    ///     (e.g. `COHORT_COORDINATOR` for the worker's `coordinator`).
    ///   - sections: keys whose value is a mapping of its own, with their sub-keys; a sub-key
    ///     is read as `section.subKey` (environment: `PREFIX_SECTION_SUB_KEY`).
    /// - Throws: ``ConfigError`` for an unreadable file, a YAML error, a document that is not a
    ///   mapping, or an unknown key.
    init(
        file: String?, keys: [String], environmentPrefix: String, aliases: [String: String] = [:],
        sections: [String: [String]] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) {
        if let file { try read(file, keys: keys, sections: sections) }
        let flatKeys = keys.flatMap { key in sections[key].map { $0.map { "\(key).\($0)" } } ?? [key] }
        for key in flatKeys {
            let variable =
                environmentPrefix + key.split(separator: ".").map { Self.upperSnake(String($0)) }.joined(separator: "_")
            if let text = environment[variable], !text.isEmpty {
                values[key] = .text(text, variable: variable)
            } else if let alias = aliases[key], let text = environment[alias], !text.isEmpty {
                values[key] = .text(text, variable: alias)
            }
        }
    }

    private mutating func read(_ file: String, keys: [String], sections: [String: [String]]) throws(ConfigError) {
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8)
        else {
            throw ConfigError(origin: file, key: "", message: "cannot read the file")
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw ConfigError(origin: file, key: "", message: "not valid YAML: \(error)")
        }
        guard let root else { return }  // an empty file (or only comments): every default
        try read(root, file: file, keys: keys, sections: sections, prefix: "")
    }

    private mutating func read(_ node: Node, file: String, keys: [String], sections: [String: [String]], prefix: String)
        throws(ConfigError)
    {
        guard let mapping = node.mapping else {
            throw ConfigError(
                origin: file, key: prefix.isEmpty ? "" : String(prefix.dropLast()),
                message: "expected a mapping of settings (key: value)")
        }
        for (keyNode, value) in mapping {
            guard let key = keyNode.string else {
                throw ConfigError(origin: file, key: "", message: "a key is not a string")
            }
            guard keys.contains(key) else {
                var message = "unknown key \"\(prefix)\(key)\""
                if let close = Self.closest(to: key, in: keys) { message += "; did you mean \"\(prefix)\(close)\"?" }
                message +=
                    " (known keys\(prefix.isEmpty ? "" : " in \(prefix.dropLast())"): \(keys.joined(separator: ", ")))"
                throw ConfigError(origin: file, key: "", message: message)
            }
            if value.null != nil { continue }  // `key:` with no value keeps the default
            if let subKeys = sections[key] {
                try read(value, file: file, keys: subKeys, sections: [:], prefix: "\(prefix)\(key).")
            } else {
                values[prefix + key] = .node(value, file: file)
            }
        }
    }

    // MARK: - Typed values

    func string(_ key: String) throws(ConfigError) -> String? {
        switch values[key] {
        case nil: return nil
        case .text(let text, _): return text
        case .node(let node, let file):
            guard let scalar = node.scalar else {
                throw ConfigError(origin: file, key: key, message: "expected a string")
            }
            return scalar.string
        }
    }

    func int(_ key: String) throws(ConfigError) -> Int? {
        guard let text = try string(key) else { return nil }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw ConfigError(origin: origin(key), key: key, message: "expected a whole number, got \"\(text)\"")
        }
        return value
    }

    func bool(_ key: String) throws(ConfigError) -> Bool? {
        guard let text = try string(key) else { return nil }
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw ConfigError(origin: origin(key), key: key, message: "expected true or false, got \"\(text)\"")
        }
    }

    /// A duration with a unit: `500ms`, `5s`, `1m30s`.
    func duration(_ key: String) throws(ConfigError) -> Duration? {
        guard let text = try string(key) else { return nil }
        do {
            return try Duration(specString: text.trimmingCharacters(in: .whitespaces))
        } catch {
            throw ConfigError(origin: origin(key), key: key, message: error.description)
        }
    }

    /// A YAML list of strings, or (from the environment) a comma-separated list.
    func strings(_ key: String) throws(ConfigError) -> [String]? {
        switch values[key] {
        case nil: return nil
        case .text(let text, _): return Self.commaList(text)
        case .node(let node, let file):
            if let sequence = node.sequence {
                var result: [String] = []
                for item in sequence {
                    guard let scalar = item.scalar else {
                        throw ConfigError(origin: file, key: key, message: "expected a list of strings")
                    }
                    result.append(scalar.string)
                }
                return result
            }
            if let scalar = node.scalar { return Self.commaList(scalar.string) }
            throw ConfigError(origin: file, key: key, message: "expected a list of strings")
        }
    }

    /// A YAML mapping of names to whole numbers (`api-quota: 4`), or (from the environment) a
    /// comma-separated list of `NAME=N`.
    func countMapping(_ key: String) throws(ConfigError) -> [String: Int]? {
        var pairs: [(String, String)] = []
        switch values[key] {
        case nil: return nil
        case .text(let text, _):
            for item in Self.commaList(text) {
                let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2 else {
                    throw ConfigError(origin: origin(key), key: key, message: "expected NAME=N, got \"\(item)\"")
                }
                pairs.append((parts[0], parts[1]))
            }
        case .node(let node, let file):
            guard let mapping = node.mapping else {
                throw ConfigError(
                    origin: file, key: key, message: "expected a mapping of names to numbers (api-quota: 4)")
            }
            for (name, value) in mapping {
                guard let name = name.string, let scalar = value.scalar else {
                    throw ConfigError(
                        origin: file, key: key, message: "expected a mapping of names to numbers (api-quota: 4)")
                }
                pairs.append((name, scalar.string))
            }
        }
        var result: [String: Int] = [:]
        for (name, text) in pairs {
            guard let number = Int(text) else {
                throw ConfigError(
                    origin: origin(key), key: "\(key).\(name)", message: "expected a whole number, got \"\(text)\"")
            }
            result[name] = number
        }
        return result
    }

    /// Where the key's value came from: the file or the environment variable.
    func origin(_ key: String) -> String {
        switch values[key] {
        case .node(_, let file): file
        case .text(_, let variable): variable
        case nil: "defaults"
        }
    }

    // MARK: - Helpers

    static func commaList(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// `killGrace` → `KILL_GRACE`.
    static func upperSnake(_ key: String) -> String {
        var result = ""
        for character in key {
            if character.isUppercase, !result.isEmpty { result.append("_") }
            result += character.uppercased()
        }
        return result
    }

    /// The key nearest to `word` by edit distance, if it is close enough to be a typo.
    static func closest(to word: String, in keys: [String]) -> String? {
        let lowered = word.lowercased()
        let scored = keys.map { key in (key, editDistance(lowered, key.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, word.count / 3) else { return nil }
        return best.0
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
