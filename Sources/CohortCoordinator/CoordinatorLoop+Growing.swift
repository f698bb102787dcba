import CohortCore
import CohortSpec
import CohortWire
import Foundation

/// Growing groups: children added to a running group (docs/spec.md, "Growing groups").
///
/// The document is parsed on the loop (the limits bound it as a submission's are: additions
/// are expected to be small, and the running spec they are validated against is here), the
/// grown spec is validated whole, the scheduler grows the run, and the addition's record goes
/// into the turn's journal batch, committed before the reply leaves.
extension CoordinatorLoop {
    /// A client's `addChildren` request.
    func addChildren(_ addition: ChildrenAddition, to group: String, requestID: UInt64, from routing: RoutingID) {
        let reply: CoordinatorReply.Kind
        switch grow(group, addition) {
        case .success(let paths): reply = .childrenAdded(group: group, paths: paths)
        case .failure(let error): reply = .error(error)
        }
        outbox.send(CoordinatorReply(requestID: requestID, reply), to: routing)
    }

    /// A running attempt's `context.addChildren(_:into:)`, over its worker's connection:
    /// refused (a WorkerError naming the attempt) unless the attempt runs on this worker and
    /// the addition is valid.
    func addChildren(by ref: AttemptRef, _ addition: ChildrenAddition, worker: SessionID, routing: RoutingID) {
        guard scheduler.isRunning(ref, on: worker) else {
            return refuseAttemptRequest(
                ref, "the attempt is not running on this worker (it ended, or was superseded)", to: routing)
        }
        if case .failure(let error) = grow(ref.group, addition) {
            refuseAttemptRequest(ref, error.message, to: routing)
        }
    }

    /// Parses, validates and adds; the added nodes' paths, or the error to answer with.
    private func grow(_ group: String, _ addition: ChildrenAddition) -> Result<[String], ProtocolError> {
        let limits = configuration.specLimits
        let into = addition.into ?? ""
        do throws(SpecErrors) {
            let children = try SpecParser.parseChildren(
                text: addition.document, format: addition.format.core, limits: limits)
            let spec: GroupSpec
            do throws(SchedulerError) {
                try scheduler.checkGrowable(group, into: into)
                spec = try scheduler.runningSpec(group)
            } catch {
                return .failure(error.wire)
            }
            // Adding a child again exactly as it was added is a no-op: an adder that runs again
            // (a retry, a repeat, a rerun that runs it again) adds what it added before.
            // Names are unique among siblings, so a child equal to one present has its name.
            let present = Dictionary((spec.children(at: into) ?? []).map { ($0.name, $0) }) { first, _ in first }
            let already = children.filter { present[$0.name] == $0 }
            let fresh = children.filter { present[$0.name] != $0 }
            guard !fresh.isEmpty else {
                return .success(already.map { into.isEmpty ? $0.name : "\(into)/\($0.name)" })
            }
            let grown = try spec.adding(fresh, into: into, limits: limits)
            do throws(SchedulerError) {
                let (paths, actions) = try scheduler.addChildren(
                    group, children: fresh, into: into, grown: grown, now: now)
                logger.info(
                    "children added",
                    metadata: ["group.id": "\(group)", "into": "\(into)", "children.count": "\(paths.count)"])
                apply(actions)
                return .success(paths)
            } catch {
                return .failure(error.wire)
            }
        } catch {
            return .failure(error.wire)
        }
    }
}
