import CohortTestSupport
import Testing

@testable import Procedures

@Suite("WaitStrategy")
struct WaitStrategyTests {
    /// A `random` that must not be called.
    static func noRandom() -> Double {
        Issue.record("random was called")
        return 0
    }

    @Test func immediateNeverWaits() {
        for attempt in 1...5 {
            #expect(WaitStrategy.immediate.delay(beforeAttempt: attempt, random: Self.noRandom) == .zero)
        }
    }

    @Test func noWaitBeforeTheFirstAttempt() {
        #expect(WaitStrategy.fixed(.seconds(1)).delay(beforeAttempt: 1) == .zero)
        #expect(WaitStrategy.exponential(initial: .seconds(1), jitter: 1).delay(beforeAttempt: 1) == .zero)
    }

    @Test func fixedWaitsTheSameBeforeEveryRepeat() {
        for attempt in 2...5 {
            #expect(WaitStrategy.fixed(.milliseconds(250)).delay(beforeAttempt: attempt) == .milliseconds(250))
        }
    }

    @Test func exponentialMultipliesForEachFurtherAttempt() {
        let strategy = WaitStrategy.exponential(initial: .milliseconds(100), multiplier: 2)
        let waits = (2...5).map { strategy.delay(beforeAttempt: $0, random: Self.noRandom) }
        #expect(waits == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800)])
    }

    @Test func exponentialIsCappedAtItsMaximum() {
        let strategy = WaitStrategy.exponential(initial: .milliseconds(100), multiplier: 3, maximum: .milliseconds(500))
        let waits = (2...5).map { strategy.delay(beforeAttempt: $0) }
        #expect(waits == [.milliseconds(100), .milliseconds(300), .milliseconds(500), .milliseconds(500)])
    }

    @Test(arguments: [(0.0, 1_000), (0.5, 750), (0.999, 500.5)] as [(Double, Double)])
    func jitterScalesTheWaitByAFactorBetweenOneMinusJitterAndOne(random: Double, expectedMilliseconds: Double) {
        let strategy = WaitStrategy.exponential(initial: .seconds(1), jitter: 0.5)
        let wait = strategy.delay(beforeAttempt: 2) { random }
        #expect(abs(wait.seconds * 1_000 - expectedMilliseconds) < 0.001)
    }

    @Test func jitterIsClampedToZeroThroughOne() {
        let tooMuch = WaitStrategy.exponential(initial: .seconds(1), jitter: 5)
        #expect(tooMuch.delay(beforeAttempt: 2) { 0.5 } == .milliseconds(500))
        let negative = WaitStrategy.exponential(initial: .seconds(1), jitter: -1)
        #expect(negative.delay(beforeAttempt: 2, random: Self.noRandom) == .seconds(1))
    }

    @Test func jitteredWaitIsAppliedAfterTheCap() {
        let strategy = WaitStrategy.exponential(initial: .seconds(1), multiplier: 10, maximum: .seconds(2), jitter: 1)
        #expect(strategy.delay(beforeAttempt: 4) { 0.25 } == .milliseconds(1_500))
    }
}
