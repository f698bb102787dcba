import Foundation

/// The journal's tables (schema version 7), documented for operators in docs/operations.md,
/// "The journal". Times are nanoseconds since 1970-01-01 UTC; a group's id is its key
/// everywhere.
enum JournalSchema {
    /// Written to `meta.schemaVersion`. A journal of an older version listed in ``migrations``
    /// is brought up to this one when opened; any other version is refused.
    static let version = 7

    /// Version -> the statements that bring a journal of that version to the next one.
    /// Version 2 added `attempts.output_truncated` and the `local_locks` table; version 3 calls
    /// the attempt's id `attempt_id` (it was `task_id`), the handbook's word; version 4 added
    /// `attempts.losses` and `attempts.counted`, the workers the child had lost and the
    /// attempts that had used up its retry budget when the attempt was sent; version 5 added
    /// the indexes `cohort status` lists the history with (``historyIndexes``); version 6 added
    /// the `additions` table, the children added to running groups (``additions``); version 7
    /// keeps each cancel reason's code beside its words (``cancelCodes``), so that a restart
    /// gives a cancelled child, group or replayed cancel the code it had.
    static let migrations: [Int: [String]] = [
        1: [
            "ALTER TABLE attempts ADD COLUMN output_truncated INTEGER NOT NULL DEFAULT 0",
            localLocks.replacingOccurrences(of: "attempt_id", with: "task_id"),
        ],
        2: [
            "DROP VIEW grants",
            "ALTER TABLE attempts RENAME COLUMN task_id TO attempt_id",
            "ALTER TABLE local_locks RENAME COLUMN task_id TO attempt_id",
            grants,
        ],
        3: [
            "ALTER TABLE attempts ADD COLUMN losses INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE attempts ADD COLUMN counted INTEGER",
        ],
        4: historyIndexes,
        5: additions,
        6: cancelCodes,
    ]

    /// A cancel reason's code (`CancellationReason.Code`'s raw value, `timed-out`, …) beside
    /// its words: a cancelled or skipped child's (`attempts.cancel_code`, with the reason's own
    /// words in `cancel_reason`, which `error` may extend with every attempt's), a group's that
    /// finished cancelled with one (`groups.reason_code`; `reason` holds the words), and a cancel
    /// a client asked for (`cancels.code`). Rows of older versions have none and read `custom`.
    static let cancelCodes = [
        "ALTER TABLE attempts ADD COLUMN cancel_code TEXT",
        "ALTER TABLE attempts ADD COLUMN cancel_reason TEXT",
        "ALTER TABLE groups ADD COLUMN reason_code TEXT",
        "ALTER TABLE cancels ADD COLUMN code TEXT",
    ]

    /// Children added to running groups (docs/spec.md, "Growing groups"), replayed in `rowid`
    /// order after a restart: the group, the nested group's path (`""` the top level), the
    /// children as a JSON list in the spec format, when.
    static let additions = [
        """
        CREATE TABLE additions (
            group_id TEXT NOT NULL,
            into_path TEXT NOT NULL,
            children TEXT NOT NULL,
            at INTEGER NOT NULL
        )
        """,
        "CREATE INDEX additions_by_group ON additions (group_id)",
    ]

    /// `cohort status` lists groups newest first, by state, since a time: the submission
    /// index serves the order and `--since`, the state index a `--state` filter.
    static let historyIndexes = [
        "CREATE INDEX groups_by_submission ON groups (submitted_at, id)",
        "CREATE INDEX groups_by_state ON groups (state, submitted_at, id)",
    ]

    /// The attempts in flight that hold cluster locks, for an operator reading the journal.
    static let grants = """
        CREATE VIEW grants AS
            SELECT group_id, path, attempt, attempt_id, worker, tokens FROM attempts
            WHERE state = 'in-flight' AND tokens IS NOT NULL
        """

    /// Grants the coordinator made to procedures a running attempt created on its worker
    /// (`MutuallyExclusive` in a local group), until they are released. Rows of attempts that
    /// are no longer in flight are ignored at restart and pruned with their group.
    static let localLocks = """
        CREATE TABLE local_locks (
            attempt_id INTEGER NOT NULL,
            request INTEGER NOT NULL,
            group_id TEXT NOT NULL,
            path TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            tokens TEXT NOT NULL,
            PRIMARY KEY (attempt_id, request)
        ) WITHOUT ROWID
        """

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
            owner TEXT,
            reason_code TEXT
        )
        """,
        "CREATE INDEX groups_by_finish ON groups (finished_at) WHERE finished_at IS NOT NULL",
        historyIndexes[0],
        historyIndexes[1],
        """
        CREATE TABLE attempts (
            group_id TEXT NOT NULL,
            path TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            attempt_id INTEGER NOT NULL,
            state TEXT NOT NULL,
            worker TEXT,
            tokens TEXT,
            output BLOB,
            error TEXT,
            started_at INTEGER,
            finished_at INTEGER,
            output_truncated INTEGER NOT NULL DEFAULT 0,
            losses INTEGER NOT NULL DEFAULT 0,
            counted INTEGER,
            cancel_code TEXT,
            cancel_reason TEXT,
            PRIMARY KEY (group_id, path, attempt)
        ) WITHOUT ROWID
        """,
        grants,
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
            at INTEGER NOT NULL,
            code TEXT
        )
        """,
        "CREATE INDEX cancels_by_group ON cancels (group_id)",
        localLocks,
        additions[0],
        additions[1],
    ]
}
