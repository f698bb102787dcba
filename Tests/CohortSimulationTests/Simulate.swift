import CohortSimulation
import CohortTestSupport

/// Runs a simulation to its end on a thread of its own: a run takes seconds of computation,
/// and the test runner's other tests need the cooperative pool's threads meanwhile.
func simulate(_ configuration: SimulationConfiguration) async -> SimulationReport {
    await onItsOwnThread {
        var simulation = Simulation(configuration)
        return simulation.run()
    }
}
