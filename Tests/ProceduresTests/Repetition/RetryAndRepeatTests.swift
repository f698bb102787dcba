import CohortTestSupport
import Testing

@testable import Procedures

@Suite("RetryProcedure")
struct RetryProcedureTests {
    /// Attempt n fails unless n >= `succeedingFrom`.
    static func attempts(succeedingFrom: Int = .max, made: Locked<[Int]>? = nil) -> RepeatProcedure<TestProcedure>.Body
    {
        { number in
            made?.mutate { $0.append(number) }
            return TestProcedure("attempt\(number)", error: number >= succeedingFrom ? nil : TestError("\(number)"))
        }
    }

    @Test func retriesUntilAnAttemptSucceeds() async throws {
        let queue = makeQueue()
        let retry = RetryProcedure(maxAttempts: 5, body: Self.attempts(succeedingFrom: 3))
        queue.add(retry)
        #expect(try await finished(retry).isSucceeded)
        #expect(retry.count == 3)
        #expect(retry.attemptErrors.map { $0 as? TestError } == [TestError("1"), TestError("2")])
        #expect(retry.childErrors.isEmpty)
    }

    @Test func stopsAfterMaxAttemptsAndFinishesWithTheLastError() async throws {
        let queue = makeQueue()
        let made = Locked<[Int]>([])
        let retry = RetryProcedure(maxAttempts: 3, body: Self.attempts(made: made))
        queue.add(retry)
        let outcome = try await finished(retry)
        #expect(outcome.isFailed)
        #expect(made.value == [1, 2, 3])
        #expect(retry.count == 3)
        // It fails with the last attempt's own error.
        #expect(outcome.error as? TestError == TestError("3"))
        #expect(retry.attemptErrors.count == 3)
    }

    @Test func handlerSeesEveryFailure() async throws {
        let queue = makeQueue()
        let seen = Locked<[String]>([])
        let retry = RetryProcedure<TestProcedure>(
            maxAttempts: 3,
            handler: { failure in
                seen.mutate { $0.append("\(failure.attempt):\(failure.procedure.name):\(failure.error)") }
                return .retry
            }, body: Self.attempts())
        queue.add(retry)
        try await finished(retry)
        // The last failure is not offered: there is no attempt left to decide about.
        #expect(seen.value == ["1:attempt1:TestError(1)", "2:attempt2:TestError(2)"])
    }

    @Test func handlerCanReplaceTheNextAttempt() async throws {
        let queue = makeQueue()
        let replacement = TestProcedure("replacement")
        let retry = RetryProcedure<TestProcedure>(
            maxAttempts: 5, handler: { _ in .retryWith(replacement) },
            body: Self.attempts())
        queue.add(retry)
        #expect(try await finished(retry).isSucceeded)
        #expect(replacement.didExecute)
        #expect(retry.count == 2)
        #expect(retry.current === replacement)
    }

    @Test func handlerCanStopRetrying() async throws {
        let queue = makeQueue()
        let made = Locked<[Int]>([])
        let retry = RetryProcedure<TestProcedure>(
            maxAttempts: 5,
            handler: { failure in
                failure.attempt >= 2 ? .stop : .retry
            }, body: Self.attempts(made: made))
        queue.add(retry)
        let outcome = try await finished(retry)
        #expect(made.value == [1, 2])
        #expect(outcome.error as? TestError == TestError("2"))
    }

    @Test func waitsBetweenAttemptsAsTheStrategySays() async throws {
        let queue = makeQueue()
        let retry = RetryProcedure(maxAttempts: 3, wait: .fixed(.milliseconds(30)), body: Self.attempts())
        let time = try await elapsed {
            queue.add(retry)
            try await finished(retry)
        }
        #expect(retry.count == 3)
        #expect(time >= .milliseconds(60))
    }

    @Test func outputIsTheSuccessfulAttemptsOutput() async throws {
        let queue = makeQueue()
        let retry = RetryProcedure<ResultProcedure<String>>(maxAttempts: 4) { number in
            ResultProcedure {
                guard number == 3 else { throw TestError("\(number)") }
                return "third time lucky"
            }
        }
        #expect(try await queue.run(retry) == "third time lucky")
    }

    @Test func cancellingStopsRetrying() async throws {
        let queue = makeQueue()
        let made = Locked<[Int]>([])
        let retry = RetryProcedure<TestProcedure>(maxAttempts: 1_000, wait: .fixed(.seconds(60))) { number in
            made.mutate { $0.append(number) }
            return TestProcedure("attempt\(number)", error: TestError())
        }
        queue.add(retry)
        try await waitUntil("second attempt waits") { made.value.count == 2 }
        retry.cancel()
        #expect(try await finished(retry).isCancelled)
        #expect(made.value == [1, 2])
        #expect(retry.children.allSatisfy { $0.isFinished })
    }

    @Test func retryIsReleasedAfterFinishing() async throws {
        let queue = makeQueue()
        weak var weakRetry: RetryProcedure<TestProcedure>?
        weak var weakAttempt: Procedure?
        do {
            let retry = RetryProcedure(
                maxAttempts: 3, wait: .fixed(.milliseconds(1)), body: Self.attempts(succeedingFrom: 2))
            weakRetry = retry
            queue.add(retry)
            try await finished(retry)
            weakAttempt = retry.current
            #expect(weakAttempt != nil)
        }
        try await allFinished(queue)
        try await waitUntil("the retry is deallocated") { weakRetry == nil && weakAttempt == nil }
    }
}

@Suite("RepeatProcedure")
struct RepeatProcedureTests {
    @Test func repeatsUpToItsMaximumCount() async throws {
        let queue = makeQueue()
        let events = EventLog()
        let repeating = RepeatProcedure(maxCount: 4) { TestProcedure("run\($0)", events: events) }
        queue.add(repeating)
        #expect(try await finished(repeating).isSucceeded)
        #expect(repeating.count == 4)
        #expect(events.all == (1...4).map { "run\($0).execute" })
    }

    @Test func stopsWhenTheBodyReturnsNil() async throws {
        let queue = makeQueue()
        let repeating = RepeatProcedure<TestProcedure> { $0 <= 2 ? TestProcedure("run\($0)") : nil }
        queue.add(repeating)
        #expect(try await finished(repeating).isSucceeded)
        #expect(repeating.count == 2)
    }

    @Test func failedAttemptEndsTheRepetitionWithItsError() async throws {
        let queue = makeQueue()
        let repeating = RepeatProcedure(maxCount: 10) {
            TestProcedure("run\($0)", error: $0 == 3 ? TestError("third") : nil)
        }
        queue.add(repeating)
        let error = try #require(try await finished(repeating).error as? GroupError)
        #expect(error.errors.first?.error as? TestError == TestError("third"))
        #expect(repeating.count == 3)
    }

    @Test func cancellingARepeatStopsIt() async throws {
        let queue = makeQueue()
        let repeating = RepeatProcedure<TestProcedure> { TestProcedure("run\($0)") }
        queue.add(repeating)
        try await waitUntil("a few attempts ran") { repeating.count >= 5 }
        repeating.cancel()
        #expect(try await finished(repeating).isCancelled)
        let count = repeating.count
        try await allFinished(repeating.queue)
        #expect(repeating.count == count)
        #expect(repeating.children.allSatisfy { $0.isFinished })
    }

    @Test func waitsBetweenRepeats() async throws {
        let queue = makeQueue()
        let repeating = RepeatProcedure(maxCount: 3, wait: .fixed(.milliseconds(25))) { TestProcedure("run\($0)") }
        let time = try await elapsed {
            queue.add(repeating)
            try await finished(repeating)
        }
        #expect(repeating.count == 3)
        #expect(time >= .milliseconds(50))
    }

    @Test func cancelledBeforeItStartsMakesNoAttempt() async throws {
        let queue = makeQueue()
        let made = Locked(0)
        let repeating = RepeatProcedure<TestProcedure>(maxCount: 3) { _ in
            made.mutate { $0 += 1 }
            return TestProcedure()
        }
        repeating.cancel()
        queue.add(repeating)
        #expect(try await finished(repeating).isCancelled)
        #expect(made.value == 0)
    }
}
