#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A finished procedure's one result: succeeded with a value, failed with an
/// error, or cancelled (AsyncOperation's three outcomes).
public enum WireOutcome: Hashable, Sendable {
    /// Succeeded; `output` is its result as UTF-8 JSON, passed through opaque.
    case succeeded(output: Data)
    /// Failed; `error` is the error's message.
    case failed(error: String)
    /// Cancelled; `reason` says why in words (e.g. `timed out`), `code` for a receiver to
    /// switch on (``CancelCode/timedOut``).
    case cancelled(reason: String, code: CancelCode = .custom)
}
