import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/RepeatProcedureTests.swift`. ProcedureKit builds
/// attempts from an iterator (of procedures, or of payloads with a `Delay` and a configure
/// block); Cohort from `body(n)`, an iterator of procedures, or an iterator of
/// `RepeatPayload`s (a `Duration` wait instead of a `Delay`), with a `WaitStrategy`. The
/// deprecated `Repeatable` tests, `DelayIteratorTests` and `RandomFailIterator` (API that
/// Cohort's wait strategies and payloads replace) are listed as not applicable in the HANDBOOK.
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

/// ProcedureKit's `TestProcedure` with an input and an output: "Hello <input>", failing
/// while `failures` > 0 (each attempt takes one).
final class GreetingProcedure: Procedure, InputProcedure, OutputProcedure, @unchecked Sendable {
    // @unchecked Sendable: its state is `Protected`; the rest is Procedure's.
    private let given = Protected<Pending<String>>(.pending)
    private let result = Protected<Pending<ProcedureResult<String>>>(.pending)
    let fails: Bool

    init(fails: Bool = false) {
        self.fails = fails
        super.init()
    }

    var input: Pending<String> {
        get { given.value }
        set { given.value = newValue }
    }

    var output: Pending<ProcedureResult<String>> {
        get { result.value }
        set { result.value = newValue }
    }

    override func execute() {
        guard let name = input.value else { return finish(with: TestError("no input")) }
        if fails { return finish(with: TestError("failed greeting \(name)")) }
        output = .ready(.success("Hello \(name)"))
        finish()
    }
}

/// The payloads and configure blocks ProcedureKit's iterators carry, and a repeat as an
/// input procedure.
@Suite("RepeatProcedureTests: iterators, configure blocks, input")
struct RepeatProcedureIteratorTests {
    /// ProcedureKit's `Delay.Iterator` pairs each attempt with a delay; Cohort's payload has a wait.
    @Test func test__init_with_max_and_delay_iterator() async throws {
        let repeatProcedure = RepeatProcedure(
            maxCount: 2, payloads: AnyIterator { RepeatPayload(TestProcedure(), wait: .milliseconds(1)) })
        #expect(try await run(repeatProcedure).isSucceeded)
        #expect(repeatProcedure.count == 2)
    }

    @Test func test__init_with_no_max_and_delay_iterator() async throws {
        let made = Locked(0)
        let repeatProcedure = RepeatProcedure(
            payloads: AnyIterator {
                let number = made.mutate { count -> Int in
                    count += 1
                    return count
                }
                return RepeatPayload(TestProcedure(error: number == 2 ? TestError("expected") : nil), wait: .zero)
            })
        let outcome = try await run(repeatProcedure)
        #expect(repeatProcedure.count == 2)
        #expect(
            (outcome.error as? GroupError)?.errors.first?.error as? TestError == TestError("expected"), "\(outcome)")
    }

    @Test func test__init_with_max_and_iterator_of_procedures() async throws {
        let repeatProcedure = RepeatProcedure(maxCount: 3, iterator: AnyIterator { TestProcedure() })
        #expect(try await run(repeatProcedure).isSucceeded)
        #expect(repeatProcedure.count == 3)
    }

    @Test func test__append_configure_block() {
        let repeatProcedure = RepeatProcedure { _ in TestProcedure() }
        let ran = Locked([false, false])
        repeatProcedure.appendConfigureBlock { _ in ran.mutate { $0[0] = true } }
        repeatProcedure.appendConfigureBlock { _ in ran.mutate { $0[1] = true } }
        repeatProcedure.configure(TestProcedure())
        #expect(ran.value == [true, true])
    }

    @Test func test__replace_configure_block() {
        let repeatProcedure = RepeatProcedure { _ in TestProcedure() }
        let replacedRan = Locked(false)
        let ran = Locked(false)
        repeatProcedure.appendConfigureBlock { _ in replacedRan.value = true }
        repeatProcedure.replaceConfigureBlock { _ in ran.value = true }
        repeatProcedure.configure(TestProcedure())
        #expect(ran.value)
        #expect(!replacedRan.value, "the configure block was not replaced")
    }

    /// As in ProcedureKit, the first payload's block does not replace the repeat's own; each
    /// later one does, and runs on its attempt.
    @Test func test__payload_with_configure_block_replaces_configure() async throws {
        let configured = Locked(0)
        let repeatProcedure = RepeatProcedure(
            maxCount: 3,
            payloads: AnyIterator { RepeatPayload(TestProcedure()) { _ in configured.mutate { $0 += 1 } } })
        #expect(try await run(repeatProcedure).isSucceeded)
        #expect(repeatProcedure.count == 3)
        #expect(configured.value == 2)
    }

    /// A repeat of input procedures takes an input, injected here, and gives it to every attempt.
    @Test func test__with_input_procedure_payload() async throws {
        let producer = ResultProcedure { "ProcedureKit" }
        let greetings = Locked<[String]>([])
        let repeatProcedure = RepeatProcedure<GreetingProcedure>(maxCount: 3) { _ in
            let greeting = GreetingProcedure()
            greeting.addObserver(
                BlockObserver(didFinish: { procedure, _ in
                    if let text = (procedure as? GreetingProcedure)?.output.success {
                        greetings.mutate { $0.append(text) }
                    }
                }))
            return greeting
        }
        repeatProcedure.injectResult(from: producer)
        try await run(producer, repeatProcedure)
        #expect(repeatProcedure.outcome?.isSucceeded == true)
        #expect(greetings.value == ["Hello ProcedureKit", "Hello ProcedureKit", "Hello ProcedureKit"])
        #expect(repeatProcedure.output.success == "Hello ProcedureKit")
    }

    /// ProcedureKit's `FiniteIterator` test, as a repeat's limit: an endless source stops at `maxCount`.
    @Test func test__finite__limits_are_not_exceeeded() async throws {
        let made = Locked(0)
        let repeatProcedure = RepeatProcedure(maxCount: 2) { _ in
            made.mutate { $0 += 1 }
            return TestProcedure()
        }
        #expect(try await run(repeatProcedure).isSucceeded)
        #expect(made.value == 2)
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

    /// ProcedureKit's iterator yields 0, 3, 6…; the first value is the (unused) delay before
    /// the first attempt, so Cohort's waits before attempts 1, 2, 3… are the same numbers.
    @Test func test__incrementing() {
        let strategy = WaitStrategy.incrementing(initial: .zero, increment: .seconds(3))
        #expect((1...6).map { strategy.delay(beforeAttempt: $0) } == [0, 3, 6, 9, 12, 15].map { .seconds($0) })
    }

    @Test func test__fibonacci() {
        let strategy = WaitStrategy.fibonacci(period: .seconds(1), maximum: .seconds(30))
        #expect(
            (1...10).map { strategy.delay(beforeAttempt: $0) }
                == [0, 1, 1, 2, 3, 5, 8, 13, 21, 30].map { .seconds($0) })
    }

    /// Cohort's `.exponential` starts at its initial wait before the first repeat.
    @Test func test__exponential() {
        let strategy = WaitStrategy.exponential(initial: .seconds(1), multiplier: 2, maximum: .seconds(20))
        #expect((2...7).map { strategy.delay(beforeAttempt: $0) } == [1, 2, 4, 8, 16, 20].map { .seconds($0) })
    }
}

/// ProcedureKit's `RandomnessTests.test__random_wait_strategy`, at its scale (100,000 draws).
@Suite("RandomnessTests")
struct RandomnessTests {
    @Test func test__random_wait_strategy() {
        let strategy = WaitStrategy.random(minimum: .seconds(1), maximum: .seconds(2))
        var seen = Set<Duration>()
        for _ in 0..<100_000 {
            let wait = strategy.delay(beforeAttempt: 2)
            #expect(wait >= .seconds(1) && wait <= .seconds(2))
            if seen.count < 10 { seen.insert(wait) }
        }
        #expect(seen.count > 1, "the waits vary")
    }
}
