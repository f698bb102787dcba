/// Why an attempt or a child was cancelled, as a code a receiver switches on; the text that
/// travels next to it is what people read (protocol version 2, docs/protocol.md §5).
///
/// CohortCore's `CancellationReason` is the scheduler's model of the same thing, with the
/// details (who, which producer) that make its text; this is what of it crosses the wire.
public enum CancelCode: Hashable, Sendable, CaseIterable {
    /// A client's or a procedure's own words; nothing to switch on.
    case custom
    /// Its timeout, or its group's, passed (`timed out`).
    case timedOut
    /// A client asked, without words (`cancelled by NAME`).
    case cancelledByClient
    /// A newer attempt runs the child, or the coordinator does not know the attempt.
    case superseded
    /// A producer it injects from failed.
    case producerFailed
    /// A producer it injects from was cancelled.
    case producerCancelled
    /// Its group finished before it could start.
    case groupFinished
    /// Its group's failure policy: a dependency or a sibling failed or was cancelled.
    case dependencyFailed
    /// Its worker was lost.
    case workerLost
    /// Its worker stopped (a drain that timed out) and hands it back.
    case handedBack
    /// Its worker or the coordinator is stopping.
    case shutdown
    /// It was skipped, not run: its `if:` was false, or a dependency was skipped.
    case skipped
    /// A running child of its group cancelled the group with its attempt token
    /// (`cancelled by child deploy/check (attempt 1): …`).
    case cancelledByChild
}
