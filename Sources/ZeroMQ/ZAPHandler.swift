import Synchronization

/// Authenticates peers of the context's CURVE servers (ZAP, RFC 27) with a closure.
///
/// The handler binds a REP socket on `inproc://zeromq.zap.01` in its context
/// when it is created, so create it before any server socket binds. Each
/// handshake on a server socket of that context (one with a `ZAP_DOMAIN`,
/// see ``Socket/makeCurveServer(secretKey:zapDomain:)``) then becomes a
/// ``ZAPRequest`` passed to `authorize`, whose ``ZAPDecision`` admits the peer
/// under a user id or refuses it.
///
/// It is a long-running service: ``run()`` serves requests on a dedicated
/// thread (never a Swift concurrency pool thread) and returns when the task
/// is cancelled, ``stop()`` is called, or the context is shut down.
/// ``runOnCurrentThread()`` does the same on a thread the caller already
/// owns. Servers fail closed: with `ZAP_ENFORCE_DOMAIN` set, a handler that
/// is not running refuses every client.
///
/// Thread-safety: `Sendable`. ``stop()`` from any thread; one run at a time.
/// `authorize` runs on the handler's thread, one request at a time.
public final class ZAPHandler: Sendable {
    /// The endpoint libzmq sends ZAP requests to.
    public static let endpoint = "inproc://zeromq.zap.01"

    private enum State { case ready, running, finished }

    private let socket: Socket
    private let stopWaker: Waker
    private let state = Mutex(State.ready)
    private let authorize: @Sendable (ZAPRequest) -> ZAPDecision

    /// Binds the ZAP endpoint in `context`; requests wait until ``run()`` starts.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError``
    /// (``ZeroMQError/Code/addressInUse`` if the context already has a handler).
    public init(context: Context, authorize: @escaping @Sendable (ZAPRequest) -> ZAPDecision) throws(ZeroMQError) {
        socket = try context.socket(.rep)
        try socket.set(.linger, to: .zero)
        try socket.bind(Self.endpoint)
        stopWaker = try Waker()
        self.authorize = authorize
    }

    /// Serves requests on a new dedicated thread until the task is cancelled,
    /// ``stop()`` is called or the context shuts down.
    ///
    /// Thread-safety: any task; once per handler. Throws ``ZeroMQError``
    /// (``ZeroMQError/Code/wrongState`` if it already ran) or what the loop
    /// throws; a context shutdown is a normal return.
    public func run() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                do {
                    try startDetachedThread {
                        do {
                            try self.runOnCurrentThread()
                            continuation.resume()
                        } catch {
                            continuation.resume(throwing: error)
                        }
                    }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            stop()
        }
    }

    /// Serves requests on the calling thread until ``stop()`` is called or the context shuts down.
    ///
    /// Blocks: call it on a thread of its own. Thread-safety: once per
    /// handler. Throws ``ZeroMQError`` (``ZeroMQError/Code/wrongState`` if it
    /// already ran); a context shutdown is a normal return.
    public func runOnCurrentThread() throws(ZeroMQError) {
        let mayRun = state.withLock { state in
            guard state == .ready else { return false }
            state = .running
            return true
        }
        guard mayRun else { throw ZeroMQError(code: ZeroMQError.Code.wrongState, call: "ZAPHandler.run") }
        socket.adopt()
        defer {
            socket.close()
            state.withLock { $0 = .finished }
        }
        let poller = Poller()
        let requests = try poller.register(socket)
        let stopIndex = poller.register(stopWaker)
        do {
            while true {
                try poller.poll()
                if poller.isReadable(stopIndex) { return }
                if poller.isReadable(requests), let frames = try socket.receiveFrames(wait: .never) {
                    try socket.send(reply(to: frames))
                }
            }
        } catch  where error.isTerminated {
            return
        }
    }

    /// Makes ``run()`` return after the request in hand, if any. Idempotent.
    ///
    /// Thread-safety: any thread. Throws nothing.
    public func stop() {
        stopWaker.wake()
    }

    /// The reply frames for a request: version, request id, status code and
    /// text, user id, metadata (RFC 27).
    private func reply(to frames: [[UInt8]]) -> [[UInt8]] {
        guard frames.count >= 6, frames[0] == Array("1.0".utf8) else {
            let requestID = frames.count > 1 ? frames[1] : []
            return [Array("1.0".utf8), requestID, Array("500".utf8), Array("malformed ZAP request".utf8), [], []]
        }
        let request = ZAPRequest(
            domain: String(decoding: frames[2], as: UTF8.self),
            address: String(decoding: frames[3], as: UTF8.self),
            routingID: frames[4],
            mechanism: String(decoding: frames[5], as: UTF8.self),
            credentials: Array(frames.dropFirst(6))
        )
        switch authorize(request) {
        case .allow(let userID):
            return [frames[0], frames[1], Array("200".utf8), Array("OK".utf8), Array(userID.utf8), []]
        case .deny(let reason):
            return [frames[0], frames[1], Array("400".utf8), Array(reason.utf8), [], []]
        }
    }
}
