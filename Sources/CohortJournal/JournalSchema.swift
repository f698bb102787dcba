/// The journal's tables (schema version 1), documented for operators in docs/operations.md,
/// "The journal". Times are nanoseconds since 1970-01-01 UTC; a group's id is its key
/// everywhere.
enum JournalSchema {
    /// Written to `meta.schemaVersion`; a journal with another version is refused.
    static let version = 1

    static let statements = [
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY NOT NULL,
            value TEXT NOT NULL
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE groups (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            spec TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            submitted_at INTEGER NOT NULL,
            state TEXT NOT NULL,
            reason TEXT,
            finished_at INTEGER,
            owner TEXT
        )
        """,
        "CREATE INDEX groups_by_finish ON groups (finished_at) WHERE finished_at IS NOT NULL",
        """
        CREATE TABLE attempts (
            group_id TEXT NOT NULL,
            path TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            task_id INTEGER NOT NULL,
            state TEXT NOT NULL,
            worker TEXT,
            tokens TEXT,
            output BLOB,
            error TEXT,
            started_at INTEGER,
            finished_at INTEGER,
            PRIMARY KEY (group_id, path, attempt)
        ) WITHOUT ROWID
        """,
        """
        CREATE VIEW grants AS
            SELECT group_id, path, attempt, task_id, worker, tokens FROM attempts
            WHERE state = 'in-flight' AND tokens IS NOT NULL
        """,
        """
        CREATE TABLE fencing (
            category TEXT PRIMARY KEY NOT NULL,
            last_token INTEGER NOT NULL
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE cancels (
            group_id TEXT NOT NULL,
            path TEXT NOT NULL,
            reason TEXT NOT NULL,
            at INTEGER NOT NULL
        )
        """,
        "CREATE INDEX cancels_by_group ON cancels (group_id)",
    ]
}
