import CohortCore
import CohortJournal
import CohortJournalPostgres
import CohortTestSupport
import Foundation
import Synchronization
import Testing

/// The leader lease of PostgreSQL's journal (issue 16): stores opened for leadership on one
/// database, against the tests' real server. Only one holds the lease; a takeover waits for
/// the lease to expire, by the database's clock; the deposed store's writes fail `deposed` and
/// commit nothing.
@Suite struct JournalLeaseTests {
    func leader(_ place: JournalPlace) throws -> PostgresJournal {
        try PostgresJournal(url: try PostgresConnectionURL(place.location), opening: .leadership)
    }

    /// A batch that submits group `id`.
    func submitting(_ id: String, finishedAt finish: Int64? = nil) -> JournalBatch {
        var batch = JournalBatch()
        batch.submissions.append(.init(id: id, spec: sampleSpec, submittedAt: at(1)))
        if let finish { batch.outcomes.append((id, .succeeded, nil, nil, at(finish))) }
        return batch
    }

    /// Tries to acquire until it does (the holder's lease expires), or fails at the deadline.
    func acquireOnceExpired(_ store: PostgresJournal, holder: String) throws -> UInt64 {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let epoch = try store.acquireLease(holder: holder, ttl: .seconds(60)) { return epoch }
            usleep(5_000)
        }
        throw JournalError(.unusable, path: "", "\(holder) could not take the lease within 10 s")
    }

    /// Two stores on one database: the second cannot take the lease while the first's is live;
    /// once it expired, it takes it with the next epoch; then the first's write and prune fail
    /// `deposed` and commit nothing (read back behind the stores' backs), its renewal says it
    /// no longer holds it, and the second writes.
    @Test func aSecondStoreTakesTheLeaseOnceExpiredAndTheFirstIsDeposed() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            // A coordinator served the database alone before: the lease's epochs follow its.
            let alone = try place.open()
            #expect(alone.epoch == 1)
            alone.close()
            let first = try leader(place)
            defer { first.close() }
            let second = try leader(place)
            defer { second.close() }
            #expect(first.epoch == 1 && second.epoch == 1, "opening for leadership starts no incarnation")

            let epoch = try #require(try first.acquireLease(holder: "first", ttl: .seconds(60)))
            #expect(epoch == 2 && first.epoch == 2)
            #expect(try place.strings("SELECT value FROM meta WHERE key = 'epoch'") == ["2"])
            try first.write(submitting("before", finishedAt: 2))

            #expect(try second.acquireLease(holder: "second", ttl: .seconds(60)) == nil, "the first's lease is live")
            #expect(try first.acquireLease(holder: "first", ttl: .seconds(60)) == nil, "held: it renews instead")
            let unheld = #expect(throws: JournalError.self) { try second.write(submitting("unheld")) }
            #expect(unheld?.code == .deposed)
            #expect(try first.renewLease(epoch: epoch, holder: "first", ttl: .seconds(60)))
            #expect(try first.currentLease() == .init(epoch: 2, holder: "first", expired: false))

            // The first's lease is cut short; it expires by the database's clock.
            #expect(try first.renewLease(epoch: epoch, holder: "first", ttl: .milliseconds(200)))
            let taken = try acquireOnceExpired(second, holder: "second")
            #expect(taken == epoch + 1 && second.epoch == epoch + 1)
            #expect(try place.strings("SELECT value FROM meta WHERE key = 'epoch'") == ["3"])

            let refused = #expect(throws: JournalError.self) { try first.write(submitting("late")) }
            #expect(refused?.code == .deposed)
            #expect(refused?.exitCode == 75)
            #expect(refused?.message.contains("epoch 3, held by \"second\"") == true, "\(refused?.message ?? "")")
            #expect(try place.strings("SELECT count(*) FROM groups WHERE id = 'late'") == ["0"])
            let pruneRefused = #expect(throws: JournalError.self) { _ = try first.prune(finishedBefore: at(100)) }
            #expect(pruneRefused?.code == .deposed)
            #expect(try place.strings("SELECT id FROM groups") == ["before"])
            #expect(try first.renewLease(epoch: epoch, holder: "first", ttl: .seconds(60)) == false)

            try second.write(submitting("late"))
            #expect(try second.load().groups.map(\.id) == ["before", "late"])
            #expect(try second.prune(finishedBefore: at(100)) == ["before"])
        }
    }

    /// Stores racing for a free lease: exactly one takes it, with epoch 1; the others see it
    /// held (the lease row is locked while one takes it).
    @Test func ofStoresRacingForTheLeaseExactlyOneTakesIt() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let stores = try (0..<4).map { _ in try leader(place) }
            defer { for store in stores { store.close() } }
            let results = Mutex<[Result<UInt64?, JournalError>]>([])
            DispatchQueue.concurrentPerform(iterations: stores.count) { index in
                let result = Result { () throws(JournalError) -> UInt64? in
                    try stores[index].acquireLease(holder: "store-\(index)", ttl: .seconds(60))
                }
                results.withLock { $0.append(result) }
            }
            let epochs = try results.withLock { $0 }.map { try $0.get() }
            #expect(epochs.compactMap { $0 } == [1], "\(epochs)")
            #expect(try place.strings("SELECT epoch FROM lease") == ["1"])
        }
    }

    /// A leader that stops cleanly releases the lease: the next takes it at once, with the
    /// next epoch, and the released store writes no more.
    @Test func aReleasedLeaseIsTakenAtOnce() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let first = try leader(place)
            defer { first.close() }
            let second = try leader(place)
            defer { second.close() }
            let epoch = try #require(try first.acquireLease(holder: "first", ttl: .seconds(60)))
            #expect(epoch == 1, "a new journal's first lease")
            try first.releaseLease()
            #expect(try first.currentLease() == .init(epoch: 1, holder: nil, expired: true))
            #expect(try second.acquireLease(holder: "second", ttl: .seconds(60)) == 2)
            let refused = #expect(throws: JournalError.self) { try first.write(submitting("g")) }
            #expect(refused?.code == .deposed)
            #expect(try place.strings("SELECT count(*) FROM groups") == ["0"])
        }
    }

    /// Without leadership nothing changes: a store opened for serving writes whoever holds
    /// the lease (one coordinator per database, as before), and has no lease to take.
    @Test func aStoreNotOpenedForLeadershipNeitherChecksNorTakesTheLease() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let leading = try leader(place)
            defer { leading.close() }
            #expect(try leading.acquireLease(holder: "leader", ttl: .seconds(60)) == 1)
            let serving = try PostgresJournal(url: try PostgresConnectionURL(place.location))
            defer { serving.close() }
            try serving.write(submitting("g"))
            #expect(try place.strings("SELECT id FROM groups") == ["g"])
            let error = #expect(throws: JournalError.self) {
                _ = try serving.acquireLease(holder: "serving", ttl: .seconds(60))
            }
            #expect(error?.code == .unusable)
            #expect(error?.message.contains("opened for leadership") == true)
        }
    }

    /// A connection the server ended (a restart or failover of the database) is opened again
    /// at the next call: a standby's try for the lease, a leader's renewal and its writes work
    /// again instead of failing on the dead connection for good.
    @Test func storesConnectAgainAfterTheServerEndsTheirConnections() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let leading = try leader(place)
            defer { leading.close() }
            let standby = try leader(place)
            defer { standby.close() }
            let epoch = try #require(try leading.acquireLease(holder: "leader", ttl: .seconds(60)))
            #expect(try standby.acquireLease(holder: "standby", ttl: .seconds(60)) == nil)
            try place.execute(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                """)
            #expect(try afterReconnecting { try standby.leaseHolder().holder } == "leader")
            #expect(
                try afterReconnecting {
                    try leading.renewLease(epoch: epoch, holder: "leader", ttl: .seconds(60))
                })
            try leading.write(submitting("after"))
            #expect(try standby.acquireLease(holder: "standby", ttl: .seconds(60)) == nil)
            #expect(try place.strings("SELECT id FROM groups") == ["after"])
        }
    }

    /// Another connection holds the lease row locked (a process paused while holding it): the
    /// leader's renewal, and a standby's try, give up within a quarter of the lease (plus
    /// round trips) rather than wait for the lock until the lease is gone, and fail
    /// `unreachable` (tried again, not the journal `damaged`) without giving the connection
    /// up; once the lock is gone the leader renews. A standby's try that
    /// finds the lease live leaves the row unlocked: the leader renews right after it.
    @Test func aLockedLeaseRowHoldsTheRenewalUpForLessThanItsInterval() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let leading = try leader(place)
            defer { leading.close() }
            let standby = try leader(place)
            defer { standby.close() }
            let ttl: Duration = .seconds(3)
            let epoch = try #require(try leading.acquireLease(holder: "leader", ttl: ttl))
            #expect(try standby.acquireLease(holder: "standby", ttl: ttl) == nil)
            #expect(try leading.renewLease(epoch: epoch, holder: "leader", ttl: ttl))

            let holding = DispatchGroup()
            DispatchQueue.global().async(group: holding) {
                _ = try? place.execute("BEGIN; SELECT 1 FROM lease FOR UPDATE; SELECT pg_sleep(8); COMMIT")
            }
            defer {
                _ = try? place.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(8)%' "
                        + "AND pid <> pg_backend_pid()")
                holding.wait()
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while try place.strings(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(8)%' "
                    + "AND pid <> pg_backend_pid()") != ["1"]
            {
                guard ContinuousClock.now < deadline else { throw JournalError(.unusable, path: "", "no lock held") }
                usleep(5_000)
            }
            // The bound: a quarter of the lease, and round trips; well under a lease/3 + slack.
            let bound = ttl / 4 + .milliseconds(400)
            let renewing = ContinuousClock.now
            let renewal = #expect(throws: JournalError.self) {
                try leading.renewLease(epoch: epoch, holder: "leader", ttl: ttl)
            }
            let renewTook = renewing.duration(to: .now)
            #expect(renewTook < bound, "the renewal waited \(renewTook) for the locked lease row")
            // A lock or statement timeout is worth trying again (`unreachable`, as a connection
            // lost), not the journal `damaged`.
            #expect(
                renewal?.code == .unreachable && renewal?.message.contains("timeout") == true
                    && (renewal?.message.contains("SQLSTATE 55P03") == true
                        || renewal?.message.contains("SQLSTATE 57014") == true),
                "\(String(describing: renewal))")
            let trying = ContinuousClock.now
            // The lease is live: the try finds it so without waiting for the row's lock.
            #expect(try standby.acquireLease(holder: "standby", ttl: ttl) == nil)
            let tryTook = trying.duration(to: .now)
            #expect(tryTook < bound, "the standby's try waited \(tryTook) for the locked lease row")

            try place.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(8)%' "
                    + "AND pid <> pg_backend_pid()")
            holding.wait()
            #expect(try leading.renewLease(epoch: epoch, holder: "leader", ttl: ttl), "the same connection renews")
            #expect(try standby.acquireLease(holder: "standby", ttl: ttl) == nil)
            let afterTry = ContinuousClock.now
            #expect(try leading.renewLease(epoch: epoch, holder: "leader", ttl: ttl))
            #expect(afterTry.duration(to: .now) < bound)
        }
    }

    /// The lease bounds only the lease's own statements: a leader's load (and write) that
    /// takes longer than the lease, here held up by a table lock for 3 s with a 1 s lease,
    /// still gets its answer instead of giving the connection up (a coordinator whose journal
    /// is slow to load would otherwise fail at every start).
    @Test func aLoadLongerThanTheLeaseSucceedsAfterTheLeaseWasAcquired() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let leading = try leader(place)
            defer { leading.close() }
            let ttl: Duration = .seconds(1)
            let epoch = try #require(try leading.acquireLease(holder: "leader", ttl: ttl))
            try leading.write(submitting("g"))
            let holding = DispatchGroup()
            defer { holding.wait() }
            try lock("groups", for: 3, in: place, until: holding)
            let loading = ContinuousClock.now
            let contents = try leading.load()
            let took = loading.duration(to: .now)
            #expect(took > ttl, "the load waited \(took) for the table lock: longer than the lease")
            #expect(contents.groups.map(\.id) == ["g"])
            // The connection was kept: the lease's statements work on it (the lease lapsed, but
            // nobody took it, so it is still this store's).
            #expect(try leading.renewLease(epoch: epoch, holder: "leader", ttl: ttl))
            try leading.write(submitting("h"))
            #expect(try place.strings("SELECT id FROM groups ORDER BY id") == ["g", "h"])
        }
    }

    /// Holds `table` locked (ACCESS EXCLUSIVE) from another connection for `seconds`, in the
    /// background, and returns once the lock is granted; the group ends with it.
    func lock(_ table: String, for seconds: Int, in place: JournalPlace, until holding: DispatchGroup) throws {
        DispatchQueue.global().async(group: holding) {
            _ = try? place.execute(
                "BEGIN; LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(\(seconds)); COMMIT")
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while try place.strings(
            "SELECT count(*) FROM pg_locks WHERE relation = '\(table)'::regclass AND mode = 'AccessExclusiveLock' "
                + "AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")
            != ["1"]
        {
            guard ContinuousClock.now < deadline else { throw JournalError(.unusable, path: "", "no lock held") }
            usleep(5_000)
        }
    }

    /// A leader's write waits at most its lease for an answer (its renewal waits behind it on
    /// the one connection, and past the lease it has lost the lease anyway), not the 30 s
    /// every other store waits: it fails `unreachable` and commits nothing, and the store
    /// connects again and writes once the table is free.
    @Test func aLeadersWriteWaitsAtMostItsLeaseForAnAnswer() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let leading = try leader(place)
            defer { leading.close() }
            let ttl: Duration = .seconds(1)
            let epoch = try #require(try leading.acquireLease(holder: "leader", ttl: ttl))
            try leading.write(submitting("g"))
            let holding = DispatchGroup()
            try lock("groups", for: 4, in: place, until: holding)
            let writing = ContinuousClock.now
            let failure = #expect(throws: JournalError.self) { try leading.write(submitting("h")) }
            let took = writing.duration(to: .now)
            #expect(failure?.code == .unreachable, "\(failure.map { "\($0)" } ?? "")")
            #expect(took < ttl + .milliseconds(800), "the write waited \(took) for the locked table")
            holding.wait()
            // Nobody took the lease meanwhile: still this store's, on a new connection.
            #expect(try leading.renewLease(epoch: epoch, holder: "leader", ttl: ttl))
            try leading.write(submitting("i"))
            #expect(try place.strings("SELECT id FROM groups ORDER BY id") == ["g", "i"])
        }
    }

    /// A statement cancelled by the server or an operator (`pg_cancel_backend`, SQLSTATE
    /// 57014) outside the lease's own statements is the journal's failure (`damaged`, exit 74
    /// without --standby), not an outage to wait out: only the lease's statements, which set
    /// their own lock and statement timeouts, take those codes for `unreachable`.
    @Test func aWriteAnOperatorCancelsIsNotTakenForAnOutage() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let leading = try leader(place)
            defer { leading.close() }
            _ = try #require(try leading.acquireLease(holder: "leader", ttl: .seconds(30)))
            let holding = DispatchGroup()
            try lock("groups", for: 4, in: place, until: holding)
            defer { holding.wait() }
            let failure = Mutex<JournalError?>(nil)
            let writing = DispatchGroup()
            DispatchQueue.global().async(group: writing) {
                do { try leading.write(submitting("h")) } catch let error as JournalError {
                    failure.withLock { $0 = error }
                } catch {}
            }
            // The write waits for the table: cancel it as an operator would.
            let deadline = ContinuousClock.now + .seconds(10)
            while try place.strings(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' "
                    + "AND query LIKE 'INSERT%'")
                != ["1"]
            {
                guard ContinuousClock.now < deadline else { throw JournalError(.unusable, path: "", "no write waits") }
                usleep(5_000)
            }
            try place.execute(
                "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                    + "AND wait_event_type = 'Lock' "
                    + "AND query LIKE 'INSERT%'")
            writing.wait()
            let error = try #require(failure.withLock { $0 })
            #expect(error.code == .damaged && error.message.contains("57014"), "\(error)")
        }
    }

    /// A try for an expired lease whose row another connection holds locked (`FOR UPDATE`)
    /// gives up within a quarter of the lease with a lock (or statement) timeout, SQLSTATE
    /// 55P03 (or 57014), that is
    /// `unreachable`, tried again (a coordinator without --standby retries instead of exiting
    /// 74 for a damaged journal), and takes the lease once the lock is gone.
    @Test func aTryForALockedExpiredLeaseFailsToBeTriedAgain() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let first = try leader(place)
            defer { first.close() }
            let second = try leader(place)
            defer { second.close() }
            let ttl: Duration = .seconds(2)
            #expect(try first.acquireLease(holder: "first", ttl: .milliseconds(300)) == 1)
            let holding = DispatchGroup()
            DispatchQueue.global().async(group: holding) {
                _ = try? place.execute("BEGIN; SELECT 1 FROM lease FOR UPDATE; SELECT pg_sleep(9); COMMIT")
            }
            let ending =
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(9)%' "
                + "AND pid <> pg_backend_pid()"
            defer {
                _ = try? place.execute(ending)
                holding.wait()
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while try place.strings(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(9)%' "
                    + "AND pid <> pg_backend_pid()") != ["1"]
                || place.strings("SELECT expires_at <= clock_timestamp() FROM lease") != ["t"]
            {
                guard ContinuousClock.now < deadline else { throw JournalError(.unusable, path: "", "no lock held") }
                usleep(5_000)
            }
            let error = #expect(throws: JournalError.self) { try second.acquireLease(holder: "second", ttl: ttl) }
            #expect(error?.code == .unreachable, "\(String(describing: error))")
            #expect(
                error?.message.contains("SQLSTATE 55P03") == true || error?.message.contains("SQLSTATE 57014") == true,
                "\(String(describing: error))")
            try place.execute(ending)
            holding.wait()
            #expect(try second.acquireLease(holder: "second", ttl: ttl) == 2, "tried again, it takes the lease")
        }
    }

    /// `call`'s result once it reaches the database: a call that finds its connection ended
    /// fails `unreachable` (the next connects again); fails if none succeeds within 5 s.
    func afterReconnecting<T>(_ call: () throws -> T) throws -> T {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            do {
                return try call()
            } catch let error as JournalError where error.code == .unreachable && ContinuousClock.now < deadline {
                usleep(10_000)
            }
        }
    }
}
