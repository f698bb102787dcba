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

    /// Seeds that found real scheduler bugs keep every invariant now (docs/simulation.md,
    /// "Findings"): seed 3 found a restored attempt re-run without its injections and a
    /// restored group finishing a second time; seed 37 an inner group's hold restored under
    /// an outer hold that was not (two holders of `prod`); seed 89 a cancel acknowledged while
    /// an adopted attempt was still queued on its worker (it started after). The others run
    /// the same faults.
    @Test(arguments: [1 as UInt64, 2, 3, 4, 5, 37, 89])
    func aSeedKeepsEveryInvariant(seed: UInt64) {
        var simulation = Simulation(SimulationConfiguration(seed: seed, steps: 20_000))
        let report = simulation.run()
        #expect(report.failure == nil, "seed \(seed): \(report.failure.map { "\($0)" } ?? "")")
        #expect(report.steps >= 20_000)
    }

    /// Seeds whose failures were the model's, not Cohort's (docs/simulation.md, "Findings"):
    /// seed 18, a worker that answered a cancel on no session while its HELLO listed the
    /// attempt; seeds 53 and 79, a partition that loses a result while the connection lives
    /// on. Enabled once the simulated worker and network are rewritten.
    @Test(.disabled("the model's worker and network are being rewritten"), arguments: [18 as UInt64, 53, 79])
    func aModelFindingKeepsEveryInvariant(seed: UInt64) {
        var simulation = Simulation(SimulationConfiguration(seed: seed, steps: 20_000))
        let report = simulation.run()
        #expect(report.failure == nil, "seed \(seed): \(report.failure.map { "\($0)" } ?? "")")
    }

    /// Each deliberate bug is caught by the invariant it breaks, on some seed of a few.
    /// (`sameEpochAfterRestart` is not among them: the journal restores each category's last
    /// token, so tokens still grow after such a restart in this model, whose journal never
    /// loses a record; it would matter for a token the journal did not hold.)
    @Test(arguments: [Mutation.ignoreLease, .startCancelled])
    func aDeliberateBugIsCaught(mutation: Mutation) {
        var caught: [String] = []
        for seed in 1...6 as ClosedRange<UInt64> {
            var configuration = SimulationConfiguration(seed: seed, steps: 20_000)
            configuration.mutation = mutation
            var simulation = Simulation(configuration)
            if let failure = simulation.run().failure { caught.append("\(failure.invariant)") }
        }
        #expect(!caught.isEmpty, "\(mutation) went unnoticed on seeds 1–6")
    }
}
