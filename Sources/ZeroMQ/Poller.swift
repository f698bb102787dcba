import CZeroMQ

/// What a ``Poller`` waits for, and what it found.
///
/// Thread-safety: a plain `Sendable` value.
public struct PollEvents: OptionSet, Sendable, Hashable {
    /// The raw `ZMQ_POLL*` bits.
    public let rawValue: Int16
    /// Makes events from `ZMQ_POLL*` bits.
    public init(rawValue: Int16) { self.rawValue = rawValue }

    /// A message (or, for a file descriptor, data) can be read without blocking.
    public static let readable = PollEvents(rawValue: Int16(ZMQ_POLLIN))
    /// A message can be sent without blocking.
    public static let writable = PollEvents(rawValue: Int16(ZMQ_POLLOUT))
    /// An error condition on a file descriptor.
    public static let error = PollEvents(rawValue: Int16(ZMQ_POLLERR))
}

/// Waits on several sockets and file descriptors at once (`zmq_poll`).
///
/// Register items once, then call ``poll(timeout:)`` in the loop and check
/// each item with ``events(at:)``/``isReadable(_:)``. A ``Waker`` or
/// ``Mailbox`` registered here lets other threads wake the loop:
///
/// ```swift
/// // On the loop's own thread (not a Swift concurrency pool thread):
/// let router = try context.socket(.router)
/// try router.set(.routerMandatory, to: true)
/// try router.bind("tcp://127.0.0.1:7400")
/// let poller = Poller()
/// let network = try poller.register(router)
/// let wakeups = poller.register(outbox.waker)   // outbox: Mailbox<(id: [UInt8], frames: [[UInt8]])>
/// while true {
///     do throws(ZeroMQError) {
///         try poller.poll(timeout: .milliseconds(100))
///     } catch where error.isTerminated {
///         break                                   // context.shutdown(): leave cleanly
///     }
///     if poller.isReadable(network) {
///         while let message = try router.receiveWithUserID(wait: .never) {
///             handle(message.frames, from: message.userID)  // frames[0] is the peer's routing id
///         }
///     }
///     if poller.isReadable(wakeups) {
///         for (id, frames) in outbox.drain() {   // posted by other threads
///             try router.send(to: id, frames)
///         }
///     }
/// }
/// router.close()
/// ```
///
/// Thread-safety: not thread-safe; it belongs to the thread that owns its
/// sockets, and debug builds check that thread owns each socket on every poll.
/// The poller keeps its sockets alive.
public final class Poller {
    private var items: [zmq_pollitem_t] = []
    private var sockets: [Socket?] = []

    /// Creates an empty poller.
    public init() {}

    /// The number of registered items.
    public var count: Int { items.count }

    /// Registers a socket; returns its index for ``events(at:)``.
    ///
    /// Thread-safety: the socket's owning thread. Throws ``ZeroMQError`` if the socket is closed.
    @discardableResult
    public func register(_ socket: Socket, for events: PollEvents = .readable) throws(ZeroMQError) -> Int {
        let handle = try socket.liveHandle()
        items.append(zmq_pollitem_t(socket: handle, fd: 0, events: events.rawValue, revents: 0))
        sockets.append(socket)
        return items.count - 1
    }

    /// Registers a plain file descriptor (a pipe, an eventfd, a TCP socket); returns its index.
    ///
    /// The poller does not own the descriptor. Thread-safety: the poller's thread. Throws nothing.
    @discardableResult
    public func register(fileDescriptor: Int32, for events: PollEvents = .readable) -> Int {
        items.append(zmq_pollitem_t(socket: nil, fd: fileDescriptor, events: events.rawValue, revents: 0))
        sockets.append(nil)
        return items.count - 1
    }

    /// Registers a waker for reading; returns its index. Call ``Waker/reset()`` when it fires.
    ///
    /// Thread-safety: the poller's thread. Throws nothing.
    @discardableResult
    public func register(_ waker: Waker) -> Int {
        register(fileDescriptor: waker.fileDescriptor)
    }

    /// Changes what the item at `index` waits for, e.g. adds `.writable` while output is queued.
    ///
    /// Thread-safety: the poller's thread. Throws nothing; `index` must come from a `register` call.
    public func setEvents(_ events: PollEvents, at index: Int) {
        items[index].events = events.rawValue
    }

    /// Waits until an item is ready or `timeout` passes (`nil`: wait forever).
    ///
    /// A signal does not shorten or lengthen the wait: the remaining time is
    /// recomputed when libzmq is interrupted.
    /// - Returns: the number of ready items; 0 when the timeout passed.
    /// Thread-safety: the thread that owns the registered sockets. Throws
    /// ``ZeroMQError``; after ``Context/shutdown()`` one whose
    /// ``ZeroMQError/isTerminated`` is true.
    @discardableResult
    public func poll(timeout: Duration? = nil) throws(ZeroMQError) -> Int {
        for socket in sockets {
            if let socket { _ = try socket.liveHandle() }
        }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let count = Int32(items.count)
        let ready = try items.withUnsafeMutableBufferPointer { (buffer) throws(ZeroMQError) -> Int32? in
            try zmqCall("zmq_poll") {
                var milliseconds = -1
                if let deadline {
                    let remaining = deadline - ContinuousClock.now
                    milliseconds = remaining <= .zero ? 0 : Int(remaining.zmqMilliseconds)
                }
                return zmq_poll(buffer.baseAddress, count, milliseconds)
            }
        }
        return Int(ready ?? 0)
    }

    /// What the last ``poll(timeout:)`` found ready on the item at `index`.
    public func events(at index: Int) -> PollEvents {
        PollEvents(rawValue: items[index].revents)
    }

    /// Whether the last ``poll(timeout:)`` found the item at `index` readable.
    public func isReadable(_ index: Int) -> Bool {
        events(at: index).contains(.readable)
    }

    /// Whether the last ``poll(timeout:)`` found the item at `index` writable.
    public func isWritable(_ index: Int) -> Bool {
        events(at: index).contains(.writable)
    }
}
