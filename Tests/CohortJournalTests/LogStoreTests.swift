import CohortJournalPostgres
import CohortTestSupport
import Foundation
import Testing

@testable import CohortJournal

/// Both log stores (``LogStoring``): SQLite's and PostgreSQL's, run through the same tests.
@Suite struct LogStoreTests {
    /// A fresh store of `kind` with these bounds; `reopen` opens the same place again.
    func withStore<T>(
        _ kind: StoreKind, attemptBytes: Int, totalBytes: Int,
        _ body: (_ store: any LogStoring, _ reopen: () throws -> any LogStoring) throws -> T
    ) throws -> T {
        try withJournalPlace(kind) { place in
            let open = { () throws -> any LogStoring in
                switch kind {
                case .sqlite:
                    try FileManager.default.createDirectory(atPath: place.location, withIntermediateDirectories: true)
                    return try LogStore(
                        path: place.location + "/logs.sqlite", maxAttemptBytes: attemptBytes, maxTotalBytes: totalBytes)
                case .postgres:
                    return try PostgresLogStore(
                        url: try PostgresConnectionURL(place.location), maxAttemptBytes: attemptBytes,
                        maxTotalBytes: totalBytes)
                }
            }
            let store = try open()
            defer { store.close() }
            return try body(store, open)
        }
    }

    let key = LogAttemptKey(attemptID: 7, group: "g", path: "build", attempt: 1)

    func lines(_ range: ClosedRange<UInt64>, size: Int = 10, at: Int64 = 0) -> [StoredLogLine] {
        range.map { sequence in
            StoredLogLine(
                sequence: sequence, at: at + Int64(sequence), stream: sequence % 2 == 0 ? 2 : 1,
                text: Array(String(repeating: "x", count: size - String(sequence).count).utf8)
                    + Array(String(sequence).utf8))
        }
    }

    func texts(_ read: LogRead) -> [String] { read.lines.map { String(decoding: $0.text, as: UTF8.self) } }

    /// Lines come back in order, as stored, page after page; repeats (a worker sending again
    /// what was not acknowledged) are ignored; the file survives a reopen.
    @Test(arguments: StoreKind.allCases) func linesAreStoredOnceInOrderAndSurviveAReopen(_ kind: StoreKind) throws {
        try withStore(kind, attemptBytes: 1 << 20, totalBytes: 1 << 30) { first, reopen in
            #expect(try first.append(key, worker: "w1", lines: lines(1...5)) == 5)
            #expect(try first.append(key, worker: "w1", lines: lines(3...8)) == 8)
            first.close()
            let store = try reopen()
            defer { store.close() }
            #expect(store.storedBytes == 80, "the total is read again")
            let first = try store.read(group: "g", path: "build", attempt: 1, after: 0, tail: nil, since: nil, limit: 3)
            #expect(first.lines.map(\.sequence) == [1, 2, 3])
            #expect(first.more && first.lastSequence == 8 && first.worker == "w1" && first.attempt == 1)
            let rest = try store.read(
                group: "g", path: "build", attempt: 0, after: 3, tail: nil, since: nil, limit: 100)
            #expect(rest.lines.map(\.sequence) == [4, 5, 6, 7, 8])
            #expect(!rest.more)
            let tail = try store.read(group: "g", path: "build", attempt: 1, after: 0, tail: 2, since: nil, limit: 100)
            #expect(tail.lines.map(\.sequence) == [7, 8])
            let before = try store.read(
                group: "g", path: "build", attempt: 1, after: 0, before: 7, tail: 2, since: nil, limit: 100)
            #expect(before.lines.map(\.sequence) == [5, 6], "the page before line 7")
            let since = try store.read(group: "g", path: "build", attempt: 1, after: 0, tail: nil, since: 6, limit: 100)
            #expect(since.lines.map(\.sequence) == [6, 7, 8])
            #expect(
                try store.read(group: "g", path: "build", attempt: 2, after: 0, tail: nil, since: nil, limit: 9)
                    == .empty)
        }
    }

    /// Over maxAttemptBytes, the head (the first half) and the newest lines stay, the lines
    /// between go, and a reader sees a marker with the bytes cut where they were.
    @Test(arguments: StoreKind.allCases) func anAttemptOverItsBoundKeepsHeadAndTailWithAMarker(_ kind: StoreKind) throws
    {
        try withStore(kind, attemptBytes: 1000, totalBytes: 1 << 20) { store, _ in
            for start in stride(from: UInt64(1), through: 291, by: 10) {
                try store.append(key, worker: "w1", lines: lines(start...(start + 9)))
            }
            let read = try store.read(
                group: "g", path: "build", attempt: 1, after: 0, tail: nil, since: nil, limit: 1000)
            let stored = read.lines.filter { $0.stream != StoredLogLine.markerStream }
            #expect(stored.reduce(0) { $0 + $1.text.count } <= 1000)
            #expect(stored.prefix(50).map(\.sequence) == Array(1...50), "the head stays")
            #expect(stored.last?.sequence == 300, "the newest line stays")
            #expect(read.cutBytes == UInt64(3000 - stored.reduce(0) { $0 + $1.text.count }))
            #expect(store.counts.cutBytes == read.cutBytes && store.counts.linesStored == 300)
            #expect(store.storedBytes == UInt64(stored.reduce(0) { $0 + $1.text.count }))
            let marker = try #require(read.lines.firstIndex { $0.stream == StoredLogLine.markerStream })
            #expect(read.lines[marker - 1].sequence == 50)
            #expect(String(decoding: read.lines[marker].text, as: UTF8.self).contains("\(read.cutBytes) bytes cut"))
            // A follower that had read up to line 60 (since cut) sees the marker before what is left.
            let follower = try store.read(
                group: "g", path: "build", attempt: 1, after: 60, tail: nil, since: nil, limit: 1000)
            #expect(follower.lines.first?.stream == StoredLogLine.markerStream)
            // One that had every line so far sees none.
            let caughtUp = try store.read(
                group: "g", path: "build", attempt: 1, after: 300, tail: nil, since: nil, limit: 9)
            #expect(caughtUp.lines.isEmpty)
            // Read backwards (`before` with a tail), a page that starts right after the cut
            // starts with the marker; the page before it is the head's end.
            let afterCut = try #require(stored.first { $0.sequence > 50 }).sequence
            let backwards = try store.read(
                group: "g", path: "build", attempt: 1, after: 0, before: afterCut + 5, tail: 5, since: nil, limit: 100)
            #expect(backwards.lines.first?.stream == StoredLogLine.markerStream)
            #expect(backwards.lines.dropFirst().map(\.sequence) == Array(afterCut..<(afterCut + 5)))
            let head = try store.read(
                group: "g", path: "build", attempt: 1, after: 0, before: afterCut - 1, tail: 3, since: nil, limit: 100)
            #expect(head.lines.map(\.sequence) == [48, 49, 50])
            // A page cut short by its bytes says more follow, and they do.
            let short = try store.read(
                group: "g", path: "build", attempt: 1, after: 0, before: 0, tail: nil, since: nil, limit: 1000,
                maxBytes: 50)
            #expect(short.more && short.lines.count < 50, "\(short.lines.count) lines")
        }
    }

    /// Over maxTotalBytes, whole attempts go, the one whose last line is oldest first; pruned
    /// groups go with their logs.
    @Test(arguments: StoreKind.allCases) func theStoreEvictsOldestAttemptsAndPrunesGroups(_ kind: StoreKind) throws {
        try withStore(kind, attemptBytes: 1000, totalBytes: 2500) { store, _ in
            for id in UInt64(1)...3 {
                let attempt = LogAttemptKey(attemptID: id, group: "g\(id)", path: "c", attempt: 1)
                try store.append(attempt, worker: "w", lines: lines(1...90, at: Int64(id) * 1000))
            }
            #expect(try store.groups().sorted() == ["g2", "g3"])
            #expect(store.counts.evictedBytes == 900)
            #expect(store.counts.evictedAttempts == 1)
            #expect(store.storedBytes == 1800)
            try store.remove(groups: ["g2"])
            #expect(try store.groups() == ["g3"])
            let read = try store.read(group: "g2", path: "c", attempt: 0, after: 0, tail: nil, since: nil, limit: 9)
            #expect(read == .empty)
        }
    }

    /// How an attempt ended is kept for readers after the coordinator forgot its group.
    @Test(arguments: StoreKind.allCases) func anAttemptsEndIsKept(_ kind: StoreKind) throws {
        try withStore(kind, attemptBytes: 1000, totalBytes: 1 << 20) { store, _ in
            try store.append(key, worker: "w1", lines: lines(1...2))
            try store.ended(attemptID: key.attemptID, outcome: "failed", error: "exited with code 2")
            let read = try store.read(group: "g", path: "build", attempt: 0, after: 0, tail: nil, since: nil, limit: 9)
            #expect(read.outcome == "failed" && read.error == "exited with code 2")
        }
    }
}
