import CohortCore
import CohortSpec
import CohortWire
import Foundation

/// Limits against abuse (docs/security.md, "Limits"): outputs kept per child, spec size, frame size.
extension CoordinatorLoop {
    /// A worker's outcome as the coordinator keeps it (``OutputTruncation/keep(_:limit:)``); a
    /// cut is logged.
    func keptOutcome(_ outcome: WireOutcome, attempt: WireAttemptRef) -> OutputTruncation.Kept {
        let kept = OutputTruncation.keep(outcome, limit: configuration.maxOutputBytes)
        if let received = kept.receivedBytes, case .succeeded(let output) = kept.outcome {
            logger.warning(
                "output truncated",
                metadata: [
                    "attempt.id": "\(attempt.id)", "output.bytes": "\(received)", "output.kept": "\(output.count)",
                    "limit": "maxOutputBytes=\(configuration.maxOutputBytes)",
                ])
        }
        return kept
    }

    /// The refusal of a spec over `specLimits.maxSpecBytes`, before any parsing: a spec error
    /// of the whole document naming the limit, as the parser gives it (docs/spec.md, "Limits").
    func oversizedSpec(_ submission: Submission) -> ProtocolError? {
        let bytes = submission.document.utf8.count
        let limit = configuration.specLimits.maxSpecBytes
        guard bytes > limit else { return nil }
        let message = "the spec is \(bytes) bytes; the limit is \(limit) bytes (limit specLimits.maxSpecBytes)"
        return ProtocolError(
            code: .invalidSpec, message: "the spec is invalid (1 error)",
            specErrors: [CohortWire.SpecError(path: "", message: message)])
    }

    /// What a refused frame is told, naming the setting for a frame over the size limit.
    static func refusalText(_ error: WireError) -> String {
        guard case .frameTooLarge(_, let size, let limit) = error else { return error.description }
        return "the message is \(size) bytes, over this coordinator's limit of \(limit) bytes (maxFrameSize)"
    }
}
