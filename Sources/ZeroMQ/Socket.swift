import CZeroMQ
import Synchronization

/// A ZeroMQ socket, owned by one thread.
///
/// Thread-safety: libzmq sockets are not thread-safe. A socket belongs to the
/// thread that created it; to hand it to another thread, pass it there
/// through something that synchronises (a queue, a thread start) and call
/// ``adopt()`` on the new thread before using it. Every operation checks
/// ownership in debug builds and stops the program with a message naming
/// the call when another thread uses the socket. The class is `Sendable` only
/// so that it can be handed off this way; other threads talk to a socket's
/// owner through `inproc://` sockets or a ``Mailbox``.
///
/// The socket keeps its ``Context`` alive. It is closed by ``close()`` or when
/// the last reference goes away; its linger (the context's
/// ``Context/defaultLinger`` unless set) bounds how long unsent messages
/// delay closing.
public final class Socket: @unchecked Sendable {
    // @unchecked: the socket is used by one thread at a time. `owner` records
    // which, and debug builds check it on every call; hand-off between threads
    // happens through a synchronising channel, which orders the previous
    // owner's last use before the new owner's `adopt()`.

    /// The context that created the socket.
    public let context: Context
    /// The socket's pattern.
    public let type: SocketType

    /// The libzmq socket; `nil` once closed.
    private(set) var handle: UnsafeMutableRawPointer?
    /// A reusable frame for receives that copy out, so they allocate no `zmq_msg_t`.
    let scratch: UnsafeMutablePointer<zmq_msg_t>
    /// The owning thread's ``currentThreadID()``. Relaxed ordering suffices:
    /// it is written by the owner (or by a new owner in `adopt()` after a
    /// synchronising hand-off) and read for a diagnostic check only.
    private let owner: Atomic<UInt>

    init(context: Context, type: SocketType) throws(ZeroMQError) {
        guard
            let handle = try zmqCall("zmq_socket", failed: { $0 == nil }, { zmq_socket(context.handle, type.rawValue) })
                ?? nil
        else {
            throw ZeroMQError(code: ZeroMQError.Code.wouldBlock, call: "zmq_socket")
        }
        self.context = context
        self.type = type
        self.handle = handle
        self.owner = Atomic(currentThreadID())
        self.scratch = .allocate(capacity: 1)
        zmq_msg_init(scratch)
        do {
            try set(.linger, to: context.defaultLinger)
        } catch {
            close()
            throw error
        }
    }

    deinit {
        // The last reference is gone, so no other thread can be using the
        // socket; closing from here is a hand-off libzmq allows.
        if let handle { zmq_close(handle) }
        zmq_msg_close(scratch)
        scratch.deallocate()
    }

    // MARK: Ownership

    /// Makes the calling thread the socket's owner.
    ///
    /// Call it on the new thread after receiving the socket from the old one
    /// (a thread start, a queue, a lock: anything that orders the old owner's
    /// last use before this). Thread-safety: the new owner's thread. Throws nothing.
    public func adopt() {
        owner.store(currentThreadID(), ordering: .relaxed)
    }

    /// Whether the calling thread owns the socket.
    ///
    /// Thread-safety: any thread. Throws nothing.
    public var isOwnedByCurrentThread: Bool {
        owner.load(ordering: .relaxed) == currentThreadID()
    }

    /// Stops the program, in debug builds, when a thread that does not own the socket uses it.
    @inline(__always)
    func assertOwned(_ function: StaticString = #function) {
        assert(
            isOwnedByCurrentThread,
            "ZeroMQ.Socket(\(type)).\(function) called from a thread that does not own it; hand it off with adopt()"
        )
    }

    /// The open handle, or `ENOTSOCK` once closed.
    @inline(__always)
    func liveHandle(_ function: StaticString = #function) throws(ZeroMQError) -> UnsafeMutableRawPointer {
        assertOwned(function)
        guard let handle else {
            throw ZeroMQError(code: ZeroMQError.Code.notASocket, call: function.description)
        }
        return handle
    }

    // MARK: Endpoints

    /// Binds to `endpoint`, e.g. `"tcp://127.0.0.1:*"` (any free port) or `"inproc://name"`.
    ///
    /// Read ``lastEndpoint`` to learn a wildcard port. Thread-safety: the
    /// owning thread. Throws ``ZeroMQError`` (e.g. ``ZeroMQError/Code/addressInUse``).
    public func bind(_ endpoint: String) throws(ZeroMQError) {
        let handle = try liveHandle()
        try zmqCheck("zmq_bind") { zmq_bind(handle, endpoint) }
    }

    /// Connects to `endpoint`; for tcp the connection is made (and remade) in the background.
    ///
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` for a
    /// malformed endpoint or an unbound `inproc://` one.
    public func connect(_ endpoint: String) throws(ZeroMQError) {
        let handle = try liveHandle()
        try zmqCheck("zmq_connect") { zmq_connect(handle, endpoint) }
    }

    /// Stops listening on an endpoint given to ``bind(_:)`` (the resolved one for wildcards).
    ///
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` (`ENOENT` if not bound).
    public func unbind(_ endpoint: String) throws(ZeroMQError) {
        let handle = try liveHandle()
        try zmqCheck("zmq_unbind") { zmq_unbind(handle, endpoint) }
    }

    /// Drops a connection made by ``connect(_:)``.
    ///
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` (`ENOENT` if not connected).
    public func disconnect(_ endpoint: String) throws(ZeroMQError) {
        let handle = try liveHandle()
        try zmqCheck("zmq_disconnect") { zmq_disconnect(handle, endpoint) }
    }

    /// The endpoint of the last bind or connect, with a wildcard port resolved:
    /// `"tcp://127.0.0.1:41234"`.
    ///
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` once closed.
    public var lastEndpoint: String {
        get throws(ZeroMQError) { try get(.lastEndpoint) }
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { handle == nil }

    /// Closes the socket; unsent messages are kept for at most its linger. Idempotent.
    ///
    /// Thread-safety: the owning thread. Throws nothing.
    public func close() {
        assertOwned()
        guard let handle else { return }
        self.handle = nil
        zmq_close(handle)
    }
}
