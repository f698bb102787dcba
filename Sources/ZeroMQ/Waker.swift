import CZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Lets any thread wake a loop that is blocked in ``Poller/poll(timeout:)``.
///
/// An eventfd on Linux, a non-blocking pipe elsewhere. Register it with a
/// ``Poller``; when it is readable, call ``reset()`` and
/// then look at whatever the waking thread left (see ``Mailbox``, which does
/// both in the right order).
///
/// Thread-safety: `Sendable`. ``wake()`` may be called from any thread at any
/// time; ``reset()`` belongs to the polling thread. The descriptors are
/// immutable and closed when the last reference goes.
public final class Waker: Sendable {
    /// The descriptor to poll for reading.
    public let fileDescriptor: Int32
    /// The descriptor ``wake()`` writes to (the same eventfd on Linux).
    private let writeDescriptor: Int32

    /// Creates a waker.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` naming `eventfd`/`pipe`
    /// when the process is out of descriptors.
    public init() throws(ZeroMQError) {
        #if os(Linux)
            guard let fd = try zmqCall("eventfd", { cohort_eventfd_nonblocking() }) else {
                throw ZeroMQError(code: EAGAIN, call: "eventfd")
            }
            fileDescriptor = fd
            writeDescriptor = fd
        #else
            var fds: [Int32] = [-1, -1]
            try zmqCheck("pipe") { pipe(&fds) }
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
            fileDescriptor = fds[0]
            writeDescriptor = fds[1]
        #endif
    }

    deinit {
        close(fileDescriptor)
        if writeDescriptor != fileDescriptor { close(writeDescriptor) }
    }

    /// Makes ``fileDescriptor`` readable until the next ``reset()``.
    ///
    /// Several wakes before a reset fold into one. Thread-safety: any thread.
    /// Throws nothing: a full counter or pipe already means "awake".
    public func wake() {
        #if os(Linux)
            var one: UInt64 = 1
            _ = try? zmqCall("write") { Int32(truncatingIfNeeded: write(writeDescriptor, &one, 8)) }
        #else
            var one: UInt8 = 1
            _ = try? zmqCall("write") { Int32(truncatingIfNeeded: write(writeDescriptor, &one, 1)) }
        #endif
    }

    /// Clears pending wakes, so the next poll blocks until the next ``wake()``.
    ///
    /// Thread-safety: the polling thread. Throws nothing.
    public func reset() {
        #if os(Linux)
            var value: UInt64 = 0
            _ = try? zmqCall("read") { Int32(truncatingIfNeeded: read(fileDescriptor, &value, 8)) }
        #else
            var buffer = [UInt8](repeating: 0, count: 256)
            while (try? zmqCall("read", { Int32(truncatingIfNeeded: read(fileDescriptor, &buffer, buffer.count)) }))
                .flatMap({ $0 }).map({ $0 > 0 }) ?? false
            {}
        #endif
    }
}
