import CZeroMQ

/// One frame of a ZeroMQ message, wrapping a `zmq_msg_t` that is never copied.
///
/// A `zmq_msg_t` must stay where it was initialised (small payloads live
/// inside it), so `Message` keeps it in its own allocation and is a class:
/// passing a `Message` around passes a reference. Receiving into a `Message`
/// and reading it with ``withUnsafeBytes(_:)`` never copies the payload;
/// filling one with ``init(count:)`` and ``withUnsafeMutableBytes(_:)`` and
/// sending it copies nothing either.
///
/// Sending a `Message` hands its payload to libzmq and leaves it empty (zero
/// bytes); a send that fails leaves it as it was.
///
/// Thread-safety: not thread-safe; use a message on one thread at a time. It is
/// not `Sendable`: send bytes between threads, or a socket's frames through
/// `inproc://`.
public final class Message {
    let pointer: UnsafeMutablePointer<zmq_msg_t>

    /// Creates an empty frame (zero bytes), e.g. to receive into.
    ///
    /// Thread-safety: any thread. Throws nothing.
    public init() {
        pointer = .allocate(capacity: 1)
        zmq_msg_init(pointer)  // cannot fail
    }

    /// Creates a frame of `count` uninitialised bytes, to fill with ``withUnsafeMutableBytes(_:)``.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`ENOMEM`).
    public init(count: Int) throws(ZeroMQError) {
        pointer = .allocate(capacity: 1)
        do {
            try zmqCheck("zmq_msg_init_size") { zmq_msg_init_size(pointer, count) }
        } catch {
            pointer.deallocate()
            throw error
        }
    }

    /// Creates a frame holding a copy of `bytes` (`[UInt8]`, `Data`, a slice, a buffer…).
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`ENOMEM`).
    public convenience init(_ bytes: some Sequence<UInt8>) throws(ZeroMQError) {
        guard let count = bytes.withContiguousStorageIfAvailable({ $0.count }) else {
            try self.init(Array(bytes))
            return
        }
        try self.init(count: count)
        let target = zmq_msg_data(pointer)
        _ = bytes.withContiguousStorageIfAvailable { buffer in
            if let base = buffer.baseAddress, let target {
                target.copyMemory(from: base, byteCount: buffer.count)
            }
        }
    }

    /// Creates a frame holding `string`'s UTF-8 bytes.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` (`ENOMEM`).
    public convenience init(_ string: String) throws(ZeroMQError) {
        try self.init(string.utf8)
    }

    deinit {
        zmq_msg_close(pointer)
        pointer.deallocate()
    }

    /// The payload's size in bytes.
    public var count: Int { zmq_msg_size(pointer) }

    /// Whether more frames of the same message follow this one (set on received frames).
    public var hasMore: Bool { zmq_msg_more(pointer) != 0 }

    /// Calls `body` with the payload, without copying it.
    ///
    /// The buffer is valid only inside `body`. Thread-safety: the thread that
    /// uses the message. Rethrows what `body` throws.
    public func withUnsafeBytes<R, E: Error>(
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: zmq_msg_data(pointer), count: count))
    }

    /// Calls `body` with the payload to fill or change in place.
    ///
    /// Thread-safety: the thread that uses the message. Rethrows what `body` throws.
    public func withUnsafeMutableBytes<R, E: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try body(UnsafeMutableRawBufferPointer(start: zmq_msg_data(pointer), count: count))
    }

    /// A copy of the payload.
    public var bytes: [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    /// The payload decoded as UTF-8 (invalid sequences repaired).
    public var string: String {
        withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The user id the ZAP handler assigned to the peer that sent this frame, if any.
    ///
    /// This is libzmq's `User-Id` metadata property; with CURVE and a
    /// ``ZAPHandler`` it is the id from ``ZAPDecision/allow(userID:)``, so a
    /// server can map a message to the role of the key that sent it. A
    /// ROUTER's routing-id frame may lack it (libzmq 4.3.4 leaves it out when
    /// a poll prefetched the frame); payload frames always have it.
    /// Thread-safety: the thread that uses the message. Throws nothing.
    public var userID: String? { property("User-Id") }

    /// The sending peer's address as the server saw it (libzmq's `Peer-Address`), if any.
    public var peerAddress: String? { property("Peer-Address") }

    /// A metadata property of a received frame (`zmq_msg_gets`), or `nil` if it has none.
    ///
    /// Thread-safety: the thread that uses the message. Throws nothing: a
    /// missing property (`EINVAL`) is `nil`.
    public func property(_ name: String) -> String? {
        Message.property(name, of: pointer)
    }

    static func property(_ name: String, of message: UnsafeMutablePointer<zmq_msg_t>) -> String? {
        let value = try? zmqCall("zmq_msg_gets", failed: { $0 == nil }) { zmq_msg_gets(message, name) }
        return value.flatMap { $0 }.map { String(cString: $0) }
    }
}
