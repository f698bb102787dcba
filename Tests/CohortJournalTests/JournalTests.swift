import CohortCore
import CohortSpec
import Foundation
import GRDB
import Testing

@testable import CohortJournal

/// A state directory of its own under the temporary directory, removed at the end.
func withStateDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-journal-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

let sampleSpec = try! SpecParser.parse(
    text: """
        name: release
        children:
          - { name: version, run: echo, with: { value: "1.2.3" } }
          - { name: build, run: shell, after: [version], exclusive: [repo], with: { command: [make] } }
        """)

func at(_ seconds: Int64) -> Timestamp { Timestamp(nanosecondsSinceEpoch: seconds * 1_000_000_000) }

@Suite struct JournalTests {
    /// The durability setting is the one asked for (GRDB's WAL set-up sets NORMAL on its own).
    @Test(arguments: [(JournalSynchronous.full, 2), (.normal, 1)])
    func theSynchronousSettingIsApplied(_ setting: JournalSynchronous, _ pragma: Int) throws {
        try withStateDirectory { path in
            let journal = try Journal(directory: try StateDirectory(path: path), synchronous: setting)
            defer { journal.close() }
            #expect(try journal.database.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == pragma)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func theEpochGrowsAtEveryOpen(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            for expected in 1...3 as ClosedRange<UInt64> {
                let journal = try place.open()
                #expect(journal.epoch == expected)
                journal.close()
            }
            // Maintenance (`cohort prune`) does not start an incarnation.
            let maintenance = try place.openExisting()
            #expect(maintenance.epoch == 3)
            maintenance.close()
            let journal = try place.open()
            #expect(journal.epoch == 4)
            journal.close()
        }
    }

    @Test(arguments: StoreKind.allCases)
    func whatATurnWroteIsLoadedBack(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            do {
                let journal = try place.open()
                defer { journal.close() }
                var batch = JournalBatch()
                batch.submissions.append(.init(id: "r1", spec: sampleSpec, submittedAt: at(10), owner: "client-key"))
                batch.submissions.append(.init(id: "done", spec: sampleSpec, submittedAt: at(11)))
                batch.dispatches.append(
                    ChildRecord(
                        group: "r1", path: "build", attempt: 2, attemptID: AttemptID(1 << 32 | 7), state: .inFlight,
                        worker: "w1",
                        tokens: ["repo": 1 << 32 | 3]))
                batch.finishes.append(
                    ChildRecord(
                        group: "r1", path: "version", attempt: 1, attemptID: 0, state: .finished(.succeeded),
                        output: Data(#"{"value":"1.2.3"}"#.utf8), worker: "w2", startedAt: at(12), finishedAt: at(13)))
                batch.outcomes.append(("done", .cancelled, "cancelled by alice", nil, at(14)))
                batch.cancels.append(("done", "", "cancelled by alice", at(14)))
                batch.fencing["repo"] = 1 << 32 | 3
                try journal.write(batch)
            }
            let journal = try place.open()
            defer { journal.close() }
            let contents = try journal.load()
            #expect(contents.groups.map(\.id) == ["r1", "done"])
            #expect(contents.lastTokens == ["repo": 1 << 32 | 3])
            let r1 = try #require(contents.groups.first)
            #expect(r1.spec == sampleSpec)
            #expect(r1.outcome == nil)
            #expect(r1.submittedAt == at(10))
            #expect(r1.owner == "client-key")
            let build = try #require(r1.children.first { $0.path == "build" })
            #expect(build.state == .inFlight)
            #expect(build.attempt == 2)
            #expect(build.attemptID == AttemptID(1 << 32 | 7))
            #expect(build.tokens == ["repo": 1 << 32 | 3])
            let version = try #require(r1.children.first { $0.path == "version" })
            #expect(version.state == .finished(.succeeded))
            #expect(version.output == Data(#"{"value":"1.2.3"}"#.utf8))
            #expect(version.worker == "w2")
            #expect(version.finishedAt == at(13))
            let done = contents.groups[1]
            #expect(done.outcome?.phase == .cancelled)
            #expect(done.outcome?.reason == "cancelled by alice")
            #expect(done.cancels.map(\.reason) == ["cancelled by alice"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func truncatedOutputsAndLocalGrantsAreLoadedBackUntilReleased(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let record = LocalLockRecord(
                group: "r1", path: "build", attempt: 1, attemptID: 7, request: 3, tokens: ["db": 2 << 32 | 1])
            do {
                let journal = try place.open()
                defer { journal.close() }
                var batch = JournalBatch()
                batch.submissions.append(.init(id: "r1", spec: sampleSpec, submittedAt: at(1)))
                batch.finishes.append(
                    ChildRecord(
                        group: "r1", path: "version", attempt: 1, attemptID: 0, state: .finished(.succeeded),
                        output: Data("{}".utf8), outputTruncated: true, finishedAt: at(2)))
                batch.dispatches.append(
                    ChildRecord(group: "r1", path: "build", attempt: 1, attemptID: 7, state: .inFlight))
                batch.localLocks = [
                    .granted(record),
                    .granted(
                        LocalLockRecord(
                            group: "r1", path: "build", attempt: 1, attemptID: 7, request: 4, tokens: ["x": 9])),
                    .released(attemptID: 7, request: 4),
                ]
                try journal.write(batch)
            }
            let journal = try place.open()
            defer { journal.close() }
            let group = try journal.load().groups[0]
            #expect(group.children.first { $0.path == "version" }?.outputTruncated == true)
            #expect(group.children.first { $0.path == "build" }?.outputTruncated == false)
            #expect(group.localLocks == [record])
            var batch = JournalBatch()
            batch.localLocks = [.released(attemptID: 7, request: 3)]
            try journal.write(batch)
            #expect(try journal.load().groups[0].localLocks.isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aLaterAttemptSupersedesTheEarlierInFlightOne(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            defer { journal.close() }
            var batch = JournalBatch()
            batch.submissions.append(.init(id: "r1", spec: sampleSpec, submittedAt: at(1)))
            batch.dispatches.append(
                ChildRecord(group: "r1", path: "version", attempt: 1, attemptID: 5, state: .inFlight))
            try journal.write(batch)
            batch = JournalBatch()
            batch.dispatches.append(
                ChildRecord(group: "r1", path: "version", attempt: 2, attemptID: 9, state: .inFlight))
            try journal.write(batch)
            let states = try place.strings("SELECT state FROM attempts ORDER BY attempt")
            #expect(states == ["ended", "in-flight"])
            #expect(try journal.load().groups[0].children.map(\.attempt) == [2])
        }
    }

    /// The workers a child had lost when an attempt was sent come back with the attempt
    /// (issue 12, item 4): a restarted coordinator keeps its worker-loss and retry budgets apart.
    @Test(arguments: StoreKind.allCases)
    func anAttemptsWorkerLossesAreLoadedBack(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            defer { journal.close() }
            var batch = JournalBatch()
            batch.submissions.append(.init(id: "r1", spec: sampleSpec, submittedAt: at(1)))
            batch.dispatches.append(
                ChildRecord(
                    group: "r1", path: "version", attempt: 4, attemptID: 5, state: .inFlight, losses: 2, counted: 1))
            try journal.write(batch)
            let child = try journal.load().groups[0].children.first
            #expect(child?.losses == 2 && child?.counted == 1)
        }
    }

    @Test func aSecondCoordinatorCannotTakeTheStateDirectory() throws {
        try withStateDirectory { path in
            let first = try StateDirectory(path: path)
            let error = #expect(throws: JournalError.self) { try StateDirectory(path: path) }
            #expect(error?.code == .locked)
            #expect(error?.message.contains("pid \(getpid())") == true)
            #expect(error?.exitCode == 75)
            _ = first
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pruningDeletesOnlyGroupsFinishedBeforeTheCutoff(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            defer { journal.close() }
            var batch = JournalBatch()
            for id in ["old", "recent", "running"] {
                batch.submissions.append(.init(id: id, spec: sampleSpec, submittedAt: at(1)))
                batch.finishes.append(
                    ChildRecord(
                        group: id, path: "version", attempt: 1, attemptID: 0, state: .finished(.succeeded),
                        finishedAt: at(2)))
            }
            batch.outcomes.append(("old", .succeeded, nil, nil, at(100)))
            batch.outcomes.append(("recent", .succeeded, nil, nil, at(300)))
            try journal.write(batch)
            #expect(try journal.prune(finishedBefore: at(200)) == ["old"])
            #expect(try journal.load().groups.map(\.id) == ["recent", "running"])
            #expect(try place.strings("SELECT count(*) FROM attempts WHERE group_id = 'old'") == ["0"])
            // Loading with a retention cutoff leaves older finished groups out.
            #expect(try journal.load(finishedSince: at(400)).groups.map(\.id) == ["running"])
        }
    }
}

@Suite struct DamagedJournalTests {
    /// A journal with one group, closed (its write-ahead log checkpointed into the file).
    func writtenJournal(_ path: String) throws -> String {
        let journal = try Journal(directory: try StateDirectory(path: path))
        var batch = JournalBatch()
        for index in 0..<50 {
            batch.submissions.append(.init(id: "g\(index)", spec: sampleSpec, submittedAt: at(1)))
        }
        try journal.write(batch)
        journal.close()
        return journal.path
    }

    /// The journal in `path` opened as a coordinator opens it, which migrates an older one:
    /// it is at the current schema version afterwards.
    func reopenedAtTheCurrentVersion(_ path: String) throws -> Journal {
        let journal = try Journal(directory: try StateDirectory(path: path))
        let version = try journal.database.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'schemaVersion'")
        }
        #expect(version == String(JournalSchema.version))
        return journal
    }

    func openError(_ path: String) -> JournalError? {
        #expect(throws: JournalError.self) {
            let directory = try StateDirectory(path: path)
            _ = try Journal(directory: directory)
        }
    }

    @Test func aTruncatedJournalIsRefusedNamingTheFile() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
            let handle = try #require(FileHandle(forUpdatingAtPath: file))
            try handle.truncate(atOffset: UInt64(size / 2))
            try handle.close()
            let error = try #require(openError(path))
            #expect(error.code == .damaged)
            #expect(error.path == file)
            #expect(error.exitCode == 74)
            // Nothing was replaced: the damaged file is still there, as it was.
            #expect(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int == size / 2)
        }
    }

    @Test func anEmptyJournalFileIsRefused() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            try Data().write(to: URL(fileURLWithPath: file))
            let error = try #require(openError(path))
            #expect(error.code == .damaged)
            #expect(error.description.contains(file))
        }
    }

    @Test func aJournalFullOfGarbageIsRefused() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            var generator = SystemRandomNumberGenerator()
            try Data((0..<65536).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(
                to: URL(fileURLWithPath: file))
            let error = try #require(openError(path))
            #expect(error.code == .damaged)
            #expect(error.description.contains(file))
        }
    }

    /// Turns a journal of the current schema into what version 6 wrote: no cancel codes.
    static func makeVersion6(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE attempts DROP COLUMN cancel_code")
        try db.execute(sql: "ALTER TABLE attempts DROP COLUMN cancel_reason")
        try db.execute(sql: "ALTER TABLE groups DROP COLUMN reason_code")
        try db.execute(sql: "ALTER TABLE cancels DROP COLUMN code")
        try db.execute(sql: "UPDATE meta SET value = '6' WHERE key = 'schemaVersion'")
    }

    /// A version-6 journal gets the cancel codes; its cancelled children, outcomes and cancels,
    /// written without codes, read as none (`custom` with their words after a restore), and
    /// those written after the migration keep theirs.
    @Test func aVersion6JournalIsMigratedAndItsOldRowsHaveNoCodes() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            let old = try Journal.openExisting(at: file)
            try old.database.write { db in
                try Self.makeVersion6(db)
                try db.execute(
                    sql: """
                        INSERT INTO attempts (group_id, path, attempt, attempt_id, state, error)
                        VALUES ('g0', 'a', 1, 0, 'cancelled', 'cancelled by alice')
                        """)
                try db.execute(sql: "INSERT INTO cancels (group_id, path, reason, at) VALUES ('g0', 'a', 'stop', 1)")
            }
            old.close()
            let journal = try reopenedAtTheCurrentVersion(path)
            defer { journal.close() }
            var group = try #require(try journal.load().groups.first { $0.id == "g0" })
            #expect(group.children.first { $0.path == "a" }?.cancelReason == nil)
            #expect(group.cancels.map(\.reason) == [.custom("stop")])
            var batch = JournalBatch()
            batch.append(.cancelRequested(group: "g0", path: "", reason: .cancelledByClient("bob"), at: .zero))
            try journal.write(batch)
            group = try #require(try journal.load().groups.first { $0.id == "g0" })
            #expect(group.cancels.map(\.reason) == [.custom("stop"), .cancelledByClient("bob")])
        }
    }

    /// Turns a journal of the current schema into what version 5 wrote: no `additions`.
    static func makeVersion5(_ db: Database) throws {
        try makeVersion6(db)
        try db.execute(sql: "DROP INDEX additions_by_group")
        try db.execute(sql: "DROP TABLE additions")
        try db.execute(sql: "UPDATE meta SET value = '5' WHERE key = 'schemaVersion'")
    }

    /// A version-5 journal gets the `additions` table, and additions written then are read
    /// back in order with their children.
    @Test func aVersion5JournalIsMigratedAndKeepsAdditions() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            let old = try Journal.openExisting(at: file)
            try old.database.write { db in try Self.makeVersion5(db) }
            old.close()
            let journal = try reopenedAtTheCurrentVersion(path)
            defer { journal.close() }
            var batch = JournalBatch()
            let first = ChildSpec(name: "late", body: .procedure(.init(run: "echo")), after: ["a"])
            let second = ChildSpec(name: "later", body: .procedure(.init(run: "echo")))
            batch.append(
                .childrenAdded(group: "g0", into: "", children: [first], at: Timestamp(nanosecondsSinceEpoch: 5)))
            batch.append(
                .childrenAdded(group: "g0", into: "", children: [second], at: Timestamp(nanosecondsSinceEpoch: 6)))
            try journal.write(batch)
            let group = try #require(try journal.load().groups.first { $0.id == "g0" })
            #expect(group.additions.map(\.into) == ["", ""])
            #expect(group.additions.map { $0.children.map(\.name) } == [["late"], ["later"]])
            #expect(group.additions.first?.children.first?.after == ["a"])
        }
    }

    /// Turns a journal of the current schema into what version 4 wrote: no history indexes.
    static func makeVersion4(_ db: Database) throws {
        try makeVersion5(db)
        try db.execute(sql: "DROP INDEX groups_by_submission")
        try db.execute(sql: "DROP INDEX groups_by_state")
        try db.execute(sql: "UPDATE meta SET value = '4' WHERE key = 'schemaVersion'")
    }

    /// Turns a journal of the current schema into what version 3 wrote: no `attempts.losses`
    /// nor `attempts.counted`.
    static func makeVersion3(_ db: Database) throws {
        try makeVersion4(db)
        try db.execute(sql: "ALTER TABLE attempts DROP COLUMN losses")
        try db.execute(sql: "ALTER TABLE attempts DROP COLUMN counted")
        try db.execute(sql: "UPDATE meta SET value = '3' WHERE key = 'schemaVersion'")
    }

    /// Turns a journal of the current schema into what version 2 wrote: the attempt's id in a
    /// column called `task_id`.
    static func makeVersion2(_ db: Database) throws {
        try makeVersion3(db)
        try db.execute(sql: "DROP VIEW grants")
        try db.execute(sql: "ALTER TABLE attempts RENAME COLUMN attempt_id TO task_id")
        try db.execute(sql: "ALTER TABLE local_locks RENAME COLUMN attempt_id TO task_id")
        try db.execute(
            sql: """
                CREATE VIEW grants AS SELECT group_id, path, attempt, task_id, worker, tokens FROM attempts
                WHERE state = 'in-flight' AND tokens IS NOT NULL
                """)
        try db.execute(sql: "UPDATE meta SET value = '2' WHERE key = 'schemaVersion'")
    }

    @Test func aVersion3JournalIsMigratedWithNoLosses() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            let old = try Journal.openExisting(at: file)
            var batch = JournalBatch()
            batch.dispatches.append(
                ChildRecord(group: "g0", path: "version", attempt: 2, attemptID: 78, state: .inFlight, worker: "w-1"))
            try old.write(batch)
            try old.database.write { db in try Self.makeVersion3(db) }
            old.close()
            let journal = try reopenedAtTheCurrentVersion(path)
            defer { journal.close() }
            let child = try journal.load().groups.first { $0.id == "g0" }?.children.first
            #expect(child?.attempt == 2 && child?.losses == 0 && child?.counted == nil)
        }
    }

    @Test func aVersion2JournalIsMigratedAndKeepsItsAttemptIDsAndLocalLocks() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            let old = try Journal.openExisting(at: file)
            var batch = JournalBatch()
            batch.dispatches.append(
                ChildRecord(group: "g0", path: "version", attempt: 1, attemptID: 77, state: .inFlight, worker: "w-1"))
            batch.localLocks = [
                .granted(
                    LocalLockRecord(
                        group: "g0", path: "version", attempt: 1, attemptID: 77, request: 3, tokens: ["printer": 9]))
            ]
            try old.write(batch)
            try old.database.write { db in try Self.makeVersion2(db) }
            old.close()
            let journal = try Journal(directory: try StateDirectory(path: path))
            defer { journal.close() }
            let (version, view) = try journal.database.read { db in
                (
                    try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'schemaVersion'"),
                    try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'grants'")
                )
            }
            #expect(version == "7")
            #expect(view?.contains("attempt_id") == true)
            let record = try journal.database.read { db in
                try Row.fetchOne(db, sql: "SELECT attempt_id, request FROM local_locks")
            }
            #expect(record?["attempt_id"] == 77 && record?["request"] == 3)
            let attemptID = try journal.database.read { db in
                try Int.fetchOne(db, sql: "SELECT attempt_id FROM attempts WHERE group_id = 'g0' AND path = 'version'")
            }
            #expect(attemptID == 77)
            #expect(try journal.load().groups.contains { $0.id == "g0" })
        }
    }

    @Test func aVersion1JournalIsMigratedAndKeepsItsData() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            // Make it what the first release wrote: no output_truncated, no local_locks, version 1.
            let old = try Journal.openExisting(at: file)
            var finish = JournalBatch()
            finish.finishes.append(
                ChildRecord(
                    group: "g0", path: "version", attempt: 1, attemptID: 0, state: .finished(.succeeded),
                    output: Data("{}".utf8), outputTruncated: true, finishedAt: at(2)))
            try old.write(finish)
            let before = try old.load().groups.count
            try old.database.write { db in
                try Self.makeVersion2(db)
                try db.execute(sql: "ALTER TABLE attempts DROP COLUMN output_truncated")
                try db.execute(sql: "DROP TABLE local_locks")
                try db.execute(sql: "UPDATE meta SET value = '1' WHERE key = 'schemaVersion'")
            }
            old.close()
            let journal = try reopenedAtTheCurrentVersion(path)
            defer { journal.close() }
            let contents = try journal.load()
            #expect(contents.groups.count == before)
            let version1 = contents.groups.first { $0.id == "g0" }?.children.first
            #expect(version1?.output == Data("{}".utf8))
            #expect(version1?.outputTruncated == false)
            var batch = JournalBatch()
            batch.localLocks = [
                .granted(LocalLockRecord(group: "r1", path: "build", attempt: 1, attemptID: 1, request: 1, tokens: [:]))
            ]
            try journal.write(batch)
        }
    }

    @Test func anotherSchemaVersionIsRefused() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            let journal = try Journal.openExisting(at: file)
            try journal.database.write { db in
                try db.execute(sql: "UPDATE meta SET value = '99' WHERE key = 'schemaVersion'")
            }
            journal.close()
            let error = try #require(openError(path))
            #expect(error.code == .schemaVersion)
            #expect(error.message.contains("99"))
        }
    }

    @Test func aWriteAheadLogWithoutItsJournalIsRefused() throws {
        try withStateDirectory { path in
            let file = try writtenJournal(path)
            try FileManager.default.moveItem(atPath: file, toPath: file + "-wal")
            let error = try #require(openError(path))
            #expect(error.code == .damaged)
            #expect(!FileManager.default.fileExists(atPath: file))
        }
    }
}
