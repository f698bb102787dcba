/// One thing wrong with a group spec, named by the path of the field at fault.
///
/// `description` is `path: message`, e.g.
/// `children[2].inject[0].from: no child named "buld"; did you mean "build"?`.
public struct SpecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem, for callers that switch on it; the message is for people.
    public enum Code: String, Sendable, Hashable, Codable, CaseIterable {
        /// The text is not YAML/JSON; `line` and `column` say where.
        case syntax
        /// A field this place does not take.
        case unknownField
        /// A required field is absent.
        case missingField
        /// Two fields that exclude each other (`run` and `group`).
        case conflictingFields
        /// A value of the wrong type (a number where a string belongs).
        case wrongType
        /// A value of the right type that is not allowed (an empty name, an unknown mode).
        case invalidValue
        /// A duration that does not parse or is out of range.
        case invalidDuration
        /// A `select`/`into` that is not a path.
        case invalidPath
        /// An `if:`, `require:` or `repeat.until` that does not parse; the message says at
        /// which column.
        case invalidExpression
        /// Two siblings with one name.
        case duplicateName
        /// `after` or `inject.from` naming no child.
        case unknownReference
        /// Children waiting on each other.
        case cycle
        /// A size limit (`SpecLimits`) exceeded.
        case limitExceeded
        /// The spec file could not be read.
        case unreadable
    }

    public var code: Code
    /// Where, in the spec's own structure: `children[2].inject[0].from`; `""` for the whole spec.
    public var path: String
    public var message: String
    /// 1-based position in the spec text, when the spec was parsed from text.
    public var line: Int?
    public var column: Int?

    public init(_ code: Code, path: String, _ message: String, line: Int? = nil, column: Int? = nil) {
        self.code = code
        self.path = path
        self.message = message
        self.line = line
        self.column = column
    }

    public var description: String {
        path.isEmpty ? message : "\(path): \(message)"
    }
}

/// Every error found in a spec; a spec is rejected whole when this is thrown.
public struct SpecErrors: Error, Sendable, Hashable, CustomStringConvertible {
    /// The sysexits code (`EX_DATAERR`) the CLI exits with for an invalid spec.
    public static let exitCode: Int32 = 65

    /// In document order where positions are known.
    public var errors: [SpecError]
    /// The file or label the spec came from, if any (for the CLI to print before the list).
    public var sourceName: String?

    public init(_ errors: [SpecError], sourceName: String? = nil) {
        self.errors = errors
        self.sourceName = sourceName
    }

    /// One error per line, `path: message`.
    public var description: String {
        errors.map(\.description).joined(separator: "\n")
    }

    /// Whether any error has this path (handy in tests and tools).
    public func contains(path: String) -> Bool {
        errors.contains { $0.path == path }
    }
}
