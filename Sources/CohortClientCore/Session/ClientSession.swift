import CohortWire

/// The client's side of its connection to the coordinator, as a state machine without I/O:
/// the handshake and its timeout, open requests and their deadlines, watches and the liveness
/// probe sent while they are silent, requests abandoned by their callers, the coordinator
/// going away (restarting or lost) and saying HELLO again until it is back, and the refusals
/// that end the connection.
///
/// It owns no socket, clock or thread: every input carries `now`, and every input returns the
/// ``Action``s the shell (``ClientLoop``) carries out in order. Generic over the instant so that
/// the loop drives it with `ContinuousClock`, tests with a manual clock and the simulation
/// (CohortSimulation) with its simulated `Timestamp`.
/// A send the shell could not make is reported back (``requestNotSent(_:_:now:)``,
/// ``helloNotSent(_:now:)``), which may return more actions.
package struct ClientSession<Instant: InstantProtocol> where Instant.Duration == Duration {
    /// The settings the session decides with (from ``ClientConfiguration``).
    package struct Settings: Sendable {
        /// The coordinator's endpoint, or a comma-separated list of a coordinator and its
        /// standbys.
        package var endpoint: String
        /// How long a coordinator of a list may stay silent (no WELCOME) before the next is tried.
        package var switchAfter: Duration = .seconds(2)
        package var connectTimeout: Duration = .seconds(5)
        package var requestTimeout: Duration = .seconds(30)
        package var probeAfter: Duration = .seconds(10)
        package var reconnectTimeout: Duration = .seconds(30)
        /// Whether this client uses CURVE (the words of a failed handshake depend on it).
        package var curve = false
        /// How often HELLO is said again while the coordinator is away.
        package var helloInterval: Duration = .seconds(1)
        /// The longest the shell waits for input before calling ``tick(now:)``.
        package var maxWait: Duration = .milliseconds(250)

        package init(endpoint: String) {
            self.endpoint = endpoint
        }

        /// The endpoints of ``endpoint``'s list.
        package var endpoints: [String] {
            endpoint.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }
    }

    /// How a request is answered.
    package enum Answering: Hashable, Sendable {
        /// One answer, within ``Settings/requestTimeout``.
        case once
        /// A stream of answers (a watch), without a deadline, until the group's end.
        case stream
    }

    /// What the shell saw of the connection itself (its socket monitor).
    package enum ConnectionEvent: Hashable, Sendable {
        /// A TCP connection was made.
        case connected
        /// A connection attempt was refused and will be retried.
        case connectRetried
        /// The security handshake failed.
        case handshakeFailed(HandshakeFailure)
        /// The connection dropped.
        case disconnected
    }

    /// A failed security handshake, in the monitor's words.
    package struct HandshakeFailure: Hashable, Sendable {
        /// What it means, in words.
        package var explanation: String
        /// What the event said (a ZMTP error, an errno).
        package var detail: String
        /// The coordinator refused this client's key (a definite refusal).
        package var keyRefused: Bool
        /// It failed for certain, not possibly because a connection broke.
        package var definite: Bool

        package init(explanation: String, detail: String, keyRefused: Bool, definite: Bool) {
            self.explanation = explanation
            self.detail = detail
            self.keyRefused = keyRefused
            self.definite = definite
        }
    }

    /// What the shell must do, in order.
    package enum Action: Hashable, Sendable {
        /// Send HELLO (errors: ``helloNotSent(_:now:)``).
        case sendHello
        /// Send this request (errors: ``requestNotSent(_:_:now:)``).
        case send(ClientRequest)
        /// Leave the coordinator connected to for the one at this endpoint (the leader a standby
        /// named, or the next of the list); what was queued for the old one is dropped.
        case moveTo(String)
        /// The first WELCOME: the connection is open.
        case welcomed(Welcome)
        /// The one answer of a request (an `error` reply too).
        case answer(UInt64, CoordinatorReply.Kind)
        /// One more answer of a stream.
        case yield(UInt64, CoordinatorReply.Kind)
        /// A stream ended normally.
        case finish(UInt64)
        /// A request or stream failed.
        case fail(UInt64, ClientError)
        /// Tell the caller's ``ClientConfiguration/onConnectionChange``.
        case connectionChanged(ConnectionChange)
        /// Something worth a log line and no more.
        case log(LogLevel, String)
        /// The connection is over (the handshake failed, the coordinator refused this client,
        /// it was closed): fail whatever is still posted with this error, and close.
        case stop(ClientError)
    }

    /// How much a ``Action/log(_:_:)`` line matters (the shell maps it to its logger's level;
    /// this module links no logging library, so that the simulation can run the session).
    package enum LogLevel: Hashable, Sendable {
        case debug
        case warning
    }

    package enum Phase: Hashable {
        /// Not connected yet: ``connect(now:)`` starts.
        case idle
        /// HELLO sent, no WELCOME yet.
        case handshaking(Handshake)
        /// Welcomed; the coordinator may be away (``reconnecting``).
        case serving
        /// Over, for this reason.
        case ended(ClientError)
    }

    /// What the handshake has seen so far.
    package struct Handshake: Hashable {
        package var deadline: Instant
        /// A TCP connection was made at least once.
        package var connected = false
        /// Refused connection attempts before any was made.
        package var refusals = 0
        /// Failed security handshakes, a definite one counting 3.
        package var brokenHandshakes = 0
        package var lastFailure: ClientError?
    }

    package struct Pending: Hashable {
        package var kind: ClientRequest.Kind
        package var answering: Answering
        /// When a one-answer request gives up; `nil` for streams.
        package var deadline: Instant?
    }

    /// The coordinator went away while requests were open; HELLO is said again.
    package struct Reconnection: Hashable {
        package var since: Instant
        package var lastHello: Instant
        /// It said it was restarting (rather than its connection dropping).
        package var announced: Bool
    }

    /// A liveness probe sent while watches were silent.
    package struct Probe: Hashable {
        package var id: UInt64
        package var sentAt: Instant
    }

    package let settings: Settings
    /// The coordinator this session talks to now: the first of the list, then the leader a
    /// standby named or the next of the list (``moveOn(leader:now:)``).
    package private(set) var endpoint: String
    /// When the session last moved to another endpoint (or started).
    package var movedAt: Instant?
    package var phase: Phase = .idle
    /// Open requests by id.
    package var pending: [UInt64: Pending] = [:]
    /// When the coordinator last sent anything.
    package var lastHeard: Instant?
    package var probe: Probe?
    package var reconnecting: Reconnection?
    /// The coordinator said it is restarting while nothing was open: a loss seen later (a
    /// request sent meanwhile) is that restart. Cleared when it is back.
    package var restartAnnounced = false
    /// Requests whose callers gave up before the session saw them (a cancellation can overtake
    /// the request it cancels); each is failed as soon as it arrives.
    package var abandoned: Set<UInt64> = []
    /// Ids for the session's own requests (probes, unwatches, goodbye), apart from the callers'.
    package var nextInternalID: UInt64 = 1 << 62

    package init(settings: Settings) {
        self.settings = settings
        self.endpoint = settings.endpoints.first ?? settings.endpoint
    }

    /// Whether there is another coordinator to try (a list, or a leader named).
    package var hasAlternatives: Bool { settings.endpoints.count > 1 }

    /// Moves to `leader` (named by a standby) if it is not the current one, else to the next
    /// endpoint of the list; says HELLO there. Nothing when there is nowhere else to go.
    package mutating func moveOn(leader: String?, now: Instant) -> [Action] {
        let list = settings.endpoints
        let target: String
        if let leader, leader != endpoint {
            target = leader
        } else if list.count > 1 {
            let index = list.firstIndex(of: endpoint) ?? -1
            target = list[(index + 1) % list.count]
        } else {
            return []
        }
        endpoint = target
        movedAt = now
        return [.log(.debug, "trying the coordinator at \(target)"), .moveTo(target), .sendHello]
    }

    /// Why the session ended; `nil` while it goes on.
    package var endedWith: ClientError? {
        if case .ended(let error) = phase { return error }
        return nil
    }

    package var isHandshaking: Bool {
        if case .handshaking = phase { return true }
        return false
    }

    /// Whether a watch (or any stream) is open.
    package var isWatching: Bool { pending.values.contains { $0.answering == .stream } }

    /// How long the shell may wait for input before the next ``tick(now:)``.
    package func wait(now: Instant) -> Duration {
        switch phase {
        case .handshaking(let handshake):
            var until = handshake.deadline
            // A silent coordinator of a list is left for the next after ``Settings/switchAfter``.
            if hasAlternatives, let movedAt { until = min(until, movedAt.advanced(by: settings.switchAfter)) }
            return max(now.duration(to: until), .zero)
        case .serving:
            var wait = settings.maxWait
            for entry in pending.values {
                if let deadline = entry.deadline { wait = min(wait, max(.zero, now.duration(to: deadline))) }
            }
            return wait
        case .idle, .ended:
            return .zero
        }
    }

    package mutating func internalID() -> UInt64 {
        defer { nextInternalID += 1 }
        return nextInternalID
    }

    /// Ends the session: everything open fails with `error`.
    package mutating func end(_ error: ClientError) -> [Action] {
        guard endedWith == nil else { return [] }
        let open = pending.keys.sorted()
        pending = [:]
        probe = nil
        reconnecting = nil
        phase = .ended(error)
        return open.map { .fail($0, error) } + [.stop(error)]
    }

    /// `5 s`, `500 ms`.
    package static func describe(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return "\(seconds) s" }
        return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
    }
}
