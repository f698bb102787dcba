/// Why the journal cannot be used. The coordinator stops at start with it rather than run
/// without (or over) its journal; `exitCode` is the sysexits status `cohort coordinator` exits
/// with (docs/operations.md, "The journal").
public struct JournalError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: Hashable, Sendable {
        /// The journal file is not a readable SQLite database of Cohort's (truncated, garbage,
        /// an integrity check failed), or a write to it failed.
        case damaged
        /// The journal was written by a schema version this coordinator does not know.
        case schemaVersion
        /// Another coordinator holds the state directory's lock, or (PostgreSQL) the journal's
        /// lease when this one does not stand by for it.
        case locked
        /// The state directory cannot be created, opened or written.
        case unusable
        /// The journal's location is not one Cohort can use (a `--journal` URL it cannot read).
        case badLocation
        /// The journal's database cannot be reached (PostgreSQL down, refused, timed out).
        case unreachable
        /// The journal's database refused the credentials (PostgreSQL's authentication).
        case denied
        /// Another coordinator has taken the journal's leader lease (PostgreSQL, a store opened
        /// for leadership): this one's epoch is over and nothing it wrote since was committed.
        case deposed
    }

    public var code: Code
    /// The file or directory at fault, or the database's URL (without its password).
    public var path: String
    public var message: String

    public init(_ code: Code, path: String, _ message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    /// The sysexits status: 74 (`EX_IOERR`) for a damaged or unwritable journal, 65
    /// (`EX_DATAERR`) for an unknown schema version, 75 (`EX_TEMPFAIL`) when another
    /// coordinator holds the state directory (or the journal's lease), 73 (`EX_CANTCREAT`) when it cannot be created,
    /// 64 (`EX_USAGE`) for a bad `--journal` URL, 69 (`EX_UNAVAILABLE`) when its database
    /// cannot be reached, 77 (`EX_NOPERM`) when it refuses the credentials, 75 when another
    /// coordinator has taken the lead (deposed).
    public var exitCode: Int32 {
        switch code {
        case .damaged: 74
        case .schemaVersion: 65
        case .locked: 75
        case .unusable: 73
        case .badLocation: 64
        case .unreachable: 69
        case .denied: 77
        case .deposed: 75
        }
    }

    public var description: String { "\(path): \(message)" }
}
