#if DELIBERATE_BUGS
    /// Deliberate bugs in the scheduler, for the simulation to show that its invariants catch
    /// each class of bug (issue 11, "Show that it bites"; docs/simulation.md, "Bug classes").
    ///
    /// Only in builds with the `DELIBERATE_BUGS` condition (debug builds, and the optimized
    /// test build of `scripts/test`): a release build has neither this type nor
    /// ``SchedulerConfiguration/mutations``. Each is switched on at the one place its mechanism
    /// lives, and nowhere else.
    public enum SchedulerMutation: String, Hashable, Sendable, CaseIterable {
        /// A holding group's hold covers only its own `exclusive` categories, not its
        /// descendants' (``Scheduler/addRun(_:id:flat:sequence:owner:submittedAt:)``): a group
        /// holding p whose child waits for q, and one holding q whose child waits for p,
        /// deadlock.
        case deadlockHolds
        /// A lost worker's grants are not revoked when its session is declared lost
        /// (``Scheduler/loseWorker(_:reason:loss:handedBack:now:)``).
        case keepLostWorkerGrants
        /// A restored scheduler ignores the journal's last tokens and the epoch's token floor
        /// (``Scheduler/restore(_:lastTokens:grace:now:)``): tokens start over.
        case noTokenRaiseAfterRestart
        /// A result or started report of a superseded attempt (an older attempt, or another
        /// attempt id of the same child) is taken as the current attempt's
        /// (``Scheduler/current(_:on:)``).
        case acceptSupersededResult
    }

    extension Scheduler {
        /// Whether the deliberate bug `mutation` is on.
        func mutated(_ mutation: SchedulerMutation) -> Bool { configuration.mutations.contains(mutation) }
    }
#endif
