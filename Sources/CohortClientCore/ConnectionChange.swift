/// The connection to the coordinator went away or came back; see
/// `ClientConfiguration.onConnectionChange` (CohortClient).
public enum ConnectionChange: Sendable, Hashable {
    /// The coordinator went away while requests or watches were open; they wait up to
    /// `timeout` (`ClientConfiguration.reconnectTimeout`) for it to come back.
    /// `restarting`: it said so as it stopped (SIGTERM with a journal); otherwise its
    /// connection dropped (a crash). `reason` is its stop reason or what was seen.
    case waiting(reason: String, restarting: Bool, timeout: Duration)
    /// The coordinator is back (with a new epoch); open requests and watches were sent again.
    case reconnected(epoch: UInt64)
}
