import CohortWire
import Foundation
import Testing

/// A batch of N means exactly what N messages of one each would, in order.
@Suite struct BatchingTests {
    let codec = WireCodec()

    static func dispatches(_ count: Int) -> [AttemptDispatch] {
        (0..<count).map { (i: Int) -> AttemptDispatch in
            let ref = WireAttemptRef(id: UInt64(i) + 1, group: "g-\(i % 3)", path: "c/\(i)", attempt: UInt32(i % 4) + 1)
            let tokens: [String: UInt64] = i.isMultiple(of: 5) ? ["repo": UInt64(i)] : [:]
            let timeout: Duration? = i.isMultiple(of: 3) ? .seconds(i + 1) : nil
            return AttemptDispatch(
                ref: ref, kind: i.isMultiple(of: 2) ? "echo" : "shell", input: Data(#"{"i":\#(i)}"#.utf8),
                fencingTokens: tokens, timeout: timeout)
        }
    }

    static func results(_ count: Int) -> [AttemptResult] {
        (0..<count).map { i in
            let outcome: WireOutcome =
                switch i % 3 {
                case 0: .succeeded(output: Data(#"{"out":\#(i)}"#.utf8))
                case 1: .failed(error: "error \(i)")
                default: .cancelled(reason: "reason \(i)")
                }
            return AttemptResult(
                ref: WireAttemptRef(id: UInt64(i) + 1, group: "g", path: "c/\(i)", attempt: 1), outcome: outcome,
                startedAt: WireTimestamp(nanosecondsSinceEpoch: Int64(i) * 1_000),
                finishedAt: WireTimestamp(nanosecondsSinceEpoch: Int64(i) * 2_000))
        }
    }

    /// Decodes every message and flattens the batches of `extract`'s kind, in order.
    func flatten<Item>(_ messages: [WireMessage], _ extract: (WireMessage) -> [Item]?) throws -> [Item] {
        var items: [Item] = []
        for message in messages {
            let decoded = try codec.decode(frames: codec.encode(message))
            let batch = try #require(extract(decoded))
            items += batch
        }
        return items
    }

    @Test(arguments: [1, 2, 64, 500])
    func aDispatchBatchIsTheSameAsSingleDispatches(count: Int) throws {
        let tasks = Self.dispatches(count)
        let extract: (WireMessage) -> [AttemptDispatch]? = {
            if case .toWorker(.dispatch(let tasks)) = $0 { tasks } else { nil }
        }
        let batched = try flatten([.toWorker(.dispatch(tasks))], extract)
        let single = try flatten(tasks.map { .toWorker(.dispatch([$0])) }, extract)
        #expect(batched == tasks)
        #expect(single == batched)
    }

    @Test(arguments: [1, 2, 64, 500])
    func aResultBatchIsTheSameAsSingleResults(count: Int) throws {
        let results = Self.results(count)
        let extract: (WireMessage) -> [AttemptResult]? = {
            if case .worker(.results(let results)) = $0 { results } else { nil }
        }
        let batched = try flatten([.worker(.results(results))], extract)
        let single = try flatten(results.map { .worker(.results([$0])) }, extract)
        #expect(batched == results)
        #expect(single == batched)
    }

    @Test func startedAndCancelBatchesAreTheSameAsSingleMessages() throws {
        let starts = Self.results(10).map { AttemptStart(ref: $0.ref, startedAt: $0.startedAt) }
        let extractStarts: (WireMessage) -> [AttemptStart]? = {
            if case .worker(.started(let starts)) = $0 { starts } else { nil }
        }
        #expect(try flatten([.worker(.started(starts))], extractStarts) == starts)
        #expect(try flatten(starts.map { .worker(.started([$0])) }, extractStarts) == starts)

        let cancels = Self.results(10).map { AttemptCancellation(ref: $0.ref, reason: "because \($0.ref.id)") }
        let extractCancels: (WireMessage) -> [AttemptCancellation]? = {
            if case .toWorker(.cancel(let cancels)) = $0 { cancels } else { nil }
        }
        #expect(try flatten([.toWorker(.cancel(cancels))], extractCancels) == cancels)
        #expect(try flatten(cancels.map { .toWorker(.cancel([$0])) }, extractCancels) == cancels)
    }

    /// Protobuf merges repeated fields of concatenated bodies, so the body of
    /// a batch and the concatenated bodies of its single messages decode alike.
    @Test func concatenatedSingleBodiesDecodeAsTheBatch() throws {
        let tasks = Self.dispatches(8)
        let header = WireMessage.toWorker(.dispatch([])).header.bytes
        let body = try tasks.flatMap { try codec.encode(.toWorker(.dispatch([$0])))[1] }
        #expect(try codec.decode(frames: [header, body]) == .toWorker(.dispatch(tasks)))
    }

    @Test func anEmptyBatchIsValidAndEmpty() throws {
        #expect(try codec.decode(frames: codec.encode(.toWorker(.dispatch([])))) == .toWorker(.dispatch([])))
        #expect(try codec.decode(frames: codec.encode(.worker(.results([])))) == .worker(.results([])))
    }

    @Test func anOversizedBatchIsSplitIntoMessagesUnderTheLimit() throws {
        let small = WireCodec(maxFrameSize: 1_000)
        let tasks = Self.dispatches(100)
        let messages = try small.encodeSplittingBatches(.toWorker(.dispatch(tasks)))
        #expect(messages.count > 1)
        #expect(messages.allSatisfy { $0[1].count <= 1_000 })
        var decoded: [AttemptDispatch] = []
        for frames in messages {
            guard case .toWorker(.dispatch(let part)) = try small.decode(frames: frames) else {
                Issue.record("not a dispatch")
                return
            }
            decoded += part
        }
        #expect(decoded == tasks)
    }

    @Test func splittingKeepsTheWatchRequestID() throws {
        let events = (0..<50).map { i in
            WatchEvent(
                group: "g", at: WireTimestamp(nanosecondsSinceEpoch: Int64(i) + 1),
                .child(ChildStatus(name: "c\(i)", path: "p/c\(i)", state: .running)))
        }
        let messages = try WireCodec(maxFrameSize: 300).encodeSplittingBatches(
            .coordinatorReply(CoordinatorReply(requestID: 9, .watchEvents(events))))
        #expect(messages.count > 1)
        for frames in messages {
            guard case .coordinatorReply(let reply) = try WireCodec(maxFrameSize: 300).decode(frames: frames) else {
                Issue.record("not a reply")
                return
            }
            #expect(reply.requestID == 9)
        }
    }

    @Test func aSingleItemOverTheLimitCannotBeSplit() {
        let big = AttemptDispatch(ref: Samples.task, kind: "echo", input: Data(repeating: 0x61, count: 2_000))
        do {
            _ = try WireCodec(maxFrameSize: 1_000).encodeSplittingBatches(.toWorker(.dispatch([big, big])))
            Issue.record("an item over the limit was encoded")
        } catch {
            guard case .frameTooLarge(frame: 1, let size, limit: 1_000) = error, size > 2_000, size < 2_100 else {
                Issue.record("unexpected \(error)")
                return
            }
        }
    }
}
