import Testing
@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/RepeatProcedureTests.swift`. ProcedureKit builds
/// attempts from an iterator (with configure blocks and `Delay.Iterator`s); Cohort from
/// `body(n)` with a `WaitStrategy`. The iterator, configure-block, repeatable-procedure,
/// input-procedure, `.incrementing`, `.fibonacci` and `.random` tests need API Cohort lacks
/// and are left out.
@Suite("RepeatProcedureTests")
struct RepeatProcedureTests {
    /// ProcedureKit's `createIterator(succeedsAfterCount:)`: attempt n fails once n reaches the count.
    func attempts(failingAt count: Int? = nil) -> @Sendable (Int) -> TestProcedure? {
        { number in TestProcedure(name: "attempt \(number)", error: number == count ? TestError("expected") : nil) }
    }

    @Test func test__init_with_max_and_custom_iterator() async throws {
        let repeatProcedure = RepeatProcedure(maxCount: 2, body: attempts())
        #expect(try await run(repeatProcedure).isSucceeded)
        #expect(repeatProcedure.count == 2)
    }

    /// Cohort's `.fixed` is ProcedureKit's `.constant`.
    @Test func test__init_with_max_and_wait_strategy() async throws {
        let repeatProcedure = RepeatProcedure(maxCount: 2, wait: .fixed(.milliseconds(1)), body: attempts())
        #expect(try await run(repeatProcedure).isSucceeded)
        #expect(repeatProcedure.count == 2)
    }

    @Test func test__init_with_max_and_body() async throws {
        let executed = Locked(0)
        let repeatProcedure = RepeatProcedure(maxCount: 2) { _ in BlockProcedure { executed.mutate { $0 += 1 } } }
        #expect(try await run(repeatProcedure).isSucceeded)
        #expect(repeatProcedure.count == 2)
        #expect(executed.value == 2)
    }

    @Test func test__init_with_no_max_and_wait_strategy() async throws {
        let repeatProcedure = RepeatProcedure(wait: .fixed(.milliseconds(1)), body: attempts(failingAt: 2))
        let outcome = try await run(repeatProcedure)
        #expect(repeatProcedure.count == 2)
        #expect(outcome.isFailed)
    }
}

/// ProcedureKit's `WaitStrategyTestCase` (Cohort has no iterator: the delay before each attempt).
@Suite("WaitStrategyTestCase")
struct WaitStrategyTestCase {
    /// Cohort's `.fixed(1 s)`: no wait before the first attempt, then the same before each.
    @Test func test__constant() {
        let strategy = WaitStrategy.fixed(.seconds(1))
        #expect(strategy.delay(beforeAttempt: 1) == .zero)
        for attempt in 2...6 { #expect(strategy.delay(beforeAttempt: attempt) == .seconds(1)) }
    }
}
