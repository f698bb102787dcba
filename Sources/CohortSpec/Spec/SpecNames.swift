/// The rules for names in a spec: child names, exclusive categories, worker labels.
public enum SpecNames {
    /// Why `name` cannot name a child or group, or `nil` if it can: non-empty, no `/` (the
    /// path separator), no control characters, no leading or trailing spaces, at most
    /// `maxLength` characters.
    public static func problem(withChildName name: String, maxLength: Int = SpecLimits.default.maxNameLength)
        -> String?
    {
        // Printable ASCII without spaces or `/` (nearly every name): valid if short enough.
        if !name.isEmpty, name.utf8.count <= maxLength, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x2F }) {
            return nil
        }
        if name.isEmpty { return "a name cannot be empty" }
        if name.contains("/") { return "a name cannot contain \"/\" (it separates the parts of a child's path)" }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "a name cannot contain control characters"
        }
        if name.first!.isWhitespace || name.last!.isWhitespace {
            return "a name cannot start or end with a space"
        }
        if name.count > maxLength { return "a name is limited to \(maxLength) characters (limit maxNameLength)" }
        return nil
    }

    /// Why `category` cannot be an exclusive category, or `nil`: 1 to `maxLength` characters,
    /// ASCII letters, digits, `-`, `_`, `.`, starting with a letter or digit. Categories are
    /// compared exactly as written.
    public static func problem(withCategory category: String, maxLength: Int = SpecLimits.default.maxNameLength)
        -> String?
    {
        token(category, what: "an exclusive category", extra: "-_.", maxLength: maxLength)
    }

    /// Why `label` cannot be a worker label, or `nil`: like categories, and `:`, `=` and `/` are
    /// also allowed (`arch=arm64`, `zone:eu`); no commas or spaces, which `--labels` splits on.
    public static func problem(withLabel label: String, maxLength: Int = SpecLimits.default.maxNameLength) -> String? {
        token(label, what: "a label", extra: "-_.:=/", maxLength: maxLength)
    }

    /// The environment variable that carries a category's fencing token to a `shell` procedure:
    /// `COHORT_FENCE_` and the category upper-cased, each character other than A-Z and 0-9 as `_`.
    public static func fenceVariable(for category: String) -> String {
        "COHORT_FENCE_"
            + String(
                category.uppercased().unicodeScalars.map { scalar -> Character in
                    let isAlphanumeric = (65...90).contains(scalar.value) || (48...57).contains(scalar.value)
                    return isAlphanumeric ? Character(scalar) : "_"
                })
    }

    private static func token(_ text: String, what: String, extra: String, maxLength: Int) -> String? {
        if text.isEmpty { return "\(what) cannot be empty" }
        if text.count > maxLength { return "\(what) is limited to \(maxLength) characters (limit maxNameLength)" }
        func isAlphanumeric(_ c: Character) -> Bool { c.isASCII && (c.isLetter || c.isNumber) }
        if let bad = text.first(where: { !isAlphanumeric($0) && !extra.contains($0) }) {
            let allowed = extra.map { "\"\($0)\"" }.joined(separator: ", ")
            return "\(what) may contain only ASCII letters, digits and \(allowed); \"\(text)\" has \"\(bad)\""
        }
        if !isAlphanumeric(text.first!) { return "\(what) must start with a letter or digit" }
        return nil
    }
}
