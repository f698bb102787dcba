import CohortCore
import CohortSpec
import CohortWire
import Foundation

/// The limit on outputs the coordinator keeps (docs/security.md, "Limits"): what it keeps of
/// a worker's outcome, and what a result reply says about cutting. Pure: the loop logs a cut.
enum OutputTruncation {
    /// A worker's outcome as the coordinator keeps it.
    struct Kept: Hashable {
        var outcome: AttemptOutcome
        /// The output was cut to fit the limit.
        var truncated: Bool
        /// The size of the output the worker sent, when it was cut.
        var receivedBytes: Int?
    }

    /// `outcome`, with an output over `limit` bytes cut down with a visible marker
    /// (``OutputLimit``) and flagged. Failures and cancellations are kept as they are.
    static func keep(_ outcome: WireOutcome, limit: Int) -> Kept {
        guard case .succeeded(let output) = outcome, output.count > limit else {
            return Kept(outcome: AttemptOutcome(outcome), truncated: false)
        }
        let (kept, _) = OutputLimit.fit(output, limit: limit)
        return Kept(outcome: .succeeded(output: kept), truncated: true, receivedBytes: output.count)
    }

    /// Whether a result's output was cut (docs/protocol.md §7, Result): a procedure's own flag
    /// (`child`, the snapshot of the child at `path`); for a group (no path, or a nested
    /// group's), whether any procedure inside it was cut. `children` (every child of the
    /// group run, depth-first) is asked for only then.
    static func ofResult(
        path: String?, child: ChildSnapshot?, children: () throws(SchedulerError) -> [ChildSnapshot]
    ) throws(SchedulerError) -> Bool {
        if let child, !child.isGroup { return child.outputTruncated }
        let prefix = path.map { $0 + "/" } ?? ""
        return try children().contains { !$0.isGroup && $0.outputTruncated && $0.path.hasPrefix(prefix) }
    }
}
