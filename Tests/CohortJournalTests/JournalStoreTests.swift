import CohortCore
import CohortJournal
import CohortJournalPostgres
import CohortSpec
import CohortTestSupport
import Foundation
import Testing

/// What every journal store must do the same way (SQLite and PostgreSQL), and what only
/// PostgreSQL's opening has to say (its URL, its server, its credentials).
@Suite struct JournalStoreTests {
    /// `cohort rerun`'s read: the spec, how the group finished, the outputs of what succeeded
    /// with its whole output (the latest attempt of each child counts).
    @Test(arguments: StoreKind.allCases)
    func theRerunSourceHasTheSpecAndTheWholeOutputsOfWhatSucceeded(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            defer { journal.close() }
            var batch = JournalBatch()
            batch.submissions.append(.init(id: "r1", spec: sampleSpec, submittedAt: at(1)))
            func finished(_ path: String, _ attempt: UInt32, _ phase: ChildPhase, _ output: String?, cut: Bool = false)
                -> ChildRecord
            {
                ChildRecord(
                    group: "r1", path: path, attempt: attempt, attemptID: 0, state: .finished(phase),
                    output: output.map { Data($0.utf8) }, outputTruncated: cut, finishedAt: at(2))
            }
            batch.finishes = [
                finished("version", 1, .failed, nil), finished("version", 2, .succeeded, #"{"v":1}"#),
                finished("build", 1, .succeeded, "{}", cut: true),
            ]
            try journal.write(batch)
            let reader = try journal.openReader()
            defer { reader.close() }
            let running = try #require(try reader.rerunSource(group: "r1"))
            #expect(running.phase == nil)
            #expect(running.spec == sampleSpec)
            #expect(running.outputs == ["version": Data(#"{"v":1}"#.utf8)])
            batch = JournalBatch()
            batch.outcomes.append(("r1", .failed, "build failed", nil, at(3)))
            try journal.write(batch)
            #expect(try reader.rerunSource(group: "r1")?.phase == .failed)
            #expect(try reader.rerunSource(group: "nope") == nil)
        }
    }

    /// A cancel reason is written as its code and its words and loaded back equal: a child's
    /// (also one whose `error` says more than its reason), the group's outcome code, a cancel
    /// a client asked for; a row without a code (written before the codes) reads as none.
    @Test(arguments: StoreKind.allCases)
    func cancelReasonsAreLoadedBackWithTheirCodes(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            defer { journal.close() }
            let timedOut = CancellationReason.timedOut
            let producer = CancellationReason.producerFailed(path: "version")
            let alice = CancellationReason.cancelledByClient("alice")
            var batch = JournalBatch()
            batch.submissions.append(.init(id: "c1", spec: sampleSpec, submittedAt: at(1)))
            batch.append(.cancelRequested(group: "c1", path: "build", reason: alice, at: at(2)))
            batch.append(.cancelRequested(group: "c1", path: "", reason: "my own words", at: at(3)))
            func finished(_ path: String, _ phase: ChildPhase, error: String, _ reason: CancellationReason?)
                -> ChildRecord
            {
                ChildRecord(
                    group: "c1", path: path, attempt: 2, attemptID: 0, state: .finished(phase), error: error,
                    cancelReason: reason, finishedAt: at(4))
            }
            batch.append(
                .finished(finished("version", .cancelled, error: "attempt 1: boom; attempt 2: timed out", timedOut)))
            batch.append(.finished(finished("build", .cancelled, error: producer.text, producer)))
            batch.append(.finished(finished("publish", .failed, error: "exit code 1", nil)))
            batch.append(.groupFinished(id: "c1", .cancelled, reason: "timed out", code: .timedOut, at: at(5)))
            try journal.write(batch)

            let group = try #require(try journal.load().groups.first { $0.id == "c1" })
            let children = Dictionary(uniqueKeysWithValues: group.children.map { ($0.path, $0) })
            #expect(children["version"]?.cancelReason == timedOut)
            #expect(children["version"]?.error == "attempt 1: boom; attempt 2: timed out")
            #expect(children["build"]?.cancelReason == producer)
            #expect(children["publish"]?.cancelReason == nil)
            #expect(group.outcomeCode == .timedOut && group.outcome?.reason == "timed out")
            #expect(group.cancels.map(\.path) == ["build", ""])
            #expect(group.cancels.map(\.reason) == [alice, .custom("my own words")])
            #expect(try place.strings("SELECT cancel_code FROM attempts WHERE path = 'build'") == ["producer-failed"])
        }
    }

    /// A spec whose last child is a nested group, so children can be added into it.
    static let staged = try! SpecParser.parse(
        text: """
            name: staged
            children:
              - { name: version, run: echo, with: { value: "1" } }
              - name: stage
                group:
                  children:
                    - { name: wait, run: echo }
            """)

    /// An addition's record: `names` added into `into`, each after `after`.
    static func added(_ group: String, into: String, _ names: [String], after: [String] = [], at time: Int64)
        -> JournalRecord
    {
        .childrenAdded(
            group: group, into: into,
            children: names.map { ChildSpec(name: $0, body: .procedure(.init(run: "echo")), after: after) },
            at: at(time))
    }

    /// Children added to running groups are loaded back with their group, in the order they
    /// were added (within a turn, across the turns of one write, across writes), each with
    /// where it went and its fields; a group's additions go with it when it is pruned.
    @Test(arguments: StoreKind.allCases)
    func childrenAddedToRunningGroupsAreLoadedBackInOrder(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            defer { journal.close() }
            var first = JournalBatch()
            first.submissions.append(.init(id: "g0", spec: Self.staged, submittedAt: at(1)))
            first.submissions.append(.init(id: "g1", spec: Self.staged, submittedAt: at(1)))
            first.append(Self.added("g0", into: "stage", ["more"], after: ["wait"], at: 2))
            first.append(Self.added("g1", into: "", ["other"], at: 2))
            first.append(Self.added("g0", into: "", ["extra", "extra2"], after: ["version"], at: 3))
            var second = JournalBatch()
            second.append(Self.added("g0", into: "", ["third"], at: 4))
            try journal.write([first, second])
            var third = JournalBatch()
            third.append(Self.added("g0", into: "stage", ["last"], at: 5))
            third.append(.groupFinished(id: "g1", .succeeded, reason: nil, at: at(6)))
            try journal.write(third)

            let groups = try journal.load().groups
            let g0 = try #require(groups.first { $0.id == "g0" })
            #expect(g0.additions.map(\.into) == ["stage", "", "", "stage"])
            #expect(
                g0.additions.map { $0.children.map(\.name) } == [["more"], ["extra", "extra2"], ["third"], ["last"]])
            #expect(g0.additions[0].children.first?.after == ["wait"])
            #expect(g0.additions[1].children.map(\.after) == [["version"], ["version"]])
            #expect(
                g0.additions[1].children.first
                    == ChildSpec(name: "extra", body: .procedure(.init(run: "echo")), after: ["version"]))
            let g1 = try #require(groups.first { $0.id == "g1" })
            #expect(g1.additions.map { $0.children.map(\.name) } == [["other"]])

            #expect(try journal.prune(finishedBefore: at(7)) == ["g1"])
            #expect(try place.strings("SELECT count(*) FROM additions WHERE group_id = 'g1'") == ["0"])
            #expect(try place.strings("SELECT count(*) FROM additions WHERE group_id = 'g0'") == ["4"])
            #expect(try journal.load().groups.map { $0.additions.count } == [4])
        }
    }

    /// `cohort rerun` of a group that grew reads the spec as the group ran: the submitted one
    /// with every addition in place, in order (a later addition may follow an earlier one).
    @Test(arguments: StoreKind.allCases)
    func theRerunSourceIsTheSpecAsTheGroupRanWithItsAdditions(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            defer { journal.close() }
            var batch = JournalBatch()
            batch.submissions.append(.init(id: "g0", spec: Self.staged, submittedAt: at(1)))
            batch.submissions.append(.init(id: "other", spec: Self.staged, submittedAt: at(1)))
            batch.append(Self.added("g0", into: "stage", ["more"], after: ["wait"], at: 2))
            batch.append(Self.added("other", into: "", ["elsewhere"], at: 2))
            try journal.write(batch)
            batch = JournalBatch()
            batch.append(Self.added("g0", into: "stage", ["after-more"], after: ["more"], at: 3))
            batch.append(Self.added("g0", into: "", ["extra"], after: ["stage"], at: 4))
            batch.append(.groupFinished(id: "g0", .succeeded, reason: nil, at: at(5)))
            try journal.write(batch)

            let reader = try journal.openReader()
            defer { reader.close() }
            let source = try #require(try reader.rerunSource(group: "g0"))
            var expected = Self.staged
            for (into, names, after) in [
                ("stage", ["more"], ["wait"]), ("stage", ["after-more"], ["more"]), ("", ["extra"], ["stage"]),
            ] {
                expected = try expected.adding(
                    names.map { ChildSpec(name: $0, body: .procedure(.init(run: "echo")), after: after) }, into: into)
            }
            #expect(source.spec == expected)
            #expect(source.spec.children.map(\.name) == ["version", "stage", "extra"])
            #expect(source.spec.children(at: "stage")?.map(\.name) == ["wait", "more", "after-more"])
            #expect(source.phase == .succeeded)
            // Another group's additions stay with it.
            #expect(
                try reader.rerunSource(group: "other")?.spec.children.map(\.name) == ["version", "stage", "elsewhere"])
        }
    }

    /// Several turns in one write (a group commit) end as if written one by one: a dispatch and
    /// its finish, a retry superseding its first attempt, a grant made and released, the
    /// largest token.
    @Test(arguments: StoreKind.allCases)
    func turnsWrittenTogetherEndAsIfWrittenOneByOne(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            defer { journal.close() }
            var first = JournalBatch()
            first.submissions.append(.init(id: "r1", spec: sampleSpec, submittedAt: at(1)))
            first.append(
                .dispatched(
                    ChildRecord(
                        group: "r1", path: "version", attempt: 1, attemptID: 5, state: .inFlight, worker: "w1",
                        tokens: ["repo": 10])))
            first.append(
                .localLock(
                    .granted(
                        LocalLockRecord(group: "r1", path: "version", attempt: 1, attemptID: 5, request: 1, tokens: [:])
                    )))
            var second = JournalBatch()
            second.append(
                .dispatched(
                    ChildRecord(
                        group: "r1", path: "version", attempt: 2, attemptID: 6, state: .inFlight, worker: "w2",
                        tokens: ["repo": 12])))
            second.append(.localLock(.released(attemptID: 5, request: 1)))
            var third = JournalBatch()
            third.append(
                .finished(
                    ChildRecord(
                        group: "r1", path: "version", attempt: 2, attemptID: 6, state: .finished(.succeeded),
                        output: Data("1".utf8), worker: "w2", finishedAt: at(4))))
            third.append(.groupFinished(id: "r1", .succeeded, reason: nil, at: at(5)))
            try journal.write([first, second, third])
            #expect(try place.strings("SELECT state FROM attempts ORDER BY attempt") == ["ended", "succeeded"])
            let contents = try journal.load()
            #expect(contents.lastTokens == ["repo": 12])
            let group = try #require(contents.groups.first)
            #expect(group.outcome?.phase == .succeeded)
            #expect(group.localLocks.isEmpty)
            let child = try #require(group.children.first)
            #expect(child.attempt == 2 && child.state == .finished(.succeeded) && child.worker == "w2")
            #expect(child.output == Data("1".utf8))
        }
    }

    /// More records of a kind than one statement takes (PostgreSQL's statements are cut at
    /// 1,000 rows) are all written, in order.
    @Test(arguments: StoreKind.allCases)
    func aLargeTurnIsWrittenWhole(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            defer { journal.close() }
            var batch = JournalBatch()
            for index in 0..<2500 {
                batch.submissions.append(.init(id: "g\(index)", spec: sampleSpec, submittedAt: at(Int64(index))))
                batch.dispatches.append(
                    ChildRecord(
                        group: "g\(index)", path: "version", attempt: 1, attemptID: AttemptID(UInt64(index + 1)),
                        state: .inFlight))
            }
            // Additions, more than one statement takes, all to one group: their order is kept.
            for index in 0..<2500 { batch.append(Self.added("g0", into: "", ["a\(index)"], at: 1)) }
            try journal.write(batch)
            let groups = try journal.load().groups
            #expect(groups.count == 2500)
            #expect(groups.map(\.id) == (0..<2500).map { "g\($0)" })
            #expect(groups.allSatisfy { $0.children.count == 1 })
            let names = groups.first?.additions.compactMap { $0.children.first?.name } ?? []
            #expect(names == (0..<2500).map { "a\($0)" }, "\(names.count) additions, first \(names.prefix(3))")
        }
    }

    /// A new database gets the current schema; a journal of a newer version is refused with
    /// both versions named, and left as it was.
    @Test(arguments: StoreKind.allCases)
    func aJournalOfANewerSchemaVersionIsRefused(_ kind: StoreKind) throws {
        try withJournalPlace(kind) { place in
            let journal = try place.open()
            journal.close()
            let version = try place.strings("SELECT value FROM meta WHERE key = 'schemaVersion'")
            #expect(version == [kind == .sqlite ? "7" : "4"])
            try place.execute("UPDATE meta SET value = '99' WHERE key = 'schemaVersion'")
            let error = #expect(throws: JournalError.self) { _ = try place.open() }
            #expect(error?.code == .schemaVersion)
            #expect(error?.exitCode == 65)
            #expect(error?.message.contains("99") == true)
            #expect(try place.strings("SELECT value FROM meta WHERE key = 'schemaVersion'") == ["99"])
        }
    }

    /// A PostgreSQL journal of schema version 1 (before growing groups) is brought to the
    /// current version when opened: its groups and attempts are kept, it gets the `additions`
    /// table, whose records are then written and loaded back, and the lease (version 3), held
    /// by nobody.
    @Test func aVersion1PostgresJournalIsMigratedAndKeepsItsData() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            do {
                let journal = try place.open()
                defer { journal.close() }
                var batch = JournalBatch()
                batch.submissions.append(.init(id: "g0", spec: Self.staged, submittedAt: at(1)))
                batch.finishes.append(
                    ChildRecord(
                        group: "g0", path: "version", attempt: 1, attemptID: 0, state: .finished(.succeeded),
                        output: Data("1".utf8), finishedAt: at(2)))
                try journal.write(batch)
            }
            try place.execute(
                """
                DROP TABLE additions; DROP TABLE lease;
                ALTER TABLE attempts DROP COLUMN cancel_code, DROP COLUMN cancel_reason;
                ALTER TABLE groups DROP COLUMN reason_code; ALTER TABLE cancels DROP COLUMN code;
                UPDATE meta SET value = '1' WHERE key = 'schemaVersion'
                """)
            let journal = try place.open()
            defer { journal.close() }
            #expect(try place.strings("SELECT value FROM meta WHERE key = 'schemaVersion'") == ["4"])
            #expect(try place.strings("SELECT epoch || ' ' || coalesce(holder, 'nobody') FROM lease") == ["0 nobody"])
            #expect(
                try place.strings("SELECT count(*) FROM pg_indexes WHERE indexname = 'additions_by_group'") == ["1"])
            var batch = JournalBatch()
            batch.append(Self.added("g0", into: "stage", ["more"], at: 3))
            try journal.write(batch)
            let group = try #require(try journal.load().groups.first)
            #expect(group.id == "g0" && group.spec == Self.staged)
            #expect(group.children.first?.output == Data("1".utf8))
            #expect(group.additions.map { $0.children.map(\.name) } == [["more"]])
        }
    }

    /// `cohort prune` on a database without a journal says so and creates nothing.
    @Test func maintenanceOnADatabaseWithoutAJournalIsRefused() throws {
        try withJournalPlace(.postgres) { (place: JournalPlace) throws in
            let error = #expect(throws: JournalError.self) { _ = try place.openExisting() }
            #expect(error?.code == .unusable)
            #expect(error?.message.contains("no journal") == true)
            #expect(try place.strings("SELECT count(*) FROM pg_tables WHERE tablename = 'meta'") == ["0"])
        }
    }

    @Test(arguments: [
        ("sqlite:///var/lib/cohort", "postgres://USER@HOST:PORT/DATABASE"),
        ("postgres://127.0.0.1:5432/cohort", "no user"),
        ("postgres://cohort@/cohort", "no host"),
        ("postgres://cohort@127.0.0.1:5432", "no database"),
        ("postgres://cohort@127.0.0.1:99999/cohort", "99999"),
        ("postgres://cohort@127.0.0.1:port/cohort", "port"),
        ("postgres://cohort@127.0.0.1/cohort?sslmode=require", "sslmode"),
    ])
    func aBadURLIsRefusedNamingWhatIsWrong(_ url: String, _ named: String) {
        let error = #expect(throws: JournalError.self) { _ = try PostgresConnectionURL(url, environment: [:]) }
        #expect(error?.code == .badLocation)
        #expect(error?.exitCode == 64)
        #expect(error?.message.contains(named) == true, "\(error?.description ?? "")")
    }

    @Test func theURLsPasswordIsNeverShown() throws {
        let url = try PostgresConnectionURL("postgres://cohort:s3cret@db.internal:6543/jobs", environment: [:])
        #expect(url.description == "postgres://cohort@db.internal:6543/jobs")
        #expect(url.password == "s3cret" && url.port == 6543 && url.database == "jobs")
        let defaulted = try PostgresConnectionURL("postgresql://cohort@db/jobs", environment: ["PGPASSWORD": "pw"])
        #expect(defaulted.port == 5432 && defaulted.password == "pw")
        let error = #expect(throws: JournalError.self) {
            _ = try PostgresConnectionURL("postgres://cohort:s3cret@db/jobs?x=1", environment: [:])
        }
        #expect(error?.description.contains("s3cret") == false)
    }

    @Test func anUnreachableServerIsNamedWithItsHostAndPort() throws {
        let port = try PostgresServer.shared.port
        // A port nothing listens on: the server's own, plus one, is free most of the time.
        let closed = try freePortNobodyListensOn(besides: port)
        let url = try PostgresConnectionURL("postgres://cohort@127.0.0.1:\(closed)/cohort", environment: [:])
        let error = #expect(throws: JournalError.self) { _ = try PostgresJournal(url: url) }
        #expect(error?.code == .unreachable)
        #expect(error?.exitCode == 69)
        #expect(error?.message.contains("127.0.0.1:\(closed)") == true, "\(error?.description ?? "")")
    }

    @Test func wrongCredentialsAreNamed() throws {
        let server = try PostgresServer.shared
        let database = String(try server.makeDatabase().split(separator: "/").last ?? "")
        let url = try PostgresConnectionURL(server.url(database: database, password: "wrong"), environment: [:])
        let error = #expect(throws: JournalError.self) { _ = try PostgresJournal(url: url) }
        #expect(error?.code == .denied)
        #expect(error?.exitCode == 77)
        #expect(error?.message.contains("credentials of user \"cohort\"") == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("wrong") == false)
    }

    /// A port of 127.0.0.1 with nothing listening (bound and released, so nobody took it).
    private func freePortNobodyListensOn(besides port: Int) throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
