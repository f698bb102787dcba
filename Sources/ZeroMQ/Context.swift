import CZeroMQ
import Synchronization

/// A libzmq context: the I/O threads and the `inproc://` namespace that its sockets share.
///
/// Thread-safety: `Context` is `Sendable` and may be used from any thread.
/// libzmq documents `zmq_ctx_*` calls and `zmq_socket` as thread-safe; the
/// only state this class adds (whether the context was terminated) is behind
/// a `Mutex`.
///
/// Every ``Socket`` keeps its context alive, so the context is terminated
/// (`zmq_ctx_term`) when the last socket and the last reference are gone. To
/// stop a system, call ``shutdown()``: blocking calls on every socket then
/// throw a ``ZeroMQError`` whose ``ZeroMQError/isTerminated`` is true, their
/// loops close their sockets, and ``terminate()`` returns. Sockets get a
/// bounded linger (``defaultLinger``) so closing never hangs on unsent
/// messages to a peer that went away.
public final class Context: @unchecked Sendable {
    // @unchecked: `handle` is an immutable pointer to a thread-safe libzmq
    // context; `terminated` is a Mutex.
    let handle: UnsafeMutableRawPointer
    private let terminated = Mutex(false)

    /// The linger given to every socket this context creates.
    ///
    /// libzmq's own default (-1) makes `zmq_close` and `zmq_ctx_term` wait
    /// forever for unsent messages; 0 loses the last replies (docs/architecture.md, "ZeroMQ facts the code relies on").
    public let defaultLinger: Duration

    /// Creates a context.
    ///
    /// - Parameters:
    ///   - ioThreads: libzmq I/O threads; one handles about a gigabyte a second.
    ///   - defaultLinger: linger for new sockets (default 100 ms); change a
    ///     socket's with `socket.set(.linger, to:)`.
    /// Thread-safety: any thread. Throws ``ZeroMQError`` if libzmq cannot
    /// create the context (e.g. too many open files).
    public init(ioThreads: Int = 1, defaultLinger: Duration = .milliseconds(100)) throws(ZeroMQError) {
        guard let handle = try zmqCall("zmq_ctx_new", failed: { $0 == nil }, { zmq_ctx_new() }) ?? nil else {
            throw ZeroMQError(code: ZeroMQError.Code.wouldBlock, call: "zmq_ctx_new")
        }
        self.handle = handle
        self.defaultLinger = defaultLinger
        do {
            try zmqCheck("zmq_ctx_set") { zmq_ctx_set(handle, ZMQ_IO_THREADS, Int32(clamping: ioThreads)) }
        } catch {
            zmq_ctx_term(handle)
            throw error
        }
    }

    deinit {
        terminateIfNeeded()
    }

    /// Creates a socket of `type`, owned by the calling thread.
    ///
    /// Thread-safety: any thread; the new socket belongs to the caller's
    /// thread until another thread calls ``Socket/adopt()``. Throws
    /// ``ZeroMQError`` (``ZeroMQError/isTerminated`` after ``shutdown()``).
    public func socket(_ type: SocketType) throws(ZeroMQError) -> Socket {
        try Socket(context: self, type: type)
    }

    /// Makes every blocking call on this context's sockets throw a terminated error.
    ///
    /// Does not wait: sockets stay open until their owners close them.
    /// Idempotent. Thread-safety: any thread. Throws ``ZeroMQError`` only for
    /// an invalid context, which this class never holds.
    public func shutdown() throws(ZeroMQError) {
        if terminated.withLock({ $0 }) { return }
        try zmqCheck("zmq_ctx_shutdown") { zmq_ctx_shutdown(handle) }
    }

    /// Shuts the context down and waits until every one of its sockets is closed.
    ///
    /// Each socket's linger bounds how long its unsent messages delay this.
    /// Calling it while the calling thread still holds an open socket of this
    /// context deadlocks, as in libzmq; close them first. A second call returns
    /// at once. Thread-safety: any thread. Throws nothing.
    public func terminate() {
        terminateIfNeeded()
    }

    private func terminateIfNeeded() {
        let alreadyTerminated = terminated.withLock { done in
            defer { done = true }
            return done
        }
        if alreadyTerminated { return }
        // zmq_ctx_term returns -1/EINTR when a signal interrupts it; zmqCall
        // retries. Any other error means a bad handle, which cannot happen here.
        _ = try? zmqCall("zmq_ctx_term") { zmq_ctx_term(handle) }
    }
}
