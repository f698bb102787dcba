/// The text format of a spec. JSON is read as YAML (it is a subset), but the format is kept so
/// messages use its words (`object`/`array` rather than `mapping`/`list`, "json syntax error").
public enum SpecFormat: String, Sendable, Hashable, Codable, CaseIterable {
    case yaml
    case json

    /// `.json` for `json`, `.yaml` for anything else (`yaml`, `yml`, no extension…), case-insensitively.
    public init(fileExtension: String) {
        self = fileExtension.lowercased() == "json" ? .json : .yaml
    }

    /// The format for a file path, by its extension.
    public init(path: String) {
        self.init(fileExtension: SpecFormat.splitName(path).extension)
    }

    /// The last path component without its extension, and the extension (without the dot).
    static func splitName(_ path: String) -> (base: String, extension: String) {
        let file = path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
        guard let dot = file.lastIndex(of: "."), dot != file.startIndex else { return (file, "") }
        return (String(file[..<dot]), String(file[file.index(after: dot)...]))
    }
}
