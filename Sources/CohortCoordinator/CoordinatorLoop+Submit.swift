import CohortCore
import CohortSpec
import CohortWire
import DequeModule
import Dispatch
import Foundation

/// A submission parsed (and flattened) off the loop thread, on its way back to the loop.
struct ParsedSubmission: Sendable {
    var routing: RoutingID
    var requestID: UInt64
    var groupID: String?
    var result: Result<(GroupSpec, FlatSpec), SpecErrors>
    /// Refuse, instead of accepting with warnings, a group some of whose procedures no
    /// connected worker could run.
    var strict = false
    /// `cohort submit --priority`: overrides the spec's.
    var priority: Int32?
}

/// Submissions: parse, validate and flatten with `SpecParser` (one tree for validation and
/// flattening), then hand the group to the scheduler.
///
/// No request may stall the loop. Only a small document in strict JSON (what `CohortClient`
/// sends) is parsed on the loop thread: the JSON reader's cost is bounded by the text's size.
/// Everything else (YAML, whose aliases can expand a few hundred bytes into a billion values,
/// or large documents) is parsed by the ``SpecParsingPool`` beside the loop and comes back
/// through the mailbox; the loop keeps serving meanwhile. The pool parses one client's
/// documents one at a time, in order, and takes clients in turn, so one client's documents
/// never hold up another's for more than one parse; a client with ``SpecParsingPool/perClientLimit``
/// documents waiting is refused more.
extension CoordinatorLoop {
    /// Strict-JSON documents up to this size are parsed on the loop thread, at once.
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
        let groupID = submission.groupID
        // Inline only behind nothing of the same client's, so its replies keep request order.
        if submission.format == .json, submission.document.utf8.count <= Self.inlineParseLimit,
            !parsingPool.hasWork(for: routing)
        {
            do throws(SpecErrors) {
                if let parsed = try SpecParser.parseStrictJSONFlattened(
                    text: submission.document, sourceName: submission.sourceName, limits: limits)
                {
                    accept(
                        ParsedSubmission(
                            routing: routing, requestID: requestID, groupID: groupID,
                            result: .success(parsed), strict: submission.strict,
                            priority: submission.priority))
                    return
                }
            } catch {
                accept(
                    ParsedSubmission(
                        routing: routing, requestID: requestID, groupID: groupID, result: .failure(error),
                        strict: submission.strict, priority: submission.priority))
                return
            }
        }
        let mailbox = self.mailbox
        let queued = parsingPool.enqueue(for: routing) {
            let result: Result<(GroupSpec, FlatSpec), SpecErrors>
            do throws(SpecErrors) {
                result = .success(
                    try SpecParser.parseFlattened(
                        text: submission.document, format: submission.format.core,
                        sourceName: submission.sourceName, limits: limits))
            } catch {
                result = .failure(error)
            }
            mailbox.post(
                .parsed(
                    ParsedSubmission(
                        routing: routing, requestID: requestID, groupID: groupID, result: result,
                        strict: submission.strict, priority: submission.priority)))
        }
        if !queued {
            let limit = SpecParsingPool.perClientLimit
            let refusal = ProtocolError(
                code: .invalidRequest,
                message:
                    "this client already has \(limit) specs waiting to be parsed; wait for their replies before submitting more (limit \(limit) per client)"
            )
            outbox.send(CoordinatorReply(requestID: requestID, .error(refusal)), to: routing)
        }
    }

    /// A submission parsed on the pool came back to the loop.
    func acceptParsed(_ parsed: ParsedSubmission) {
        parsingPool.finished(for: parsed.routing)
        accept(parsed)
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
        case .success(let (parsedSpec, flat)):
            var spec = parsedSpec
            if let priority = parsed.priority {
                guard GroupSpec.priorityRange.contains(Int(priority)) else {
                    let error = SpecError(
                        .invalidValue, path: "priority",
                        "--priority \(priority) is out of range; a priority is a whole number from "
                            + "\(GroupSpec.priorityRange.lowerBound) to \(GroupSpec.priorityRange.upperBound)")
                    return reply(.error(SpecErrors([error]).wire))
                }
                spec.priority = Int(priority)
            }
            if parsed.strict, parsed.groupID.map({ !scheduler.contains(group: $0) }) ?? true {
                let missing = scheduler.unplaceable(flat)
                guard missing.isEmpty else {
                    let message = "refused (strict): \(missing.joined(separator: "; ")); nothing was submitted"
                    return reply(.error(ProtocolError(code: .noCapableWorker, message: message)))
                }
            }
            do {
                let receipt = try scheduler.submit(spec, id: parsed.groupID, flat: flat, owner: session.key, now: now)
                if !receipt.alreadySubmitted {
                    metrics?.groupsSubmitted.increment()
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

/// Where the coordinator parses the submissions it does not parse on its loop.
///
/// At most `threads` parses run at once (half the processors, at least one), beside the loop
/// and never on it. Each client's documents wait in its own queue and are parsed one at a
/// time, in the order they came, so its replies keep their order; clients take turns, so a
/// client with many (or slow, hostile) documents delays another by at most one parse per
/// thread. A client may have `perClientLimit` documents waiting or being parsed.
///
/// Not thread-safe: the loop thread calls every method (the work itself runs elsewhere and
/// reports back through the loop's mailbox, which then calls `finished(for:)`).
final class SpecParsingPool {
    /// The most documents one client may have waiting or being parsed.
    static let perClientLimit = 64

    typealias Work = @Sendable () -> Void

    let threads: Int
    private let queue = DispatchQueue(label: "cohort.coordinator.spec-parsing", attributes: .concurrent)
    /// Each client's documents not yet started.
    private var waiting: [RoutingID: Deque<Work>] = [:]
    /// Clients with a document waiting and none being parsed, in turn order.
    private var turns = Deque<RoutingID>()
    /// Clients with a document being parsed.
    private var running: Set<RoutingID> = []

    init(threads: Int = max(1, ProcessInfo.processInfo.activeProcessorCount / 2)) {
        self.threads = threads
    }

    /// Whether `routing` has a document waiting or being parsed.
    func hasWork(for routing: RoutingID) -> Bool {
        running.contains(routing) || waiting[routing] != nil
    }

    /// Queues `work` for `routing`; false (and nothing queued) if it already has `perClientLimit`.
    func enqueue(for routing: RoutingID, _ work: @escaping Work) -> Bool {
        let queued = waiting[routing]?.count ?? 0
        guard queued + (running.contains(routing) ? 1 : 0) < Self.perClientLimit else { return false }
        if queued == 0, !running.contains(routing) { turns.append(routing) }
        waiting[routing, default: []].append(work)
        startWhatCanStart()
        return true
    }

    /// The document being parsed for `routing` is done: its next one (if any) takes its turn.
    func finished(for routing: RoutingID) {
        guard running.remove(routing) != nil else { return }
        if waiting[routing] != nil { turns.append(routing) }
        startWhatCanStart()
    }

    private func startWhatCanStart() {
        while running.count < threads, let routing = turns.popFirst() {
            guard var documents = waiting[routing], let work = documents.popFirst() else { continue }
            waiting[routing] = documents.isEmpty ? nil : documents
            running.insert(routing)
            queue.async(execute: work)
        }
    }
}
