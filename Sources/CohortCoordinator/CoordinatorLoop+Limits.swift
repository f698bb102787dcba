import CohortCore
import CohortSpec
import CohortWire
import Foundation

/// Limits against abuse (docs/security.md, "Limits"): outputs kept per child, spec size, frame size.
extension CoordinatorLoop {
    /// A worker's outcome as the coordinator keeps it: an output over `maxOutputBytes` is cut
    /// down with a visible marker (``OutputLimit``), and flagged.
    func keptOutcome(_ outcome: WireOutcome, attempt: WireAttemptRef) -> (outcome: AttemptOutcome, truncated: Bool) {
        guard case .succeeded(let output) = outcome, output.count > configuration.maxOutputBytes else {
            return (AttemptOutcome(outcome), false)
        }
        let (kept, _) = OutputLimit.fit(output, limit: configuration.maxOutputBytes)
        logger.warning(
            "output truncated",
            metadata: [
                "attempt.id": "\(attempt.id)", "output.bytes": "\(output.count)", "output.kept": "\(kept.count)",
                "limit": "maxOutputBytes=\(configuration.maxOutputBytes)",
            ])
        return (.succeeded(output: kept), true)
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
