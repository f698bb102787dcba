import CZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An error reported by libzmq (or by a system call the module makes for it).
///
/// `code` is the errno value, `message` its text from `zmq_strerror`, and
/// `call` the name of the C function that failed. Switch on `code` with the
/// constants in ``ZeroMQError/Code``, or use the predicates such as
/// ``isTerminated``.
///
/// Thread-safety: a plain `Sendable` value.
public struct ZeroMQError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The errno value, e.g. ``Code/hostUnreachable``.
    public var code: Int32
    /// The error's text, from `zmq_strerror`.
    public var message: String
    /// The C call that failed, e.g. `"zmq_msg_send"`.
    public var call: String

    /// Makes an error for `code`, with the text libzmq gives it.
    ///
    /// Thread-safety: may be called from any thread. Throws nothing.
    public init(code: Int32, call: String) {
        self.code = code
        self.call = call
        self.message = String(cString: zmq_strerror(code))
    }

    /// Whether the socket's context was shut down or terminated (`ETERM`).
    ///
    /// A loop that sees this should close its sockets and return.
    public var isTerminated: Bool { code == Code.terminated }

    /// Whether a ROUTER with `ROUTER_MANDATORY` had no route to the peer (`EHOSTUNREACH`).
    public var isHostUnreachable: Bool { code == Code.hostUnreachable }

    /// `"zmq_msg_send: Host unreachable (errno 156384729)"`.
    public var description: String { "\(call): \(message) (errno \(code))" }

    /// The same error with a more precise call name, e.g. `"zmq_setsockopt(ZMQ_LINGER)"`.
    func naming(_ call: String) -> ZeroMQError {
        var copy = self
        copy.call = call
        return copy
    }

    /// The errno values callers most often need to tell apart.
    public enum Code {
        /// The context was shut down or terminated (`ETERM`).
        public static let terminated = cohort_zmq_eterm()
        /// No route to the peer (`EHOSTUNREACH`), from a ROUTER with `ROUTER_MANDATORY`.
        public static let hostUnreachable = cohort_zmq_ehostunreach()
        /// The operation would block (`EAGAIN`). The module turns this into a
        /// `nil`/`false` result; it is thrown only where a call cannot wait.
        public static let wouldBlock = EAGAIN
        /// An argument was invalid (`EINVAL`), e.g. a malformed endpoint or key.
        public static let invalidArgument = EINVAL
        /// The socket was closed (`ENOTSOCK`).
        public static let notASocket = cohort_zmq_enotsock()
        /// The operation is not valid in the socket's state (`EFSM`), e.g. two sends on REQ.
        public static let wrongState = cohort_zmq_efsm()
        /// The address is already bound (`EADDRINUSE`).
        public static let addressInUse = cohort_zmq_eaddrinuse()
        /// Nothing listens on the endpoint (`ECONNREFUSED`), e.g. an inproc connect
        /// to an endpoint that is not bound.
        public static let connectionRefused = cohort_zmq_econnrefused()
    }
}

/// Calls libzmq: the one place where its error convention is interpreted.
///
/// Retries `EINTR` (calling `body` again, so a body that computes a timeout can
/// recompute it), returns `nil` for `EAGAIN` ("would block", or a receive or
/// send timeout), and throws a ``ZeroMQError`` naming `call` for anything
/// else. `failed` says which results mean failure (usually `-1`; `NULL` for
/// calls that return pointers).
@inline(__always)
func zmqCall<Result>(
    _ call: StaticString,
    failed: (Result) -> Bool,
    _ body: () -> Result
) throws(ZeroMQError) -> Result? {
    while true {
        let result = body()
        if !failed(result) { return result }
        let code = zmq_errno()
        if code == EINTR { continue }
        if code == EAGAIN { return nil }
        throw ZeroMQError(code: code, call: call.description)
    }
}

/// ``zmqCall(_:failed:_:)`` for the usual `int` result where `-1` is failure.
@inline(__always)
@discardableResult
func zmqCall(_ call: StaticString, _ body: () -> Int32) throws(ZeroMQError) -> Int32? {
    try zmqCall(call, failed: { $0 == -1 }, body)
}

/// ``zmqCall(_:failed:_:)`` for a call that cannot legitimately return "would block":
/// `EAGAIN` is thrown like any other error.
@inline(__always)
@discardableResult
func zmqCheck(_ call: StaticString, _ body: () -> Int32) throws(ZeroMQError) -> Int32 {
    guard let result = try zmqCall(call, body) else {
        throw ZeroMQError(code: EAGAIN, call: call.description)
    }
    return result
}
