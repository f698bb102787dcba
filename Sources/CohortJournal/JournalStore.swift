import CohortCore

/// Where the coordinator's journal lives, behind one protocol: ``Journal`` (SQLite under the
/// state directory, the default) and `PostgresJournal` (module CohortJournalPostgres,
/// `--journal postgres://…`). docs/operations.md, "The journal".
///
/// Every store gives the same guarantees: ``write(_:)`` writes several loop turns' batches in
/// ONE transaction (all or nothing), so the coordinator, which holds a turn's replies until
/// its batch is committed, never hands a client the id of a group that is not stored;
/// ``load(finishedSince:)`` gives back what was committed; opening a store creates or
/// migrates its schema and increments its ``epoch``.
///
/// Thread-safety: every method may be called from any thread; calls are serialised. None may
/// be called on a NIO event loop thread or from an async context that must not block: they
/// block their caller until the database answered.
public protocol JournalStore: AnyObject, Sendable {
    /// Where the journal is, for messages and logs: a file path, or a URL without its password.
    var location: String { get }
    /// This incarnation's epoch: 1 for a new journal, one more at every open for serving.
    var epoch: UInt64 { get }
    /// Writes several turns' changes, oldest first, in one transaction (a group commit): the
    /// result is the same as writing them one by one.
    /// - Throws: ``JournalError``; then none of them is written.
    func write(_ batches: [JournalBatch]) throws(JournalError)
    /// Every unfinished group, and the finished ones that finished at or after `cutoff` (all of
    /// them if nil), each with the latest record of every child; and the fencing counters.
    func load(finishedSince cutoff: Timestamp?) throws(JournalError) -> JournalContents
    /// Deletes the groups that finished before `cutoff`, with their attempts, cancels and
    /// local locks, and returns their ids.
    @discardableResult
    func prune(finishedBefore cutoff: Timestamp) throws(JournalError) -> [String]
    /// A second connection for queries beside the loop (`cohort status` history, `cohort
    /// rerun`), which sees every committed transaction and does not wait for the writer.
    func openReader() throws(JournalError) -> any JournalStoreReader
    /// Closes the store. Further calls throw.
    func close()
}

extension JournalStore {
    /// Writes one turn's changes in one transaction.
    public func write(_ batch: JournalBatch) throws(JournalError) {
        try write([batch])
    }
}

/// The journal's queries beside the coordinator's loop, on a connection of their own.
///
/// Thread-safety: every method may be called from any thread (not a NIO event loop's); calls
/// are serialised.
public protocol JournalStoreReader: AnyObject, Sendable {
    /// Where the journal is (as ``JournalStore/location``).
    var location: String { get }
    /// The finished groups `query` selects, newest submission first, at most its
    /// ``GroupQuery/effectiveLimit``; without children.
    func finishedGroups(matching query: GroupQuery) throws(JournalError) -> [GroupSnapshot]
    /// The spec and succeeded outputs of group `id`, or nil if the journal does not have it.
    func rerunSource(group id: String) throws(JournalError) -> RerunSource?
    /// Closes the connection (before its store).
    func close()
}

extension Journal: JournalStore {
    public var location: String { path }

    public func openReader() throws(JournalError) -> any JournalStoreReader {
        try JournalReader(path: path)
    }
}

extension JournalReader: JournalStoreReader {
    public var location: String { path }
}

extension JournalStore {
    /// Every group and the fencing counters (``load(finishedSince:)`` without a cutoff).
    public func load() throws(JournalError) -> JournalContents {
        try load(finishedSince: nil)
    }
}

/// How to open a journal store other than the state directory's SQLite file (the coordinator
/// opens it on its own thread when it starts). Two openers are equal when they name the same
/// location.
public struct JournalStoreOpener: Sendable, Equatable, CustomStringConvertible {
    /// Where the store is (a URL without its password), for messages and logs.
    public var location: String
    /// Opens the store for serving (creating or migrating its schema, incrementing its epoch).
    public var open: @Sendable () throws(JournalError) -> any JournalStore
    /// Opens an existing store for maintenance (`cohort prune`), without starting an
    /// incarnation; refuses a database without a journal.
    public var openExisting: @Sendable () throws(JournalError) -> any JournalStore
    /// Opens the store for a coordinator that takes part in leader election (`--standby`):
    /// several share it, the one holding its lease writes. Nil for a store that has no lease
    /// (SQLite's).
    public var openForLeadership: (@Sendable () throws(JournalError) -> any LeaseJournalStore)?
    /// Opens the log store that lives beside this journal (in the same database), with its
    /// bounds (`maxLogBytes`, `maxLogStoreBytes`). Nil: the coordinator keeps logs in memory.
    public var openLogs:
        (@Sendable (_ maxAttemptBytes: Int, _ maxTotalBytes: Int) throws(JournalError) -> any LogStoring)?

    public init(
        location: String, open: @escaping @Sendable () throws(JournalError) -> any JournalStore,
        openExisting: @escaping @Sendable () throws(JournalError) -> any JournalStore,
        openForLeadership: (@Sendable () throws(JournalError) -> any LeaseJournalStore)? = nil,
        openLogs: (@Sendable (_ maxAttemptBytes: Int, _ maxTotalBytes: Int) throws(JournalError) -> any LogStoring)? =
            nil
    ) {
        self.location = location
        self.open = open
        self.openExisting = openExisting
        self.openForLeadership = openForLeadership
        self.openLogs = openLogs
    }

    public var description: String { location }

    public static func == (lhs: JournalStoreOpener, rhs: JournalStoreOpener) -> Bool {
        lhs.location == rhs.location
    }
}

/// A journal store that several coordinators share, one of them leading (PostgreSQL's,
/// opened for leadership): the leader lease, with an epoch that grows at every takeover and
/// is checked by every write (docs/operations.md, "High availability").
///
/// Thread-safety: as ``JournalStore``.
public protocol LeaseJournalStore: JournalStore {
    /// Takes the lease for `holder` for `ttl` if nobody holds it or it has expired; returns
    /// the new epoch (which ``JournalStore/epoch`` becomes), or nil if another holder's lease
    /// is live.
    func acquireLease(holder: String, ttl: Duration) throws(JournalError) -> UInt64?
    /// Extends the lease of `epoch` held by `holder` to `ttl` from now; false if it was taken
    /// over.
    func renewLease(epoch: UInt64, holder: String, ttl: Duration) throws(JournalError) -> Bool
    /// Gives the lease up, so that a standby takes it at once.
    func releaseLease() throws(JournalError)
    /// Who holds the lease now (nil: nobody), whether it has expired, and when it expires, in
    /// seconds since 1970 by the database's clock (it moves when the holder renews the lease;
    /// only compared with another reading's).
    func leaseHolder() throws(JournalError) -> (holder: String?, expired: Bool, expiresAt: Double)
}
