import CohortJournal
import Foundation
import PostgresNIO

extension PostgresJournal: LeaseJournalStore {}

/// The leader lease (issue 16): several coordinators on one database, one of them leading.
///
/// The lease is one row (``PostgresJournalSchema/lease``): an epoch, its holder and when it
/// expires, by the database's clock (`clock_timestamp()`), so the coordinators' clocks need not
/// agree. A store opened for leadership (``PostgresJournal/Opening/leadership``):
///
/// - takes the lease when nobody holds it or its holder's has expired
///   (``PostgresJournal/acquireLease(holder:ttl:)``, one `UPDATE … WHERE` the lease is free or
///   expired), with a new epoch: one more than both the
///   lease's and the journal's `meta.epoch`, which it becomes too, so epochs (and the fencing
///   tokens the coordinator derives from them) keep growing across every coordinator that ever
///   served the database;
/// - keeps it by renewing it before it expires (``PostgresJournal/renewLease(epoch:holder:ttl:)``);
/// - checks it first in every write and prune, in the same transaction
///   (`SELECT … FOR SHARE`): a store whose epoch is over fails `deposed` and commits nothing.
///   The row lock makes the check and the takeover exclusive: a takeover waits for a write
///   that has checked to commit, and a write that checks after a takeover sees the new epoch.
///
/// Acquiring and renewing are single statements, each in a transaction that gives up waiting
/// for the lease row after a quarter of the lease (`lock_timeout`, `statement_timeout`), so
/// that nothing a paused standby does holds up the leader's renewal for long.
extension PostgresJournal {
    /// The lease a store holds: its epoch and holder.
    public struct HeldLease: Sendable, Hashable {
        public var epoch: UInt64
        public var holder: String

        public init(epoch: UInt64, holder: String) {
            (self.epoch, self.holder) = (epoch, holder)
        }
    }

    /// The lease as the database has it now.
    public struct LeaseRow: Sendable, Hashable {
        /// The epoch of the last store that acquired it (0 if none ever did).
        public var epoch: UInt64
        /// Who holds it; nil when nobody does (never acquired, or released).
        public var holder: String?
        /// Whether it has expired by the database's clock (a released lease has).
        public var expired: Bool

        public init(epoch: UInt64, holder: String?, expired: Bool) {
            (self.epoch, self.holder, self.expired) = (epoch, holder, expired)
        }
    }

    /// Takes the lease for `holder` for `ttl` if nobody holds it or its holder's has expired,
    /// and returns the new epoch (one more than the last, as ``epoch`` becomes); nil if another
    /// holder's lease is live. A store holding the lease does not acquire it again: it renews.
    /// - Throws: ``JournalError`` `unusable` unless the store was opened for leadership, or
    ///   as ``write(_:)`` if the database fails.
    public func acquireLease(holder: String, ttl: Duration) throws(JournalError) -> UInt64? {
        try requireLeadership()
        let micros = Self.microseconds(ttl)
        leaseLength.withLock { $0 = ttl }
        // One statement: a try that finds the lease live changes and locks nothing, and one
        // that takes it holds the row only until its commit, so that a standby paused in the
        // middle of a try never holds up the leader's renewal.
        let rows: [PostgresRow] = try leaseStatement(ttl, doing: "cannot acquire the journal's lease") {
            """
            WITH taken AS (
                UPDATE lease
                SET epoch = GREATEST(lease.epoch, (SELECT value::bigint FROM meta WHERE key = 'epoch')) + 1,
                    holder = \(holder), expires_at = clock_timestamp() + \(micros) * interval '1 microsecond'
                WHERE lease.holder IS NULL OR lease.expires_at <= clock_timestamp()
                RETURNING lease.epoch
            ), bumped AS (
                UPDATE meta SET value = (SELECT epoch FROM taken)::text
                WHERE key = 'epoch' AND EXISTS (SELECT 1 FROM taken)
            )
            SELECT epoch FROM taken
            """
        }
        let acquired: UInt64?
        do {
            acquired = try rows.first.map { UInt64(try $0.decode(Int64.self)) }
        } catch {
            throw JournalError(.damaged, path: location, "cannot read the journal's lease: \(error)")
        }
        if let acquired {
            state.withLock { $0 = (acquired, HeldLease(epoch: acquired, holder: holder)) }
        }
        return acquired
    }

    /// Extends the lease of `epoch` held by `holder` to `ttl` from now (by the database's
    /// clock); false if the lease has another epoch or holder (taken over: the store is
    /// deposed). A lease that expired but that nobody took since is still this one's.
    /// - Throws: ``JournalError`` `unusable` unless the store was opened for leadership, or
    ///   as ``write(_:)`` if the database fails, or `damaged` naming PostgreSQL's lock or
    ///   statement timeout when the lease row stays locked for a quarter of `ttl`.
    public func renewLease(epoch: UInt64, holder: String, ttl: Duration) throws(JournalError) -> Bool {
        try requireLeadership()
        let micros = Self.microseconds(ttl)
        let rows = try leaseStatement(ttl, doing: "cannot renew the journal's lease") {
            """
            UPDATE lease SET expires_at = clock_timestamp() + \(micros) * interval '1 microsecond'
            WHERE epoch = \(Int64(bitPattern: epoch)) AND holder = \(holder) RETURNING epoch
            """
        }
        return !rows.isEmpty
    }

    /// Runs one statement on the lease row in a transaction of its own that waits for a lock,
    /// and runs, at most a quarter of the lease (less than the leader's renewal interval,
    /// lease/3: a renewal held up by a lock fails in time to be tried again before the lease
    /// runs out), and that the server ends if it stays idle for a lease (a process paused
    /// before its commit). The store waits at most a lease for each answer (past it, a leader
    /// steps down anyway); only the lease's statements are bounded so: the journal's load,
    /// writes and prunes on the same connection wait as long as any store's.
    private func leaseStatement(
        _ ttl: Duration, doing: String, _ statement: () -> PostgresQuery
    ) throws(JournalError) -> [PostgresRow] {
        let micros = Self.microseconds(ttl)
        let waitMillis = String(max(micros / 4_000, 1))
        let leaseMillis = String(max(micros / 1_000, 1))
        return try session.transaction(doing: doing, answerTimeout: ttl, timeoutsAreTransient: true) { execute in
            _ = try execute(
                """
                SELECT set_config('lock_timeout', \(waitMillis), true),
                    set_config('statement_timeout', \(waitMillis), true),
                    set_config('idle_in_transaction_session_timeout', \(leaseMillis), true)
                """)
            return try execute(statement())
        }
    }

    /// Gives the lease up (a leader stopping cleanly), so that another store takes it without
    /// waiting for it to expire; nothing if the lease is no longer this store's. The store
    /// writes no more.
    /// - Throws: as ``renewLease(epoch:holder:ttl:)``.
    public func releaseLease() throws(JournalError) {
        try requireLeadership()
        guard let held = state.withLock({ $0.lease }) else { return }
        _ = try leaseStatement(leaseLength.withLock { $0 }, doing: "cannot release the journal's lease") {
            """
            UPDATE lease SET holder = NULL, expires_at = clock_timestamp()
            WHERE epoch = \(Int64(bitPattern: held.epoch)) AND holder = \(held.holder)
            """
        }
        state.withLock { $0.lease = nil }
    }

    /// The lease as the database has it (for operators, tests and a standby deciding when to
    /// try).
    public func currentLease() throws(JournalError) -> LeaseRow {
        let row = try readLease()
        return LeaseRow(epoch: row.epoch, holder: row.holder, expired: row.expired)
    }

    /// Who holds the lease now, whether it has expired (as ``currentLease()``), and when it
    /// expires, in seconds since 1970 by the database's clock (-infinity before any holder):
    /// a reading later than another's means the lease was renewed or taken in between.
    public func leaseHolder() throws(JournalError) -> (holder: String?, expired: Bool, expiresAt: Double) {
        let row = try readLease()
        return (row.holder, row.expired, row.expiresAt)
    }

    /// The lease row, waiting at most ``leaseAnswerTimeout`` for the answer.
    private func readLease() throws(JournalError) -> (
        epoch: UInt64, holder: String?, expired: Bool, expiresAt: Double
    ) {
        let rows = try session.run(
            """
            SELECT epoch, holder, expires_at <= clock_timestamp(), extract(epoch FROM expires_at)::float8
            FROM lease
            """,
            doing: "cannot read the journal's lease", answerTimeout: leaseAnswerTimeout)
        do {
            guard let row = rows.first else {
                throw JournalError(.damaged, path: location, "the journal's lease row is missing")
            }
            let (epoch, holder, expired, expiresAt) = try row.decode((Int64, String?, Bool, Double).self)
            return (UInt64(max(epoch, 0)), holder, expired, expiresAt)
        } catch let error as JournalError {
            throw error
        } catch {
            throw JournalError(.damaged, path: location, "cannot read the journal's lease: \(error)")
        }
    }

    /// How long a read of the lease, a write or a prune waits for each answer: a store that
    /// tried for a lease at most that lease (past it, a holder has lost it anyway: its renewal
    /// waits behind the write on the one connection), any other 30 s.
    var leaseAnswerTimeout: Duration {
        let lease = leaseLength.withLock { $0 }
        return lease > .zero ? min(lease, PostgresSession.answerTimeout) : PostgresSession.answerTimeout
    }

    // MARK: The check every write makes

    /// The lease a write must find, for a store opened for leadership (nil otherwise: no
    /// check).
    /// - Throws: ``JournalError`` `deposed` if the store holds none.
    func leaseToCheck() throws(JournalError) -> HeldLease? {
        guard opening == .leadership else { return nil }
        guard let held = state.withLock({ $0.lease }) else {
            throw JournalError(
                .deposed, path: location, "this coordinator does not hold the journal's lease: it may not write")
        }
        return held
    }

    /// First in a write's transaction: the lease row still has `held`'s epoch and holder,
    /// share-locked until the commit (a takeover waits for it). The server ends the
    /// transaction if it stays idle for a lease (a leader paused mid-write), which releases the
    /// row; only writes are limited so, not a new leader's long load.
    /// - Throws: ``JournalError`` `deposed` naming the lease's epoch and holder now; the
    ///   transaction is then rolled back.
    func checkLease(_ held: HeldLease, _ execute: (PostgresQuery) throws -> [PostgresRow]) throws {
        let idleMillis = String(max(Self.microseconds(leaseLength.withLock { $0 }) / 1_000, 1))
        _ = try execute("SELECT set_config('idle_in_transaction_session_timeout', \(idleMillis), true)")
        let epoch = Int64(bitPattern: held.epoch)
        let rows = try execute("SELECT epoch FROM lease WHERE epoch = \(epoch) AND holder = \(held.holder) FOR SHARE")
        guard rows.isEmpty else { return }
        let now = try execute("SELECT epoch, holder FROM lease").first?.decode((Int64, String?).self)
        throw JournalError(
            .deposed, path: location,
            "this coordinator's lease (epoch \(held.epoch), holder \"\(held.holder)\") was taken over: the lease is at "
                + "epoch \(now?.0 ?? 0), held by \(now?.1.map { "\"\($0)\"" } ?? "nobody"); nothing was written")
    }

    private func requireLeadership() throws(JournalError) {
        guard opening == .leadership else {
            throw JournalError(
                .unusable, path: location, "the journal's lease is for a store opened for leadership")
        }
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
