import CohortCore
import CohortSpec
import Foundation

/// What one turn of the coordinator's loop changed, written in one transaction
/// (``Journal/write(_:)``) before the turn's replies are sent.
public struct JournalBatch: Sendable {
    /// A group accepted this turn.
    public struct Submission: Sendable {
        public var id: String
        public var spec: GroupSpec
        public var submittedAt: Timestamp
        /// The submitting client's public key (Z85), when the cluster uses CURVE.
        public var owner: String?

        public init(id: String, spec: GroupSpec, submittedAt: Timestamp, owner: String? = nil) {
            self.id = id
            self.spec = spec
            self.submittedAt = submittedAt
            self.owner = owner
        }
    }

    public var submissions: [Submission] = []
    /// Attempts sent to workers (state ``ChildRecord/State/inFlight``).
    public var dispatches: [ChildRecord] = []
    /// Children that finished.
    public var finishes: [ChildRecord] = []
    /// Groups that finished: id, outcome, reason, its cancel's code (if it had one), when.
    public var outcomes:
        [(id: String, phase: GroupPhase, reason: String?, code: CancellationReason.Code?, at: Timestamp)] =
            []
    /// Cancels clients asked for: group, path (`""` for the whole group), reason, when.
    public var cancels: [(group: String, path: String, reason: CancellationReason, at: Timestamp)] = []
    /// Fencing counters that moved: category → last token.
    public var fencing: [String: UInt64] = [:]
    /// Worker-local grants made and released, in order.
    public var localLocks: [LocalLockChange] = []
    /// Children added to running groups, in order: group, nested group's path (`""` the top
    /// level), the children, when.
    public var additions: [(group: String, into: String, children: [ChildSpec], at: Timestamp)] = []

    public init() {}

    public var isEmpty: Bool {
        submissions.isEmpty && dispatches.isEmpty && finishes.isEmpty && outcomes.isEmpty && cancels.isEmpty
            && fencing.isEmpty && localLocks.isEmpty && additions.isEmpty
    }

    /// How many records the batch holds (submissions, dispatches, finishes, outcomes, cancels
    /// and local lock changes; the fencing counters ride along), for the journal's metrics.
    public var recordCount: Int {
        submissions.count + dispatches.count + finishes.count + outcomes.count + cancels.count + localLocks.count
            + additions.count
    }

    /// Adds what the scheduler asked to record. The fencing counters a record carries (a
    /// dispatch's tokens, a local grant's) move with it: the largest token of each category a
    /// turn sent out is written. (A token never sent out needs no record: the epoch alone
    /// keeps later tokens larger.)
    public mutating func append(_ record: JournalRecord) {
        switch record {
        case .submitted(let id, let spec, let owner, let at):
            submissions.append(Submission(id: id, spec: spec, submittedAt: at, owner: owner))
        case .dispatched(let child):
            dispatches.append(child)
            noteTokens(child.tokens)
        case .finished(let child):
            finishes.append(child)
        case .groupFinished(let id, let phase, let reason, let code, let at):
            outcomes.append((id, phase, reason, code, at))
        case .cancelRequested(let group, let path, let reason, let at):
            cancels.append((group, path, reason, at))
        case .childrenAdded(let group, let into, let children, let at):
            additions.append((group, into, children, at))
        case .localLock(let change):
            localLocks.append(change)
            if case .granted(let grant) = change { noteTokens(grant.tokens) }
        }
    }

    private mutating func noteTokens(_ tokens: [String: UInt64]) {
        for (category, token) in tokens where token > fencing[category] ?? 0 {
            fencing[category] = token
        }
    }

    public mutating func removeAll() {
        submissions.removeAll(keepingCapacity: true)
        dispatches.removeAll(keepingCapacity: true)
        finishes.removeAll(keepingCapacity: true)
        outcomes.removeAll(keepingCapacity: true)
        cancels.removeAll(keepingCapacity: true)
        fencing.removeAll(keepingCapacity: true)
        localLocks.removeAll(keepingCapacity: true)
        additions.removeAll(keepingCapacity: true)
    }
}

/// What ``Journal/load(finishedSince:)`` found: every group to restore and the fencing counters.
public struct JournalContents: Sendable {
    public var groups: [RestoredGroup]
    public var lastTokens: [String: UInt64]

    public init(groups: [RestoredGroup], lastTokens: [String: UInt64]) {
        self.groups = groups
        self.lastTokens = lastTokens
    }
}
