import CZeroMQ

extension Socket {
    /// Sends one frame; `more: true` says further frames of the same message follow.
    ///
    /// On success the message is left empty (libzmq took its payload); on
    /// failure it is unchanged and still owned by the caller.
    /// - Returns: `false` if the send would block (``Wait/never``), the wait
    ///   ran out (``Wait/upTo(_:)``) or `SNDTIMEO` expired.
    /// Thread-safety: the owning thread. Throws ``ZeroMQError``, e.g.
    /// ``ZeroMQError/Code/hostUnreachable`` from a ROUTER with `ROUTER_MANDATORY`,
    /// or a terminated error after ``Context/shutdown()``.
    @discardableResult
    public func send(_ message: Message, more: Bool = false, wait: Wait = .forever) throws(ZeroMQError) -> Bool {
        try sendParts(1, more: more, wait: wait, call: "zmq_msg_send") { _, handle, flags in
            zmq_msg_send(message.pointer, handle, flags)
        }
    }

    /// Sends a multipart message, frame by frame, without copying payloads.
    ///
    /// Only the first frame can block or fail to be queued: libzmq accepts the
    /// rest of a message once its first frame is in, so a later frame can
    /// fail only if the context is terminated mid-message (the message is then
    /// cut short, which the peer never sees). Sent frames are left empty. An
    /// empty array sends nothing and returns `true`.
    /// - Returns: `false` if nothing was sent because the send would block or the wait ran out.
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` as the single-frame `send(_:more:wait:)`.
    @discardableResult
    public func send(_ frames: [Message], wait: Wait = .forever) throws(ZeroMQError) -> Bool {
        try sendParts(frames.count, more: false, wait: wait, call: "zmq_msg_send") { index, handle, flags in
            zmq_msg_send(frames[index].pointer, handle, flags)
        }
    }

    /// Sends a multipart message whose frames are byte sequences (`[UInt8]`, `Data`, slices…).
    ///
    /// Each frame is copied once, into libzmq. An empty array sends nothing.
    /// - Returns: `false` if nothing was sent because the send would block or the wait ran out.
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` as the single-frame `send(_:more:wait:)`.
    @discardableResult
    public func send<Frame: Sequence<UInt8>>(_ frames: [Frame], wait: Wait = .forever) throws(ZeroMQError) -> Bool {
        try sendParts(frames.count, more: false, wait: wait, call: "zmq_send") { index, handle, flags in
            Socket.sendBytes(frames[index], handle: handle, flags: flags)
        }
    }

    /// Sends `frames` to the ROUTER peer whose routing id is `routingID` (prepended as the first frame).
    ///
    /// Set ``SocketOption/routerMandatory`` so an unknown peer throws
    /// ``ZeroMQError/Code/hostUnreachable`` instead of dropping the message.
    /// - Returns: `false` if the send would block (the peer is at its high-water mark) or the wait ran out.
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` as the single-frame `send(_:more:wait:)`.
    @discardableResult
    public func send<ID: Sequence<UInt8>, Frame: Sequence<UInt8>>(
        to routingID: ID,
        _ frames: [Frame],
        wait: Wait = .forever
    ) throws(ZeroMQError) -> Bool {
        try sendParts(frames.count + 1, more: false, wait: wait, call: "zmq_send") { index, handle, flags in
            index == 0
                ? Socket.sendBytes(routingID, handle: handle, flags: flags)
                : Socket.sendBytes(frames[index - 1], handle: handle, flags: flags)
        }
    }

    /// Sends one frame of bytes; `more: true` says further frames follow.
    ///
    /// - Returns: `false` if the send would block or the wait ran out.
    /// Thread-safety: the owning thread. Throws ``ZeroMQError`` as the single-frame `send(_:more:wait:)`.
    @discardableResult
    public func send(bytes: some Sequence<UInt8>, more: Bool = false, wait: Wait = .forever) throws(ZeroMQError) -> Bool
    {
        try sendParts(1, more: more, wait: wait, call: "zmq_send") { _, handle, flags in
            Socket.sendBytes(bytes, handle: handle, flags: flags)
        }
    }

    /// Sends a frame with `zmq_send`, which copies the bytes into a new `zmq_msg_t`.
    @inline(__always)
    static func sendBytes(_ bytes: some Sequence<UInt8>, handle: UnsafeMutableRawPointer, flags: Int32) -> Int32 {
        if let rc = bytes.withContiguousStorageIfAvailable({ zmq_send(handle, $0.baseAddress, $0.count, flags) }) {
            return rc
        }
        return Array(bytes).withUnsafeBufferPointer { zmq_send(handle, $0.baseAddress, $0.count, flags) }
    }

    /// Sends `count` frames through `sendFrame(index, handle, flags)`, honouring `wait`
    /// on the first; `more` adds `SNDMORE` to the last.
    func sendParts(
        _ count: Int,
        more: Bool,
        wait: Wait,
        call: StaticString,
        _ sendFrame: (Int, UnsafeMutableRawPointer, Int32) -> Int32
    ) throws(ZeroMQError) -> Bool {
        let handle = try liveHandle()
        guard count > 0 else { return true }
        func flags(for index: Int) -> Int32 {
            index < count - 1 || more ? ZMQ_SNDMORE : 0
        }

        switch wait {
        case .forever:
            guard try zmqCall(call, { sendFrame(0, handle, flags(for: 0)) }) != nil else { return false }
        case .never:
            guard try zmqCall(call, { sendFrame(0, handle, flags(for: 0) | ZMQ_DONTWAIT) }) != nil else { return false }
        case .upTo(let timeout):
            let deadline = ContinuousClock.now + timeout
            while try zmqCall(call, { sendFrame(0, handle, flags(for: 0) | ZMQ_DONTWAIT) }) == nil {
                guard try waitFor(Int16(ZMQ_POLLOUT), handle: handle, until: deadline) else { return false }
            }
        }
        // The rest of a multipart message cannot block once its first frame is
        // queued (libzmq counts whole messages against the high-water mark), so
        // "would block" here would be a libzmq bug: zmqCheck throws it.
        for index in 1..<count {
            try zmqCheck(call) { sendFrame(index, handle, flags(for: index)) }
        }
        return true
    }

    /// Polls this socket alone for `events` until `deadline`; `false` if it ran out.
    func waitFor(_ events: Int16, handle: UnsafeMutableRawPointer, until deadline: ContinuousClock.Instant)
        throws(ZeroMQError) -> Bool
    {
        var item = zmq_pollitem_t(socket: handle, fd: 0, events: events, revents: 0)
        while true {
            let ready = try zmqCall("zmq_poll") {
                let remaining = deadline - ContinuousClock.now
                return zmq_poll(&item, 1, remaining <= .zero ? 0 : Int(remaining.zmqMilliseconds))
            }
            if let ready, ready > 0 { return true }
            if ContinuousClock.now >= deadline { return false }
        }
    }
}
