import Dispatch
import Testing
@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/RetryProcedureTests.swift`. ProcedureKit builds
/// attempts from an iterator of payloads (with a per-attempt configure block); Cohort from
/// `body(n)` and an optional handler. The iterator/configure, `Delay.Iterator`,
/// `.incrementing` and input-procedure tests need API Cohort lacks and are left out.
@Suite("RetryProcedureTests")
struct RetryProcedureTests {
    /// ProcedureKit's `createPayloadIterator(succeedsAfterFailureCount:)`: attempt n fails until n > failures.
    func attempts(succeedingAfter failures: Int) -> @Sendable (Int) -> TestProcedure? {
        { number in TestProcedure(name: "attempt \(number)", error: number > failures ? nil : TestError("attempt \(number)")) }
    }

    @Test func test__with_payload_iterator() async throws {
        let retry = RetryProcedure(maxAttempts: 10, body: attempts(succeedingAfter: 2))
        #expect(try await run(retry).isSucceeded)
        #expect(retry.count == 3)
    }

    /// Cohort: ends failed with the last attempt's own error (ProcedureKit: a conditionFailed error).
    @Test func test__with_max_count() async throws {
        let retry = RetryProcedure(maxAttempts: 2, body: attempts(succeedingAfter: 4))
        let outcome = try await run(retry)
        #expect(retry.count == 2)
        #expect(outcome.isFailed)
        #expect(outcome.error as? TestError == TestError("attempt 2"))
    }

    @Test func test__with_block_fails_after_max() async throws {
        let retry = RetryProcedure(maxAttempts: 3) { _ in TestProcedure(error: TestError("unknown")) }
        let outcome = try await run(retry)
        #expect(outcome.error as? TestError == TestError("unknown"))
        #expect(retry.count == 3)
    }

    @Test func test__retry_deinits_after_finished() async throws {
        final class Monitor: Sendable {
            let released = Signal()
        }
        final class RetryDeinitMonitor: RetryProcedure<TestProcedure>, @unchecked Sendable {
            // @unchecked Sendable: adds only a `let` of a Sendable type.
            let monitor: Monitor
            init(monitor: Monitor, body: @escaping RepeatProcedure<TestProcedure>.Body) {
                self.monitor = monitor
                super.init(maxAttempts: 10, wait: .fixed(.milliseconds(1)), body: body)
            }
            deinit { monitor.released.fire() }
        }
        let monitor = Monitor()
        let finishedRetry = Signal()
        do {
            let queue = makeQueue()
            let retry = RetryDeinitMonitor(monitor: monitor, body: attempts(succeedingAfter: 2))
            retry.addObserver(BlockObserver(didFinish: { _, _ in finishedRetry.fire() }))
            queue.add(retry)
        }
        try await finishedRetry.wait("the retry finishing")
        try await monitor.released.wait("the retry being released")
    }
}
