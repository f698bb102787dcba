import CohortCore
import CohortSpec
import CohortWire
import Testing

@testable import CohortSimulation

/// The simulated clients: the real `ClientSession` over the simulated network.
@Suite struct ClientSimulationTests {
    /// Seed 1 found a client session that never said HELLO again after its first one was lost
    /// with the coordinator (only one-answer requests were open); it stayed "reconnecting" for
    /// good and its submissions never got an answer (`liveness`). Fixed in `ClientSession`'s
    /// timers (ClientSessionTests has the unit test); the seed stays as a regression test.
    @Test func seed1EveryClientGetsItsAnswersAfterCoordinatorCrashes() async {
        let report = await simulate(SimulationConfiguration(seed: 1, steps: 20_000))
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.faults["coordinator crash", default: 0] > 0)
        #expect(report.events["submit unanswered", default: 0] > 0, "the session's retries were exercised")
        #expect(report.events["watch", default: 0] > 0)
    }

    /// Seed 17 found a worker that ran a duplicated dispatch of an attempt it had already
    /// run, after its category was granted to another holder (`no-two-live-holders`). Fixed
    /// in `WorkerMachine` (WorkerMachineTests has the unit test); the seed stays.
    @Test func seed17AWorkerRunsADispatchOnce() async {
        let report = await simulate(SimulationConfiguration(seed: 17, steps: 20_000))
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.faults["message duplicated", default: 0] > 0)
    }

    /// A made-up history: `watch-sees-the-outcome` bites when a watch reports another outcome
    /// than the journal's, or reports it twice.
    @Test func aWatchThatSeesAnotherOutcomeOrSeesItTwiceFails() {
        var simulation = Simulation(SimulationConfiguration(seed: 7, steps: 0))
        let spec = GroupSpec("g", children: [ChildSpec("a", run: Simulation.kind)])
        simulation.journal.groups["x"] = SimJournal.Group(
            spec: spec, sequence: 1, submittedAt: simulation.now, outcome: (.succeeded, nil, simulation.now))
        func finished(_ state: GroupState) -> CoordinatorReply.Kind {
            .watchEvents([WatchEvent(group: "x", at: simulation.now.wire, .finished(state: state, reason: nil))])
        }

        var wrong = simulation
        wrong.clients[0].calls[99] = .watch(group: "x")
        wrong.clientWatchEvent(0, 99, finished(.failed))
        #expect(wrong.failure?.invariant == .watchSeesOutcome)

        var twice = simulation
        twice.clients[0].calls[99] = .watch(group: "x")
        twice.clientWatchEvent(0, 99, finished(.succeeded))
        #expect(twice.failure == nil)
        twice.clientWatchEvent(0, 99, finished(.succeeded))
        #expect(twice.failure?.invariant == .watchSeesOutcome)
    }
}
