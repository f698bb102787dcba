import CohortCore
import CohortWire

/// A peer's ZeroMQ routing id (the ROUTER's first frame).
typealias RoutingID = [UInt8]

/// The shell's policies shared with the simulation (CohortCore/Coordinator), over ROUTER ids.
typealias WatchTable = CohortCore.WatchTable<RoutingID>
typealias PendingCancels = CohortCore.PendingCancels<RoutingID>
typealias PendingCancel = CohortCore.PendingCancel<RoutingID>

/// One session: a worker's or a client's, from WELCOME until it leaves or is lost.
struct PeerSession {
    var role: PeerRole
    /// `w-3`, `c-7`.
    var peerID: String
    var name: String
    /// For workers: the scheduler's id of the session.
    var worker: SessionID?
    /// When the coordinator last sent this peer anything (workers get a heartbeat after an
    /// idle interval).
    var lastSent: Timestamp
    /// When the peer last said anything.
    var lastHeard: Timestamp
    /// The CURVE key (Z85) the session was opened with; `nil` without CURVE. A client's
    /// groups are owned by it.
    var key: String? = nil
}

/// Who is connected: sessions by routing id, and worker sessions' routing ids.
struct PeerTable {
    private(set) var sessions: [RoutingID: PeerSession] = [:]
    private(set) var routingOfWorker: [SessionID: RoutingID] = [:]
    private var nextNumber: UInt64 = 0

    /// Opens a session for `routing`, replacing any it had; returns the new session and the
    /// replaced one.
    mutating func open(
        _ routing: RoutingID, role: PeerRole, name: String, key: String? = nil, now: Timestamp
    ) -> (PeerSession, replaced: PeerSession?) {
        let replaced = close(routing)
        nextNumber += 1
        let worker = role == .worker ? SessionID(nextNumber) : nil
        let session = PeerSession(
            role: role, peerID: role == .worker ? "w-\(nextNumber)" : "c-\(nextNumber)", name: name, worker: worker,
            lastSent: now, lastHeard: now, key: key)
        sessions[routing] = session
        if let worker { routingOfWorker[worker] = routing }
        return (session, replaced)
    }

    /// Ends the session of `routing`, if any.
    @discardableResult
    mutating func close(_ routing: RoutingID) -> PeerSession? {
        guard let session = sessions.removeValue(forKey: routing) else { return nil }
        if let worker = session.worker { routingOfWorker[worker] = nil }
        return session
    }

    subscript(routing: RoutingID) -> PeerSession? { sessions[routing] }

    mutating func heard(_ routing: RoutingID, now: Timestamp) {
        sessions[routing]?.lastHeard = now
    }

    mutating func sent(_ routing: RoutingID, now: Timestamp) {
        sessions[routing]?.lastSent = now
    }

    /// Worker sessions that have been sent nothing for `interval`.
    func workersToHeartbeat(now: Timestamp, interval: Duration) -> [RoutingID] {
        sessions.compactMap { routing, session in
            session.role == .worker && now - session.lastSent >= interval ? routing : nil
        }
    }

    /// The earliest time a worker needs a heartbeat.
    func nextHeartbeat(interval: Duration) -> Timestamp? {
        sessions.values.filter { $0.role == .worker }.map(\.lastSent).min().map { $0 + interval }
    }
}
