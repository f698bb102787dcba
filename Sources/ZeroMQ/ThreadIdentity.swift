#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The calling thread's identity, as a number that can live in an atomic.
///
/// `pthread_t` values are unique among live threads, which is all the
/// ownership check needs (an identity reused after a thread exits belongs to
/// a thread that can no longer use the socket).
@inline(__always)
func currentThreadID() -> UInt {
    #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
    #else
        UInt(pthread_self())
    #endif
}

/// Starts `body` on a new detached OS thread.
///
/// ZeroMQ loops block in `zmq_poll`/`zmq_msg_recv`, so they must never run on a
/// Swift concurrency pool thread (docs/architecture.md); this gives them their own.
func startDetachedThread(_ body: @escaping @Sendable () -> Void) throws(ZeroMQError) {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    #if canImport(Darwin)
        var thread: pthread_t? = nil
    #else
        var thread = pthread_t()
    #endif
    let rc = pthread_create(
        &thread, nil,
        { raw in
            #if canImport(Darwin)
                let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
            #else
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            #endif
            box.body()
            return nil
        }, context)
    guard rc == 0 else {
        Unmanaged<Box>.fromOpaque(context).release()
        throw ZeroMQError(code: rc, call: "pthread_create")
    }
    #if canImport(Darwin)
        pthread_detach(thread!)
    #else
        pthread_detach(thread)
    #endif
}
