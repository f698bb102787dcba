import CohortWire
import Foundation
import Synchronization
import Testing

@testable import CohortWorker

@Suite struct LogShipperTests {
    let ref = WireAttemptRef(id: 9, group: "g", path: "build", attempt: 1)

    func write(_ shipper: LogShipper, _ text: String, _ stream: LogLine.Stream = .stdout) {
        Array(text.utf8).withUnsafeBytes { shipper.write(ref, stream, $0) }
    }

    func texts(_ taken: [AttemptLogLines]) -> [String] {
        taken.flatMap(\.lines).map { String(decoding: $0.text, as: UTF8.self) + ($0.partial ? "…" : "") }
    }

    /// Bytes become lines at newlines, numbered in the order written across streams; a line
    /// left unended for 100 ms goes as a partial piece (the loop is told when); one over
    /// 64 KiB goes in pieces.
    @Test func bytesBecomeNumberedLines() async throws {
        let wakes = Atomic<Int>(0)
        let shipper = LogShipper { wakes.add(1, ordering: .relaxed) }
        write(shipper, "one\ntw")
        write(shipper, "o\nthr")
        write(shipper, "oops\n", .stderr)
        var first = shipper.take(budget: 1 << 20)
        #expect(texts(first) == ["one", "two", "oops"])
        let deadline = try #require(shipper.nextFragmentDeadline)
        #expect(deadline - .now <= LogShipper.fragmentAge)
        try await Task.sleep(until: deadline)
        first += shipper.take(budget: 1 << 20)
        #expect(texts(first) == ["one", "two", "oops", "thr…"])
        #expect(first.flatMap(\.lines).map(\.sequence) == [1, 2, 3, 4])
        #expect(first.flatMap(\.lines).map(\.stream) == [.stdout, .stdout, .stderr, .stdout])
        #expect(shipper.nextFragmentDeadline == nil)
        #expect(wakes.load(ordering: .relaxed) == 1, "one wake until the loop has it")
        shipper.wakeReceived()
        write(shipper, "ee\n" + String(repeating: "y", count: LogShipper.maxLineBytes + 5))
        shipper.finish(ref.id)
        let second = shipper.take(budget: 1 << 20)
        #expect(texts(second).map(\.count) == [2, LogShipper.maxLineBytes + 1, 5 + 1])
        #expect(second.flatMap(\.lines).map(\.sequence) == [5, 6, 7])
        #expect(wakes.load(ordering: .relaxed) == 2)
    }

    /// Unacknowledged lines go again after a reconnection; acknowledged ones never; a
    /// finished attempt is forgotten once all its lines are acknowledged.
    @Test func unacknowledgedLinesAreSentAgainAfterARewind() {
        let shipper = LogShipper {}
        write(shipper, "a\nb\nc\n")
        #expect(texts(shipper.take(budget: 1 << 20)) == ["a", "b", "c"])
        #expect(shipper.inFlightBytes == 3)
        shipper.acknowledge(ref.id, upTo: 1)
        #expect(shipper.inFlightBytes == 2)
        #expect(shipper.take(budget: 1 << 20).isEmpty)
        shipper.rewind()
        #expect(texts(shipper.take(budget: 1 << 20)) == ["b", "c"])
        shipper.finish(ref.id)
        shipper.acknowledge(ref.id, upTo: 3)
        #expect(!shipper.hasUnsent && shipper.inFlightBytes == 0)
        shipper.rewind()
        #expect(shipper.take(budget: 1 << 20).isEmpty)
    }

    /// A budget takes at least one line and stops near it; `only` takes every line of the
    /// attempts named, whatever the budget.
    @Test func theBudgetBoundsATake() {
        let shipper = LogShipper {}
        write(shipper, String(repeating: "line\n", count: 100))
        #expect(shipper.take(budget: 1).flatMap(\.lines).count == 1)
        #expect(shipper.take(budget: 3 * 36).flatMap(\.lines).count == 3)
        #expect(shipper.take(budget: 0, only: [ref.id]).flatMap(\.lines).count == 96)
    }

    /// Past maxBufferedBytes not acknowledged, a writer waits until the coordinator catches up
    /// (backpressure), or until it may wait no more (its attempt is stopping).
    @Test func aWriterPastTheBoundWaitsForAcknowledgements() async {
        let shipper = LogShipper(maxBufferedBytes: LogShipper.maxLineBytes) {}
        let chunk = String(repeating: "z", count: 1000) + "\n"
        let written = Atomic<Int>(0)
        let writer = Thread {
            for _ in 0..<200 {
                Array(chunk.utf8).withUnsafeBytes { shipper.write(ref, .stdout, $0) }
                written.add(1, ordering: .relaxed)
            }
        }
        writer.start()
        // Each write adds 1000 bytes; the 66th passes the bound and waits inside the call, so
        // once 66 lines are there (taking them acknowledges nothing), 65 calls have returned,
        // and no more can until an acknowledgement.
        let deadline = ContinuousClock.now + .seconds(20)
        var taken: [LogLine] = []
        while taken.count < 66, ContinuousClock.now < deadline {
            taken += shipper.take(budget: 1 << 20).flatMap(\.lines)
            await Task.yield()
        }
        #expect(taken.count == 66)
        #expect(written.load(ordering: .relaxed) == 65)
        // It goes on as lines are acknowledged.
        while written.load(ordering: .relaxed) < 200, ContinuousClock.now < deadline {
            taken += shipper.take(budget: 1 << 20).flatMap(\.lines)
            if let last = taken.last { shipper.acknowledge(ref.id, upTo: last.sequence) }
            await Task.yield()
        }
        #expect(written.load(ordering: .relaxed) == 200)
        // A writer that may not wait goes on past the bound.
        let stopping = LogShipper(maxBufferedBytes: LogShipper.maxLineBytes) {}
        for _ in 0..<200 { Array(chunk.utf8).withUnsafeBytes { stopping.write(ref, .stdout, $0, mayWait: { false }) } }
        #expect(stopping.take(budget: 1 << 30).flatMap(\.lines).count == 200)
    }
}
