import CohortSimulation
import Testing

/// Seeds that found bugs in the real code, each kept once its bug was fixed at its mechanism
/// (docs/simulation.md, "Findings").
@Suite struct RegressionSeedTests {
    /// Seed 30: a duplicated dispatch reached a worker after the attempt had finished there;
    /// the worker's machine ran it a second time, holding `prod` under a token the coordinator
    /// had revoked and granted again (`no-two-live-holders`). The machine now remembers the
    /// attempts that ended and ignores their dispatches (WorkerMachineTests too).
    @Test func aDuplicatedDispatchNeverRunsAnAttemptTwice() async {
        let report = await simulate(SimulationConfiguration(seed: 30, steps: 20_000))
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.faults["message duplicated", default: 0] > 0)
        // The run still reaches the scenario: a worker is sent an attempt it already ran.
        #expect(report.events["dispatch ignored", default: 0] > 0)
    }

    /// Seed 39 found it: a cancel acknowledged before a coordinator crash was applied again at
    /// restore and ended children the journal had no outcome for, but the restore dropped
    /// every `finished` record it made as "the journal's own"; a dependent then ran while its
    /// dependency's outcome was nowhere on disk (`dependencies-finish-first`). The restore now
    /// journals the outcomes that are new (RestoreTests checks the mechanism). The traces have
    /// changed since (the simulation grew; operator drains now last across a worker's
    /// sessions until undrained; the workloads gained conditions, repeats, matrices, counting locks,
    /// priorities, children that add children and cancel their groups, and maps; the faults, leader changes; workers
    /// send unconfirmed results again); seed 3 is one that now takes that path: it must take
    /// it, and keep every invariant.
    @Test func aChildEndedAtRestoreIsJournaledBeforeItsDependentsRun() async {
        let report = await simulate(SimulationConfiguration(seed: 3, steps: 20_000))
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.events["outcome journaled at restore", default: 0] > 0)
    }

    /// Seed 4 (5,000 steps) found it: a repeating child's run succeeded with `until` false
    /// just before a coordinator crash; the journal still held that attempt as in flight, the
    /// restarted coordinator ran it again as its first run, and the child had more successful
    /// runs than its `max` (`repeat-bounded`). An unreported restored attempt of a repeating
    /// child now counts as a run (ConditionRestoreTests checks the mechanism).
    @Test func aRepeatRunLostInACrashStillCountsTowardsMax() async {
        let report = await simulate(SimulationConfiguration(seed: 4, steps: 5_000))
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.events["repeat run", default: 0] > 0)
        #expect(report.events["child skipped", default: 0] > 0)
        #expect(report.events["coordinator restart", default: 0] > 0)
    }

    /// A leader change (issue 16; docs/simulation.md, "Model"): the leader is paused past its
    /// lease with its clock stopped, the standby takes the lease with the next epoch, and the
    /// deposed leader resumes believing it leads; its first turn that would commit is refused
    /// by the journal's epoch check, it steps down, and every invariant holds. Workers send
    /// the results no coordinator confirmed again to the new leader, which takes them (the
    /// worker's machine keeps each result until a later heartbeat is acknowledged). Seed 1
    /// takes that path within 3,000 steps.
    @Test func aDeposedLeaderThatActsIsFencedByTheJournalsEpoch() async {
        let report = await simulate(SimulationConfiguration(seed: 1, steps: 3000))
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.events["standby takeover", default: 0] > 0)
        #expect(report.events["deposed leader's commit refused", default: 0] > 0)
        #expect(report.events["deposed leader steps down", default: 0] > 0)
        #expect(report.events["results sent again", default: 0] > 0)
        #expect(report.events["result sent again accepted", default: 0] > 0)
    }
}
