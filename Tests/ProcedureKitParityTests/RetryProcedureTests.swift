import Dispatch
import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/RetryProcedureTests.swift`. ProcedureKit builds
/// attempts from an iterator of payloads (with a per-attempt configure block); Cohort from
/// `body(n)` or an iterator of procedures, with an optional handler.
@Suite("RetryProcedureTests")
struct RetryProcedureTests {
    /// ProcedureKit's `createPayloadIterator(succeedsAfterFailureCount:)`: attempt n fails until n > failures.
    func attempts(succeedingAfter failures: Int) -> @Sendable (Int) -> TestProcedure? {
        { number in
            TestProcedure(name: "attempt \(number)", error: number > failures ? nil : TestError("attempt \(number)"))
        }
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

    @Test func test__with_delay_and_operation_iterator() async throws {
        let made = Locked(0)
        let retry = RetryProcedure(
            maxAttempts: 10, wait: .fixed(.milliseconds(1)),
            iterator: AnyIterator {
                let number = made.mutate { count -> Int in
                    count += 1
                    return count
                }
                return TestProcedure(error: number > 2 ? nil : TestError("attempt \(number)"))
            })
        #expect(try await run(retry).isSucceeded)
        #expect(retry.count == 3)
    }

    @Test func test__with_wait_strategy_and_operation_iterator() async throws {
        let retry = RetryProcedure(
            maxAttempts: 10, wait: .incrementing(initial: .zero, increment: .milliseconds(1)),
            body: attempts(succeedingAfter: 2))
        #expect(try await run(retry).isSucceeded)
        #expect(retry.count == 3)
    }

    /// A retry of input procedures takes an input (injected) and gives it to every attempt;
    /// only the successful attempt produces the greeting.
    @Test func test__with_input_procedure_payload() async throws {
        let producer = ResultProcedure { "ProcedureKit" }
        let greetings = Locked<[String]>([])
        let retry = RetryProcedure<GreetingProcedure>(maxAttempts: 5) { number in
            let greeting = GreetingProcedure(fails: number <= 2)
            greeting.addObserver(
                BlockObserver(didFinish: { procedure, _ in
                    if let text = (procedure as? GreetingProcedure)?.output.success {
                        greetings.mutate { $0.append(text) }
                    }
                }))
            return greeting
        }
        retry.injectResult(from: producer)
        try await run(producer, retry)
        #expect(retry.outcome?.isSucceeded == true)
        #expect(retry.count == 3)
        #expect(greetings.value == ["Hello ProcedureKit"])
        #expect(retry.attemptErrors.count == 2)
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
