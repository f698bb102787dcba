import CohortCore
import CohortSpec
import CohortWire
import Dispatch
import Foundation

/// A submission parsed (and flattened) off the loop thread, on its way back to the loop.
struct ParsedSubmission: Sendable {
    var routing: RoutingID
    var requestID: UInt64
    var groupID: String?
    var result: Result<(GroupSpec, FlatSpec), SpecErrors>
}

/// Submissions: parse and validate with `SpecParser`, then hand the group to the scheduler.
///
/// Parsing a large spec takes a while (a 10,000-child document, tens to hundreds of
/// milliseconds), so documents over ``inlineParseLimit`` are parsed on a background queue and
/// come back through the mailbox; the loop keeps serving meanwhile. Replies to a client may
/// then come out of request order, which the protocol allows (docs/protocol.md §7).
extension CoordinatorLoop {
    /// Documents up to this size are parsed on the loop thread, at once.
    static let inlineParseLimit = 16 * 1024

    func submit(_ submission: Submission, requestID: UInt64, from routing: RoutingID) {
        guard !stopping else {
            let refusal = ProtocolError(code: .shuttingDown, message: "the coordinator is stopping")
            outbox.send(CoordinatorReply(requestID: requestID, .error(refusal)), to: routing)
            return
        }
        if let refusal = oversizedSpec(submission) {
            outbox.send(CoordinatorReply(requestID: requestID, .error(refusal)), to: routing)
            return
        }
        let limits = configuration.specLimits
        let parse: @Sendable () -> Result<(GroupSpec, FlatSpec), SpecErrors> = {
            do throws(SpecErrors) {
                let spec = try SpecParser.parse(
                    text: submission.document, format: submission.format.core, sourceName: submission.sourceName,
                    limits: limits)
                return .success((spec, spec.flattened()))
            } catch {
                return .failure(error)
            }
        }
        if submission.document.utf8.count <= Self.inlineParseLimit {
            accept(
                ParsedSubmission(routing: routing, requestID: requestID, groupID: submission.groupID, result: parse()))
            return
        }
        let mailbox = self.mailbox
        let groupID = submission.groupID
        parsing.async {
            mailbox.post(
                .parsed(ParsedSubmission(routing: routing, requestID: requestID, groupID: groupID, result: parse())))
        }
    }

    /// Hands a parsed submission to the scheduler and answers the client.
    func accept(_ parsed: ParsedSubmission) {
        func reply(_ kind: CoordinatorReply.Kind) {
            outbox.send(CoordinatorReply(requestID: parsed.requestID, kind), to: parsed.routing)
        }
        guard !stopping else {
            return reply(.error(ProtocolError(code: .shuttingDown, message: "the coordinator is stopping")))
        }
        guard let session = peers[parsed.routing], session.role == .client else { return }
        switch parsed.result {
        case .failure(let errors):
            reply(.error(errors.wire))
        case .success(let (spec, flat)):
            do {
                let receipt = try scheduler.submit(spec, id: parsed.groupID, flat: flat, owner: session.key, now: now)
                if !receipt.alreadySubmitted {
                    logger.info(
                        "group accepted",
                        metadata: [
                            "group.id": "\(receipt.id)", "group.name": "\(receipt.name)",
                            "client.id": "\(session.peerID)",
                        ])
                }
                reply(
                    .submitted(
                        SubmitReceipt(
                            id: receipt.id, name: receipt.name, warnings: receipt.warnings,
                            alreadySubmitted: receipt.alreadySubmitted)))
                apply(receipt.actions)
            } catch {
                reply(.error(error.wire))
            }
        }
    }
}
