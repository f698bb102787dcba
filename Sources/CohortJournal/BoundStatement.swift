import Foundation
import GRDB
import GRDBSQLite

/// A cached GRDB statement executed through SQLite's C API: the hot path of the journal
/// (two rows per child) binds and steps without building `StatementArguments`, which costs
/// several times the insert itself. Used only inside ``Journal/write(_:)``'s transaction.
struct BoundStatement {
    private let handle: OpaquePointer
    private var index: Int32 = 0

    init(_ statement: Statement) {
        handle = statement.sqliteStatement
    }

    /// SQLite copies the bytes before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    mutating func bind(_ value: String?) {
        index += 1
        guard let value else {
            sqlite3_bind_null(handle, index)
            return
        }
        var text = value
        text.withUTF8 { bytes in
            _ = sqlite3_bind_text(handle, index, bytes.baseAddress, Int32(bytes.count), Self.transient)
        }
    }

    mutating func bind(_ value: Int64?) {
        index += 1
        if let value { sqlite3_bind_int64(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }

    mutating func bind(_ value: Data?) {
        index += 1
        guard let value else {
            sqlite3_bind_null(handle, index)
            return
        }
        value.withUnsafeBytes { bytes in
            _ = sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), Self.transient)
        }
    }

    /// Runs the statement with what was bound, then resets it for the next row.
    mutating func run() throws {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            index = 0
        }
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let message = sqlite3_errmsg(sqlite3_db_handle(handle)).map { String(cString: $0) } ?? "error \(code)"
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
        }
    }
}
