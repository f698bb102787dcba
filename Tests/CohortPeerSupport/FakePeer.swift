import CohortTestSupport
import CohortWire
import Dispatch
import Foundation
import Synchronization
import Testing
import ZeroMQ

/// The one fake peer of the tests: a real ZeroMQ socket speaking CohortWire, on a thread of
/// its own, that plays either side of a connection.
///
/// - ``FakePeer/init(connectingTo:)``: a DEALER that plays a worker or a client against a real
///   coordinator (HELLO as either role, requests, dispatches answered by hand).
/// - ``FakePeer/init(coordinatorAt:behaviour:)``: a ROUTER that plays the coordinator for a
///   real worker or client: it welcomes HELLOs (unless told not to), heartbeats the last
///   welcomed worker, and answers only what the test sends.
///
/// Everything received lands in ``inbox``, in order. Tests read it two ways: in order on the
/// calling thread (``receive(timeout:)``, ``expect(_:timeout:sourceLocation:_:)``, which skip
/// and drop what they do not expect), or by matching from async code
/// (``next(_:timeout:_:)``, which leaves the rest queued). Every wait has a deadline.
///
/// Sending is synchronous: ``send(_:to:)`` returns once the socket took the frames. The
/// socket closes (linger 0) when the peer is stopped or released.
public final class FakePeer: Sendable {
    /// One message as it arrived.
    public struct Received: Sendable {
        /// The sender's routing id (ROUTER); empty for a DEALER.
        public let routingID: [UInt8]
        /// The frames after the routing id.
        public let frames: [[UInt8]]
        /// The decoded message, or why it could not be decoded.
        public let decoded: Result<WireMessage, any Error>

        public init(routingID: [UInt8], frames: [[UInt8]], decoded: Result<WireMessage, any Error>) {
            self.routingID = routingID
            self.frames = frames
            self.decoded = decoded
        }

        /// The message, if it decoded.
        public var message: WireMessage? { try? decoded.get() }
    }

    /// What a fake coordinator does by itself.
    public struct CoordinatorBehaviour: Sendable {
        /// Answers HELLOs from these roles with WELCOME.
        public var welcomes: Set<PeerRole> = [.worker, .client]
        /// Sends a heartbeat to the last welcomed worker every `interval`.
        /// Whether it heartbeats, and acknowledges the worker's numbered heartbeats as a
        /// coordinator does (without acknowledgements a worker's lease lapses).
        public var heartbeat = true
        /// The heartbeat interval its WELCOME gives.
        public var interval: Duration = .seconds(1)
        /// Silent intervals before a peer is lost, in its WELCOME.
        public var liveness: UInt32 = 3
        /// The epoch in its WELCOME (a "restarted" fake says a higher one).
        public var epoch: UInt64 = 1
        public var coordinatorID = "fake"

        public init(
            welcomes: Set<PeerRole> = [.worker, .client], heartbeat: Bool = true, interval: Duration = .seconds(1),
            liveness: UInt32 = 3, epoch: UInt64 = 1
        ) {
            self.welcomes = welcomes
            self.heartbeat = heartbeat
            self.interval = interval
            self.liveness = liveness
            self.epoch = epoch
        }
    }

    private enum Command: Sendable {
        /// Frames to send (to `peer` on a ROUTER; to the last peer that said HELLO if nil).
        case send([[UInt8]], to: [UInt8]?, done: @Sendable (Bool) -> Void)
        case stop
    }

    /// For a fake coordinator, the resolved endpoint it is bound to (`tcp://127.0.0.1:41234`);
    /// for a DEALER, the endpoint it connected to.
    public let endpoint: String
    /// Everything received, in order.
    public let inbox = AsyncInbox<Received>()
    public let codec = WireCodec()
    private let commands: Mailbox<Command>
    private let finished = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let nextRequestID = Atomic<UInt64>(0)

    /// A DEALER connected to `endpoint`, e.g. a coordinator's. It says nothing until told.
    public convenience init(connectingTo endpoint: String) throws {
        try self.init(endpoint: endpoint, behaviour: nil)
    }

    /// A ROUTER playing the coordinator, bound to `endpoint` (a free loopback port by default;
    /// the endpoint of a fake that stopped, to come back where it was).
    public convenience init(
        coordinatorAt endpoint: String = "tcp://127.0.0.1:*", behaviour: CoordinatorBehaviour = .init()
    ) throws {
        try self.init(endpoint: endpoint, behaviour: behaviour)
    }

    private init(endpoint requested: String, behaviour: CoordinatorBehaviour?) throws {
        let commands = try Mailbox<Command>()
        self.commands = commands
        let started = Locked<Result<String, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let (inbox, finished, codec) = (self.inbox, self.finished, self.codec)
        let thread = Thread {
            defer { finished.signal() }
            let context: Context
            let socket: Socket
            do {
                context = try Context(defaultLinger: .zero)
                if behaviour != nil {
                    socket = try context.socket(.router)
                    try socket.set(.routerMandatory, to: true)
                    try socket.bind(requested)
                    started.value = .success(try socket.lastEndpoint)
                } else {
                    socket = try context.socket(.dealer)
                    try socket.connect(requested)
                    started.value = .success(requested)
                }
            } catch {
                started.value = .failure(error)
                ready.signal()
                return
            }
            ready.signal()
            Self.serve(socket, commands: commands, inbox: inbox, codec: codec, behaviour: behaviour)
            socket.close()
            context.terminate()
        }
        thread.name = behaviour == nil ? "fake-peer" : "fake-coordinator"
        thread.start()
        ready.wait()
        endpoint = try started.value!.get()
    }

    deinit { stop() }

    /// The peer's loop: receives into `inbox`, sends what is posted, and as a coordinator
    /// welcomes and heartbeats.
    private static func serve(
        _ socket: Socket, commands: Mailbox<Command>, inbox: AsyncInbox<Received>, codec: WireCodec,
        behaviour: CoordinatorBehaviour?
    ) {
        let isRouter = behaviour != nil
        let interval = behaviour?.interval ?? .seconds(1)
        let poller = Poller()
        guard let socketIndex = try? poller.register(socket) else { return }
        let commandIndex = poller.register(commands.waker)
        var lastPeer: [UInt8]?
        var lastWorker: [UInt8]?
        var welcomed = 0
        var lastHeartbeat = ContinuousClock.now
        func send(_ frames: [[UInt8]], to peer: [UInt8]?) -> Bool {
            if isRouter {
                guard let peer = peer ?? lastPeer else { return false }
                return (try? socket.send(to: peer, frames, wait: .upTo(.seconds(1)))) ?? false
            }
            return (try? socket.send(frames, wait: .upTo(.seconds(1)))) ?? false
        }
        func send(_ message: WireMessage, to peer: [UInt8]?) {
            guard let frames = try? codec.encode(message) else { return }
            _ = send(frames, to: peer)
        }
        loop: while true {
            do { try poller.poll(timeout: min(interval, .milliseconds(250))) } catch { break }
            if poller.isReadable(socketIndex) {
                while let frames = try? socket.receiveFrames(wait: .never) {
                    let id = isRouter ? frames[0] : []
                    let body = isRouter ? Array(frames.dropFirst()) : frames
                    let decoded = Result<WireMessage, any Error> { try codec.decode(frames: body) }
                    if let behaviour, case .success(.handshake(.hello(let hello))) = decoded {
                        lastPeer = id
                        if hello.role == .worker { lastWorker = id }
                        if behaviour.welcomes.contains(hello.role) {
                            welcomed += 1
                            let prefix = hello.role == .worker ? "w" : "c"
                            send(
                                .handshake(
                                    .welcome(
                                        Welcome(
                                            coordinatorID: behaviour.coordinatorID, epoch: behaviour.epoch,
                                            peerID: "\(prefix)-\(welcomed)",
                                            heartbeatInterval: behaviour.interval,
                                            heartbeatLiveness: behaviour.liveness,
                                            softwareVersion: "test"))), to: id)
                        }
                    }
                    if let behaviour, behaviour.heartbeat, case .success(.worker(.heartbeat(let sequence))) = decoded,
                        sequence != 0
                    {
                        send(.toWorker(.heartbeat(acknowledged: sequence)), to: id)
                    }
                    inbox.post(Received(routingID: id, frames: body, decoded: decoded))
                }
            }
            if poller.isReadable(commandIndex) {
                for command in commands.drain() {
                    switch command {
                    case .send(let frames, let peer, let done): done(send(frames, to: peer))
                    case .stop: break loop
                    }
                }
            }
            if let behaviour, behaviour.heartbeat, ContinuousClock.now - lastHeartbeat >= interval {
                lastHeartbeat = .now
                if let lastWorker { send(.toWorker(.heartbeat(acknowledged: 0)), to: lastWorker) }
            }
        }
    }

    /// Stops the peer and waits for its thread to close the socket. Idempotent.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        commands.post(.stop)
        _ = finished.wait(timeout: .now() + 10)
    }

    // MARK: Sending

    /// Sends `message`: from a DEALER to its coordinator; from a fake coordinator to `peer`, or
    /// to the last peer that said HELLO.
    /// - Throws: ``PeerError`` when the socket did not take it within a second (no such peer).
    public func send(_ message: WireMessage, to peer: [UInt8]? = nil) throws {
        try sendRaw(try codec.encode(message), to: peer)
    }

    /// Sends frames of the test's choosing (garbage, another protocol version, …).
    public func sendRaw(_ frames: [[UInt8]], to peer: [UInt8]? = nil) throws {
        let done = DispatchSemaphore(value: 0)
        let sent = Locked(false)
        commands.post(
            .send(
                frames, to: peer,
                done: { ok in
                    sent.value = ok
                    done.signal()
                }))
        guard done.wait(timeout: .now() + 10) == .success, sent.value else {
            throw PeerError("the \(peer == nil ? "peer" : "peer \(peer!)") did not take \(frames.count) frames")
        }
    }

    /// A fresh request id for a client request.
    public func makeRequestID() -> UInt64 { nextRequestID.add(1, ordering: .relaxed).newValue }

    // MARK: Receiving in order (blocking the calling thread)

    /// The oldest message not read yet, or nil after `timeout`.
    /// - Throws: the decoding error of frames that are not CohortWire.
    public func receive(timeout: Duration = Deadline.event) throws -> WireMessage? {
        guard let received = inbox.next(timeout: timeout) else { return nil }
        return try received.decoded.get()
    }

    /// The oldest arrival not read yet, decoded or not, or nil after `timeout`.
    public func receiveRaw(timeout: Duration = Deadline.event) -> Received? {
        inbox.next(timeout: timeout)
    }

    /// The first message `match` accepts (those before it are read and dropped, e.g.
    /// heartbeats), within the deadline; records an issue and throws ``ExpectationTimeout`` if
    /// none comes.
    public func expect<T>(
        _ what: String, timeout: Duration = Deadline.event, sourceLocation: SourceLocation = #_sourceLocation,
        _ match: (WireMessage) -> T?
    ) throws -> T {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let message = try receive(timeout: deadline - ContinuousClock.now) else { break }
            if let value = match(message) { return value }
        }
        Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
        throw ExpectationTimeout(what: what)
    }

    // MARK: Receiving by match (async)

    /// The first arrival (already here or still to come) that `extract` turns into a value;
    /// removes it and leaves the others queued.
    /// - Throws: ``DeadlineExceeded`` naming `what` after `timeout`.
    public func next<T: Sendable>(
        _ what: String, timeout: Duration = Deadline.event, _ extract: @escaping @Sendable (Received) -> T?
    ) async throws -> T {
        let received = try await inbox.take(what, timeout: timeout) { extract($0) != nil }
        return extract(received)!
    }
}

/// Nothing matching arrived in time (an issue has been recorded).
public struct ExpectationTimeout: Error {
    public var what: String
    public init(what: String) { self.what = what }
}

/// A reply of another kind than the request asks for.
public struct UnexpectedReply: Error {
    public var reply: CoordinatorReply.Kind
    public init(reply: CoordinatorReply.Kind) { self.reply = reply }
}

/// A failure of the fake peer itself.
public struct PeerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
