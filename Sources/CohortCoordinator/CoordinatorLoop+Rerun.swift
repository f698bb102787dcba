import CohortCore
import CohortJournal
import CohortSpec
import CohortWire
import Foundation

/// An earlier group's journal record, read beside the loop for `cohort rerun`, on its way back.
struct RerunRead: Sendable {
    var routing: RoutingID
    var requestID: UInt64
    var group: String
    var newID: String?
    /// The record with its spec flattened (off the loop too), or nil if the journal lacks it.
    var result: Result<(RerunSource, FlatSpec)?, JournalError>
}

/// `cohort rerun GROUP`: the group's spec submitted again as a new group, whose procedures
/// that succeeded in the earlier run (and wait for nothing that runs again) start succeeded
/// with the earlier output (``Scheduler/submit(_:id:flat:owner:reusing:now:)``).
///
/// The journal is the source: it keeps every group's spec and outputs, also those the
/// scheduler has forgotten. The record is read beside the loop once the asking turn is
/// committed (``HistoryReader``), so an outcome decided before the request is in it. Without a
/// journal there is no spec to submit again, and the request is refused.
extension CoordinatorLoop {
    func rerun(_ group: String, id newID: String?, requestID: UInt64, from routing: RoutingID) {
        func fail(_ code: ProtocolError.Code, _ message: String) {
            outbox.send(
                CoordinatorReply(requestID: requestID, .error(ProtocolError(code: code, message: message))),
                to: routing)
        }
        guard !stopping else { return fail(.shuttingDown, "the coordinator is stopping") }
        if newID == group {
            return fail(
                .invalidRequest,
                "--id \(group) is the group being re-run; a rerun is a new group: give another id, or none")
        }
        if let held = try? scheduler.groupSnapshot(group), !held.phase.isFinished {
            return fail(
                .invalidRequest,
                "group \"\(group)\" is still \(held.phase.rawValue); re-run it once it has finished, or cancel it first (cohort cancel \(group))"
            )
        }
        guard let history = journalWriter?.history else {
            return fail(
                .invalidRequest,
                "rerun needs the coordinator's journal, which keeps each group's spec and outputs; this coordinator runs without one (--no-journal)"
            )
        }
        let mailbox = self.mailbox
        history.read { reader in
            let result: Result<(RerunSource, FlatSpec)?, JournalError>
            do throws(JournalError) {
                result = .success(try reader.rerunSource(group: group).map { ($0, $0.spec.flattened()) })
            } catch {
                result = .failure(error)
            }
            mailbox.post(
                .rerunRead(
                    RerunRead(routing: routing, requestID: requestID, group: group, newID: newID, result: result)))
        }
    }

    /// Submits the earlier group's spec again, once its record is read.
    func answerRerun(_ read: RerunRead) {
        func reply(_ kind: CoordinatorReply.Kind) {
            outbox.send(CoordinatorReply(requestID: read.requestID, kind), to: read.routing)
        }
        func fail(_ code: ProtocolError.Code, _ message: String) {
            reply(.error(ProtocolError(code: code, message: message)))
        }
        guard !stopping else { return fail(.shuttingDown, "the coordinator is stopping") }
        guard let session = peers[read.routing], session.role == .client else { return }
        let source: RerunSource
        let flat: FlatSpec
        switch read.result {
        case .failure(let error):
            logger.error("cannot read a group to re-run", metadata: ["group.id": "\(read.group)", "error": "\(error)"])
            return fail(.internal, "cannot read group \"\(read.group)\" from the journal: \(error)")
        case .success(nil):
            return fail(
                .notFound,
                "no group \"\(read.group)\" in the journal (it keeps finished groups for the coordinator's retention, or until cohort prune)"
            )
        case .success(let found?):
            (source, flat) = found
        }
        guard let phase = source.phase else {
            return fail(
                .invalidRequest,
                "group \"\(read.group)\" has not finished; re-run it once it has, or cancel it first (cohort cancel \(read.group))"
            )
        }
        if flat.leaves.allSatisfy({ source.outputs[$0.path] != nil }) {
            return fail(
                .invalidRequest,
                "every procedure of group \"\(read.group)\" (\(phase.rawValue)) succeeded; there is nothing to re-run (submit its spec again to run it all)"
            )
        }
        do {
            let receipt = try scheduler.submit(
                source.spec, id: read.newID, flat: flat, owner: session.key, reusing: source.outputs, now: now)
            if !receipt.alreadySubmitted {
                metrics?.groupsSubmitted.increment()
                logger.info(
                    "group accepted",
                    metadata: [
                        "group.id": "\(receipt.id)", "group.name": "\(receipt.name)", "rerun.of": "\(read.group)",
                        "rerun.reused": "\(receipt.reused)", "client.id": "\(session.peerID)",
                    ])
            }
            reply(
                .submitted(
                    SubmitReceipt(
                        id: receipt.id, name: receipt.name, warnings: receipt.warnings,
                        alreadySubmitted: receipt.alreadySubmitted, reused: receipt.reused, rerunOf: read.group)))
            apply(receipt.actions)
        } catch {
            reply(.error(error.wire))
        }
    }
}
