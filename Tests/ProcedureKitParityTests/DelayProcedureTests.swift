import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/DelayProcedureTests.swift`. ProcedureKit's
/// `until:` takes a `Date`; Cohort's an instant of the continuous clock (see the HANDBOOK).
@Suite("DelayProcedureTests")
struct DelayProcedureTests {
    /// Cohort: the default name is the type's (ProcedureKit: "Delay for 1.0 seconds").
    @Test func test__with_interval_name() {
        #expect(DelayProcedure(by: .seconds(1)).name == "DelayProcedure")
    }

    @Test func test__with_negative_time_interval_finishes_immediately() async throws {
        let delay = DelayProcedure(by: .seconds(-9_000_000))
        #expect(try await run(delay, within: .seconds(5)).isSucceeded)
    }

    @Test func test__completes_after_interval() async throws {
        let delay = DelayProcedure(by: .milliseconds(500))
        let start = ContinuousClock.now
        #expect(try await run(delay).isSucceeded)
        let taken = ContinuousClock.now - start
        #expect(taken >= .milliseconds(500))
    }

    @Test func test__timer_is_not_fired_when_cancelled() async throws {
        let delay = DelayProcedure(by: .seconds(10))
        delay.cancel()
        let start = ContinuousClock.now
        #expect(try await run(delay).isCancelled)
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func test__timer_cancelled_after_execute_finishes_immediately() async throws {
        let delay = DelayProcedure(by: .seconds(10))
        delay.addObserver(BlockObserver(didExecute: { $0.cancel() }))
        let start = ContinuousClock.now
        #expect(try await run(delay).isCancelled)
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func test__with_date_name() {
        #expect(DelayProcedure(until: .now + .seconds(1)).name == "DelayProcedure")
    }

    @Test func test__with_distant_past_finishes_immediately() async throws {
        let delay = DelayProcedure(until: .now - .seconds(9_000_000))
        let started = ContinuousClock.now
        #expect(try await run(delay).isSucceeded)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func test__completes_at_instant() async throws {
        let until = ContinuousClock.now + .milliseconds(300)
        let delay = DelayProcedure(until: until)
        #expect(try await run(delay).isSucceeded)
        #expect(ContinuousClock.now >= until)
    }

    @Test func test__inject_delay_from_procedure_outputing_delay() async throws {
        let result = ResultProcedure { Delay.by(.milliseconds(500)) }
        let delay = DelayProcedure().injectResult(from: result)
        let started = ContinuousClock.now
        try await run(result, delay)
        #expect(delay.outcome?.isSucceeded == true)
        #expect(ContinuousClock.now - started >= .milliseconds(500))
    }

    /// ProcedureKit's `injectDelay(from:) { $0.interval }`: Cohort's `injectResult(from:via:)`.
    @Test func test__inject_delay_from_procedure_outputing_interval() async throws {
        let result = ResultProcedure { Duration.milliseconds(500) }
        let delay = DelayProcedure().injectResult(from: result) { .by($0) }
        let started = ContinuousClock.now
        try await run(result, delay)
        #expect(delay.outcome?.isSucceeded == true)
        #expect(ContinuousClock.now - started >= .milliseconds(500))
    }

    /// Not in ProcedureKit: a delay that starts without its input fails, naming why.
    @Test func delay_without_input_fails() async throws {
        let outcome = try await run(DelayProcedure())
        #expect((outcome.error as? ProcedureError)?.code == .requirementNotSatisfied)
    }
}
