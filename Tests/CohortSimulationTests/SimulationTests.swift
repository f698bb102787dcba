import CohortSimulation
import Testing

@Suite struct SimulationTests {
    /// The same seed gives the same trace, byte for byte.
    @Test func theSameSeedGivesTheSameTrace() {
        var first = Simulation(SimulationConfiguration(seed: 42, steps: 3000))
        var second = Simulation(SimulationConfiguration(seed: 42, steps: 3000))
        let a = first.run()
        let b = second.run()
        #expect(a.traceHash == b.traceHash)
        #expect(a.steps == b.steps)
        var other = Simulation(SimulationConfiguration(seed: 43, steps: 3000))
        #expect(other.run().traceHash != a.traceHash)
    }

    /// A real scheduler bug the simulation found (docs/simulation.md, "Findings"): after a
    /// coordinator restart, a restored in-flight attempt that no worker reports gets a new
    /// attempt whose input lacks its injections (`restoreOrphan` sets `injected` without the
    /// input). Seed 3 finds it; this test flips when the bug is fixed, and then becomes the
    /// regression test with the expectation inverted.
    @Test func seed3FindsTheLostInjectionAfterARestart() {
        var simulation = Simulation(SimulationConfiguration(seed: 3, steps: 20_000))
        let report = simulation.run()
        #expect(report.failure?.invariant == .injectedIsProducerOutput)
        #expect(report.failure?.step == 3766)
    }
}
