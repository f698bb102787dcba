import CohortTestSupport
import Testing

@testable import CohortCoordinator

/// The pool that parses submissions beside the loop: each client's documents in order, one
/// at a time; clients in turn; a bound per client.
@Suite struct SpecParsingPoolTests {
    /// With one thread, a client with three documents queued first does not make another
    /// client's single document wait behind all three: they take turns.
    @Test func clientsTakeTurnsAndEachKeepsItsOrder() throws {
        let pool = SpecParsingPool(threads: 1)
        let started = AsyncInbox<String>()
        let a: RoutingID = [1]
        let b: RoutingID = [2]
        for index in 1...3 { #expect(pool.enqueue(for: a) { started.post("a\(index)") }) }
        #expect(pool.enqueue(for: b) { started.post("b1") })
        var order: [String] = []
        for _ in 0..<4 {
            let next = try #require(started.next(timeout: .seconds(10)), "a parse did not start")
            order.append(next)
            #expect(started.next(timeout: .milliseconds(20)) == nil, "two parses ran at once on one thread")
            pool.finished(for: next.hasPrefix("a") ? a : b)
        }
        #expect(order == ["a1", "b1", "a2", "a3"])
        #expect(!pool.hasWork(for: a) && !pool.hasWork(for: b))
    }

    /// One client's documents never run at once, even with threads to spare, so its replies
    /// keep the order of its requests; another client's run beside them.
    @Test func oneClientAtATimeOthersBeside() throws {
        let pool = SpecParsingPool(threads: 4)
        let started = AsyncInbox<String>()
        let a: RoutingID = [1]
        let b: RoutingID = [2]
        #expect(pool.enqueue(for: a) { started.post("a1") })
        #expect(pool.enqueue(for: a) { started.post("a2") })
        #expect(pool.enqueue(for: b) { started.post("b1") })
        let first = try #require(started.next(timeout: .seconds(10)))
        let second = try #require(started.next(timeout: .seconds(10)))
        #expect(Set([first, second]) == ["a1", "b1"])
        #expect(started.next(timeout: .milliseconds(50)) == nil, "a2 started before a1 finished")
        pool.finished(for: a)
        #expect(started.next(timeout: .seconds(10)) == "a2")
    }

    /// A client with `perClientLimit` documents waiting or being parsed is refused another;
    /// another client is not.
    @Test func aClientIsBoundedOthersAreNot() {
        let pool = SpecParsingPool(threads: 1)
        let block = AsyncInbox<Int>()
        let a: RoutingID = [1]
        for _ in 0..<SpecParsingPool.perClientLimit {
            #expect(pool.enqueue(for: a) { _ = block.next(timeout: .seconds(5)) })
        }
        #expect(!pool.enqueue(for: a) {})
        #expect(pool.enqueue(for: [2]) {})
        block.post(0)
    }
}
