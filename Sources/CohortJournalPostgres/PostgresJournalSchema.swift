/// The PostgreSQL journal's tables, documented for operators in docs/operations.md, "The
/// journal". The same tables and columns as SQLite's schema version 7 (``version`` 4 here:
/// PostgreSQL's schema has versions of its own), and the leader lease (``lease``), with
/// PostgreSQL's types: times are
/// nanoseconds since 1970-01-01 UTC in `bigint`, outputs `bytea`; names and paths compare
/// byte by byte (`COLLATE "C"`, as SQLite does), so lists come in the same order from both.
enum PostgresJournalSchema {
    /// Written to `meta.schemaVersion`. A journal of an older version listed in ``migrations``
    /// is brought up to this one when opened; any other version is refused.
    static let version = 4

    /// Version -> the statements that bring a journal of that version to the next one.
    /// Version 2 added the `additions` table, the children added to running groups
    /// (``additions``; SQLite's schema version 6); version 3 the leader lease (``lease``);
    /// version 4 each cancel reason's code beside its words (``cancelCodes``; SQLite's 7).
    static let migrations: [Int: [String]] = [
        1: additions,
        2: lease,
        3: cancelCodes,
    ]

    /// A cancel reason's code beside its words, as SQLite's `JournalSchema.cancelCodes`.
    static let cancelCodes = [
        "ALTER TABLE attempts ADD COLUMN cancel_code text",
        "ALTER TABLE attempts ADD COLUMN cancel_reason text",
        "ALTER TABLE groups ADD COLUMN reason_code text",
        "ALTER TABLE cancels ADD COLUMN code text",
    ]

    /// The leader lease (issue 16): one row, the epoch of the coordinator that leads, who it
    /// is (nil when nobody does) and until when, by the database's clock. A coordinator opened
    /// for leadership takes it when it is free or expired (``PostgresJournal/acquireLease(holder:ttl:)``)
    /// and checks it first in every write.
    static let lease = [
        """
        CREATE TABLE lease (
            id boolean PRIMARY KEY DEFAULT true CHECK (id),
            epoch bigint NOT NULL,
            holder text,
            expires_at timestamptz NOT NULL
        )
        """,
        "INSERT INTO lease (epoch, holder, expires_at) VALUES (0, NULL, '-infinity')",
    ]

    /// Children added to running groups (docs/spec.md, "Growing groups"), replayed in `seq`
    /// order after a restart: the group, the nested group's path (`""` the top level), the
    /// children as a JSON list in the spec format, when.
    static let additions = [
        """
        CREATE TABLE additions (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            group_id text COLLATE "C" NOT NULL,
            into_path text COLLATE "C" NOT NULL,
            children text NOT NULL,
            at bigint NOT NULL
        )
        """,
        "CREATE INDEX additions_by_group ON additions (group_id)",
    ]

    /// The advisory lock (`pg_advisory_xact_lock`) that serialises openings of one database.
    static let openingLock: Int64 = 0x636F_686F_7274  // "cohort"

    static let statements = [
        "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
        """
        CREATE TABLE groups (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id text COLLATE "C" NOT NULL UNIQUE,
            name text COLLATE "C" NOT NULL,
            spec text NOT NULL,
            fingerprint text NOT NULL,
            submitted_at bigint NOT NULL,
            state text NOT NULL,
            reason text,
            finished_at bigint,
            owner text,
            reason_code text
        )
        """,
        "CREATE INDEX groups_by_finish ON groups (finished_at) WHERE finished_at IS NOT NULL",
        "CREATE INDEX groups_by_submission ON groups (submitted_at, id)",
        "CREATE INDEX groups_by_state ON groups (state, submitted_at, id)",
        """
        CREATE TABLE attempts (
            group_id text COLLATE "C" NOT NULL,
            path text COLLATE "C" NOT NULL,
            attempt bigint NOT NULL,
            attempt_id bigint NOT NULL,
            state text NOT NULL,
            worker text,
            tokens text,
            output bytea,
            error text,
            started_at bigint,
            finished_at bigint,
            output_truncated boolean NOT NULL DEFAULT false,
            losses bigint NOT NULL DEFAULT 0,
            counted bigint,
            cancel_code text,
            cancel_reason text,
            PRIMARY KEY (group_id, path, attempt)
        )
        """,
        """
        CREATE VIEW grants AS
            SELECT group_id, path, attempt, attempt_id, worker, tokens FROM attempts
            WHERE state = 'in-flight' AND tokens IS NOT NULL
        """,
        "CREATE TABLE fencing (category text PRIMARY KEY, last_token bigint NOT NULL)",
        """
        CREATE TABLE cancels (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            group_id text COLLATE "C" NOT NULL,
            path text COLLATE "C" NOT NULL,
            reason text NOT NULL,
            at bigint NOT NULL,
            code text
        )
        """,
        "CREATE INDEX cancels_by_group ON cancels (group_id)",
        """
        CREATE TABLE local_locks (
            attempt_id bigint NOT NULL,
            request bigint NOT NULL,
            group_id text COLLATE "C" NOT NULL,
            path text COLLATE "C" NOT NULL,
            attempt bigint NOT NULL,
            tokens text NOT NULL,
            PRIMARY KEY (attempt_id, request)
        )
        """,
        additions[0],
        additions[1],
        lease[0],
        lease[1],
    ]
}
