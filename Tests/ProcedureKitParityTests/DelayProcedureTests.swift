import Testing
@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitTests/DelayProcedureTests.swift`. (`DelayProcedure(until:)`
/// and a delay taken by injection are API Cohort lacks: the date and inject tests are left out.)
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
}
