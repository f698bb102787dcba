import CZeroMQ

/// A multipart message received with the `User-Id` its sender was admitted under.
///
/// Thread-safety: a plain `Sendable` value.
public struct ReceivedMessage: Sendable, Hashable {
    /// The frames, in order; on a ROUTER the first is the sender's routing id.
    public var frames: [[UInt8]]
    /// The id the ``ZAPHandler`` assigned to the sender, or `nil` without ZAP
    /// authentication. It is the `User-Id` of the first frame that has one (a
    /// ROUTER's routing-id frame may lack it; its payload frames have it).
    public var userID: String?

    /// Makes a received message; mostly for tests and fakes.
    public init(frames: [[UInt8]], userID: String?) {
        self.frames = frames
        self.userID = userID
    }
}

extension Socket {
    /// Receives one frame into `message`, replacing what it held, without copying the payload.
    ///
    /// Check ``Message/hasMore`` to learn whether frames of the same message follow.
    /// - Returns: `false` if nothing arrived (``Wait/never``, ``Wait/upTo(_:)`` ran
    ///   out, or `RCVTIMEO` expired).
    /// Thread-safety: the owning thread. Throws ``ZeroMQError``; after
    /// ``Context/shutdown()`` one whose ``ZeroMQError/isTerminated`` is true.
    @discardableResult
    public func receive(into message: Message, wait: Wait = .forever) throws(ZeroMQError) -> Bool {
        try receiveFirst(into: message.pointer, wait: wait, handle: liveHandle())
    }

    /// Receives a whole multipart message as ``Message`` frames, without copying payloads.
    ///
    /// - Returns: the frames, or `nil` if nothing arrived in time.
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` as ``receive(into:wait:)``.
    public func receive(wait: Wait = .forever) throws(ZeroMQError) -> [Message]? {
        let handle = try liveHandle()
        let first = Message()
        guard try receiveFirst(into: first.pointer, wait: wait, handle: handle) else { return nil }
        var frames = [first]
        while frames[frames.count - 1].hasMore {
            let next = Message()
            try zmqCheck("zmq_msg_recv") { zmq_msg_recv(next.pointer, handle, 0) }
            frames.append(next)
        }
        return frames
    }

    /// Receives a whole multipart message as byte arrays (one copy per frame).
    ///
    /// - Returns: the frames, or `nil` if nothing arrived in time.
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` as ``receive(into:wait:)``.
    public func receiveFrames(wait: Wait = .forever) throws(ZeroMQError) -> [[UInt8]]? {
        try receiveCopying(wait: wait, userID: false)?.frames
    }

    /// Receives a whole multipart message and the `User-Id` its sender was admitted under.
    ///
    /// With CURVE and a ``ZAPHandler`` the user id says which key sent the
    /// message, so a server can check the sender's role per message.
    /// - Returns: the frames and user id, or `nil` if nothing arrived in time.
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` as ``receive(into:wait:)``.
    public func receiveWithUserID(wait: Wait = .forever) throws(ZeroMQError) -> ReceivedMessage? {
        try receiveCopying(wait: wait, userID: true)
    }

    private func receiveCopying(wait: Wait, userID wantsUserID: Bool) throws(ZeroMQError) -> ReceivedMessage? {
        let handle = try liveHandle()
        guard try receiveFirst(into: scratch, wait: wait, handle: handle) else { return nil }
        var userID: String?
        var frames: [[UInt8]] = []
        while true {
            // A ROUTER's routing-id frame is made locally: libzmq 4.3.4 gives
            // it the peer's metadata only when no poll prefetched it. The
            // payload frames always have it.
            if wantsUserID, userID == nil {
                userID = Message.property("User-Id", of: scratch)
            }
            frames.append(Array(UnsafeRawBufferPointer(start: zmq_msg_data(scratch), count: zmq_msg_size(scratch))))
            guard zmq_msg_more(scratch) != 0 else { break }
            try zmqCheck("zmq_msg_recv") { zmq_msg_recv(scratch, handle, 0) }
        }
        return ReceivedMessage(frames: frames, userID: userID)
    }

    /// Receives the first frame of a message, honouring `wait`; the rest of a
    /// multipart message is then already there and never blocks.
    private func receiveFirst(
        into message: UnsafeMutablePointer<zmq_msg_t>,
        wait: Wait,
        handle: UnsafeMutableRawPointer
    ) throws(ZeroMQError) -> Bool {
        switch wait {
        case .forever:
            return try zmqCall("zmq_msg_recv") { zmq_msg_recv(message, handle, 0) } != nil
        case .never:
            return try zmqCall("zmq_msg_recv") { zmq_msg_recv(message, handle, ZMQ_DONTWAIT) } != nil
        case .upTo(let timeout):
            let deadline = ContinuousClock.now + timeout
            while try zmqCall("zmq_msg_recv", { zmq_msg_recv(message, handle, ZMQ_DONTWAIT) }) == nil {
                guard try waitFor(Int16(ZMQ_POLLIN), handle: handle, until: deadline) else { return false }
            }
            return true
        }
    }
}
