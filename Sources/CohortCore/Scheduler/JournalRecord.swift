import CohortSpec

/// What the journal writes down, as the scheduler reports it in a
/// ``SchedulerAction/record(_:)`` action (only while ``Scheduler/emitsRecords`` is on).
///
/// Every change the journal keeps leaves the scheduler this way, in the same stream as the
/// messages it causes, so the shell can commit a turn's records before that turn's messages
/// leave: a client learns a group's id only once the group is on disk, a worker gets an
/// attempt only once its dispatch is.
public enum JournalRecord: Hashable, Sendable {
    /// A group was accepted (not an idempotent resubmission).
    case submitted(id: String, spec: GroupSpec, owner: String?, at: Timestamp)
    /// An attempt was sent to a worker (state ``ChildRecord/State/inFlight``, with its worker's
    /// name and its fencing tokens).
    case dispatched(ChildRecord)
    /// A child finished (its outcome, output, latest attempt and worker).
    case finished(ChildRecord)
    /// A group finished; `code` is its own cancel reason's, when it finished cancelled with
    /// one (`reason` holds its words).
    case groupFinished(id: String, GroupPhase, reason: String?, code: CancellationReason.Code? = nil, at: Timestamp)
    /// A client asked to cancel a group (`path` `""`) or a child; replayed after a restart.
    case cancelRequested(group: String, path: String, reason: CancellationReason, at: Timestamp)
    /// A worker-local grant was made or released.
    case localLock(LocalLockChange)
    /// Children were added to a running group (`into`: the nested group's path, `""` the top
    /// level); replayed in order after a restart.
    case childrenAdded(group: String, into: String, children: [ChildSpec], at: Timestamp)
}
