import CohortCore

/// When client sessions are forgotten: one silent for ``idleLimit`` that watches nothing is
/// closed (a client that left without saying goodbye), looked at every ``interval``.
/// Pure: the loop passes `now` and its sessions, and closes what this returns.
struct IdleClientSweep {
    /// How long a client session may stay silent (without watches) before it is forgotten.
    var idleLimit: Duration = .seconds(3600)
    /// How often the sessions are looked at.
    var interval: Duration = .seconds(60)
    /// When they were last looked at.
    private(set) var lastSweep: Timestamp

    init(now: Timestamp) {
        lastSweep = now
    }

    /// The client sessions to close at `now`: none until ``interval`` has passed since the last
    /// sweep; then those silent since before `now - idleLimit` and not in `watching` (asked
    /// for only then), in a fixed order.
    mutating func expired(
        _ sessions: [RoutingID: PeerSession], watching: () -> Set<RoutingID>, now: Timestamp
    ) -> [RoutingID] {
        guard now - lastSweep > interval else { return [] }
        lastSweep = now
        let cutoff = now + (Duration.zero - idleLimit)
        let idle = sessions.compactMap { routing, session in
            session.role == .client && session.lastHeard < cutoff ? routing : nil
        }
        guard !idle.isEmpty else { return [] }
        let watched = watching()
        return idle.filter { !watched.contains($0) }.sorted { $0.lexicographicallyPrecedes($1) }
    }
}
